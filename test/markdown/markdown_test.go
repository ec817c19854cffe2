/*
Copyright The events-apiserver Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package markdown

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCommands(t *testing.T) {
	const heading = "## Try it"
	for _, tc := range []struct {
		name     string
		markdown string
		want     []string
		wantErr  bool
	}{{
		name: "lines, comments, continuations and here-documents",
		markdown: "# x\n\n## Before\n```sh\nkubectl before\n```\n" + heading + "\ntext\n```sh\n" +
			"export KUBECONFIG=$PWD/kubeconfig\n\n# a comment\nkubectl get events   # trailing comment\n" +
			"kubectl get \\\n  events -o wide\n" +
			"kubectl create -f - <<'EOF'\nkind: Event\n# not a comment here\nEOF\n```\n" +
			"```console\n$ kubectl not-replayed\n```\n### Sub\n```sh\nNOW=$(date)\n```\n" +
			"## After\n```sh\nkubectl after\n```\n",
		want: []string{
			"export KUBECONFIG=$PWD/kubeconfig",
			"kubectl get events   # trailing comment",
			"kubectl get \\\n  events -o wide",
			"kubectl create -f - <<'EOF'\nkind: Event\n# not a comment here\nEOF",
			"NOW=$(date)",
		},
	}, {
		name:     "no such heading",
		markdown: "## Other\n```sh\nkubectl get events\n```\n",
		wantErr:  true,
	}, {
		name:     "unterminated here-document",
		markdown: heading + "\n```sh\nkubectl create -f - <<EOF\nkind: Event\n```\n",
		wantErr:  true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Commands(tc.markdown, heading)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Commands: error %v, want an error: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Commands (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConsoleTranscript(t *testing.T) {
	const heading = "## Refusals"
	for _, tc := range []struct {
		name     string
		markdown string
		want     []Step
		wantErr  bool
	}{{
		name: "commands and their output, console blocks only",
		markdown: "## Before\n```console\n$ kubectl before\n```\n" + heading + "\n```console\n" +
			"$ kubectl patch a\nThe Event \"a\" is invalid:\n  more\n\n$ kubectl patch b\n$ kubectl get c\nc\n```\n" +
			"```yaml\n$ not: a command\n```\n## After\n```console\n$ kubectl after\n```\n",
		want: []Step{
			{Command: "kubectl patch a", Output: "The Event \"a\" is invalid:\n  more"},
			{Command: "kubectl patch b"},
			{Command: "kubectl get c", Output: "c"},
		},
	}, {
		name:     "the heading on the first line",
		markdown: heading + "\n```console\n$ kubectl get d\nd\n```\n",
		want:     []Step{{Command: "kubectl get d", Output: "d"}},
	}, {
		name:     "output without a command",
		markdown: heading + "\n```console\noutput\n```\n",
		wantErr:  true,
	}, {
		name:     "no such heading",
		markdown: "## Other\n",
		wantErr:  true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Transcript(tc.markdown, heading)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Transcript: error %v, want an error: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Transcript (-want +got):\n%s", diff)
			}
		})
	}
}
