package series

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	ourv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestPluginDisabledByFlag checks that --disable-admission-plugins turns the
// series rules off: an invalid transition is accepted, and an empty state is
// stored as it came.
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

	// Refused with the plugin on (see invalidTransitions), and through kubectl too.
	patched, err := c.upstream.EventsV1().Events(namespace).Patch(ctx, "no-rules", types.MergePatchType, []byte(`{"series":{"count":3}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("lowering series.count with the plugin disabled: %v", err)
	}
	if patched.Series.Count != 3 {
		t.Errorf("series.count %d after the patch, want 3", patched.Series.Count)
	}
	if _, stderr, err := framework.Kubectl(t, srv.KubeconfigPath, "patch", "events.v1.events.k8s.io", "no-rules", "-n", namespace, "--type=merge",
		"-p", `{"series":{"count":2}}`); err != nil {
		t.Fatalf("kubectl lowering series.count with the plugin disabled: %v: %s", err, stderr)
	}
	stored, err := c.ours.EventsV1().Events(namespace).Get(ctx, "no-rules", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Series.Count != 2 || stored.Series.State != "" {
		t.Errorf("stored series %+v, want count 2 and no state", *stored.Series)
	}
}
