package v1

import "k8s.io/apimachinery/pkg/runtime"

// addDefaultingFuncs registers the generated defaulters. An empty
// series.state is deliberately not defaulted here: defaulters also run when
// objects are decoded from storage, and series admission must see whether
// the client set the state itself before it defaults it to Ongoing.
func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}
