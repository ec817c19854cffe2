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

package series

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	ourv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestPluginDisabledByFlag checks that --disable-admission-plugins turns
// off the series rules that depend on the clock and the plugin's
// configuration: an empty state is stored as it came, and a series may be
// made Unknown at once. The state machine is validation's and still holds.
func TestPluginDisabledByFlag(t *testing.T) {
	t.Parallel()
	srv := framework.StartServer(t, framework.WithServerArgs("--disable-admission-plugins=EventSeries"))
	c := clientsFor(t, srv.RestConfig)
	ctx := testContext(t)
	const namespace = "disabled"

	var event ourv1.Event
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(seriesEvent(namespace, "no-rules", fixtureCount, newSeriesTimes(), ""), &event); err != nil {
		t.Fatal(err)
	}
	created, err := c.ours.EventsV1().Events(namespace).Create(ctx, &event, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Series.State != "" {
		t.Errorf("series created without a state stored as %q, want it left empty", created.Series.State)
	}

	// Refused with the plugin on: the series was just observed.
	patched, err := c.ours.EventsV1().Events(namespace).Patch(ctx, "no-rules", types.MergePatchType, []byte(`{"series":{"state":"Unknown"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("making a fresh series Unknown with the plugin disabled: %v", err)
	}
	if patched.Series.State != "Unknown" {
		t.Errorf("series.state %q after the patch, want Unknown", patched.Series.State)
	}

	_, stderr, err := framework.Kubectl(t, srv.KubeconfigPath, "patch", "events.v1.events.k8s.io", "no-rules", "-n", namespace, "--type=merge",
		"-p", `{"series":{"count":2}}`)
	if err == nil || !strings.Contains(stderr, "series.count: Invalid value: 2: may not decrease") {
		t.Fatalf("kubectl lowering series.count with the plugin disabled: %v: %s, want it refused", err, stderr)
	}
}
