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

package recorder

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"
)

// eventRecorder is what NewRecorder returns: client-go's EventRecorder
// interfaces, writing through its Broadcaster.
type eventRecorder struct {
	broadcaster *Broadcaster
	scheme      *runtime.Scheme
	identity    identity
	logger      klog.Logger
}

var (
	_ events.EventRecorderLogger    = &eventRecorder{}
	_ events.AnnotatedEventRecorder = &eventRecorder{}
)

// Eventf records an occurrence; see client-go's events.EventRecorder.
func (r *eventRecorder) Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	r.eventf(regarding, related, nil, eventtype, reason, action, note, args...)
}

// AnnotatedEventf is Eventf with annotations on the event.
func (r *eventRecorder) AnnotatedEventf(regarding runtime.Object, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...interface{}) {
	r.eventf(regarding, related, annotations, eventtype, reason, action, note, args...)
}

// WithLogger returns a recorder that logs with logger.
func (r *eventRecorder) WithLogger(logger klog.Logger) events.EventRecorderLogger {
	c := *r
	c.logger = logger
	return &c
}

func (r *eventRecorder) eventf(regarding runtime.Object, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...interface{}) {
	message := fmt.Sprintf(note, args...)
	refRegarding, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		r.logger.Error(err, "Could not construct reference, will not report event", "object", regarding, "eventType", eventtype, "reason", reason, "message", message)
		return
	}
	var refRelated *corev1.ObjectReference
	if related != nil {
		if refRelated, err = reference.GetReference(r.scheme, related); err != nil {
			r.logger.V(9).Info("Could not construct reference", "object", related, "err", err)
		}
	}
	if !util.ValidateEventType(eventtype) {
		r.logger.Error(nil, "Unsupported event type", "eventType", eventtype)
		return
	}
	namespace := refRegarding.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	event := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: namespace, Annotations: annotations},
		ReportingController: r.identity.controller,
		ReportingInstance:   r.identity.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *refRegarding,
		Related:             refRelated,
		Note:                message,
		Type:                eventtype,
	}
	r.broadcaster.observe(event)
	_, _ = r.broadcaster.watchers.ActionOrDrop(watch.Added, event.DeepCopy())
}
