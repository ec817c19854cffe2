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

package app

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestMirrorEnabled(t *testing.T) {
	for _, tt := range []struct {
		name      string
		args      []string
		inCluster bool
		want      bool
	}{
		{name: "auto, standalone: off"},
		{name: "auto, in cluster: on", inCluster: true, want: true},
		{name: "auto with --mirror-kubeconfig: on", args: []string{"--mirror-kubeconfig=/k"}, want: true},
		{name: "auto, delegated with --kubeconfig only: off", args: []string{"--kubeconfig=/k"}},
		{name: "auto, in cluster, offload: off", args: []string{"--events-shared-with-kube-apiserver"}, inCluster: true},
		{name: "true, standalone: on", args: []string{"--mirror=true"}, want: true},
		{name: "false, in cluster: off", args: []string{"--mirror=false"}, inCluster: true},
		{name: "false with --mirror-kubeconfig: off", args: []string{"--mirror=false", "--mirror-kubeconfig=/k"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.inCluster {
				t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
			} else {
				t.Setenv("KUBERNETES_SERVICE_HOST", "")
			}
			o := parse(t, tt.args...)
			if got := o.Mirror.enabled(); got != tt.want {
				t.Errorf("enabled = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMirrorValidate(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		wantErr string
	}{
		{args: nil},
		{args: []string{"--mirror=maybe"}, wantErr: "--mirror must be auto, true or false"},
		{args: []string{"--mirror=true", "--events-shared-with-kube-apiserver"}, wantErr: "would rewrite every event onto itself"},
		{args: []string{"--mirror-queue-size=0"}, wantErr: "--mirror-queue-size must be positive"},
		{args: []string{"--mirror-page-size=0"}, wantErr: "--mirror-page-size must be positive"},
		{args: []string{"--mirror-qps=0"}, wantErr: "--mirror-qps must be positive"},
		{args: []string{"--mirror-burst=0"}, wantErr: "--mirror-burst must be positive"},
		{args: []string{"--mirror-workers=0"}, wantErr: "--mirror-workers must be positive"},
		{args: []string{"--mirror-retry-max-delay=0s"}, wantErr: "--mirror-retry-max-delay must be positive"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o := parse(t, tt.args...)
			var joined []string
			for _, err := range o.Mirror.validate() {
				joined = append(joined, err.Error())
			}
			got := strings.Join(joined, "; ")
			if tt.wantErr == "" && got != "" || tt.wantErr != "" && !strings.Contains(got, tt.wantErr) {
				t.Errorf("errors %q, want %q", got, tt.wantErr)
			}
		})
	}
}

// The flags become the mirror's configuration, with the upstream from
// --mirror-kubeconfig; without any source, --mirror=true is an error.
func TestMirrorConfig(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := parse(t, "--mirror=true").Mirror.config(""); err == nil || !strings.Contains(err.Error(), "--mirror-kubeconfig") {
		t.Errorf("config without any source: err = %v", err)
	}
	if c, err := parse(t).Mirror.config(""); c != nil || err != nil {
		t.Errorf("config when not mirroring = %v, %v; want nil, nil", c, err)
	}

	kubeconfig := writeTestKubeconfig(t, "https://kube.example:6443")
	o := parse(t, "--mirror-kubeconfig="+kubeconfig, "--mirror-queue-size=7", "--mirror-workers=3", "--mirror-qps=50",
		"--mirror-page-size=20")
	c, err := o.Mirror.config("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Upstream.Host != "https://kube.example:6443" || c.Upstream.UserAgent != mirrorAgent {
		t.Errorf("upstream host %q, user agent %q", c.Upstream.Host, c.Upstream.UserAgent)
	}
	want := o.Mirror.Options
	want.MaxPending, want.Workers, want.QPS, want.PageSize = 7, 3, 50, 20
	if diff := cmp.Diff(want, c.Options); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
}

// writeTestKubeconfig writes a kubeconfig naming server, with a token.
func writeTestKubeconfig(t *testing.T, server string) string {
	t.Helper()
	config := clientcmdapi.NewConfig()
	config.Clusters["c"] = &clientcmdapi.Cluster{Server: server}
	config.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	config.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	config.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		t.Fatal(err)
	}
	return path
}
