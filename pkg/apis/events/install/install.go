// Package install registers events.k8s.io (internal, v1beta1, v1) in a scheme.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/kube-events/events-apiserver/pkg/apis/events"
	eventsv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	eventsv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
)

// Install registers the events.k8s.io group. v1beta1 comes first in priority:
// it is the version this server exists to serve (see artifacts/ for the
// APIService that makes it the group's preferred version in a cluster).
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(events.AddToScheme(scheme))
	utilruntime.Must(eventsv1beta1.AddToScheme(scheme))
	utilruntime.Must(eventsv1.AddToScheme(scheme))
	utilruntime.Must(scheme.SetVersionPriority(eventsv1beta1.SchemeGroupVersion, eventsv1.SchemeGroupVersion))
}
