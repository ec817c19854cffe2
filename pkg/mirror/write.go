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

package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	ourcorev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
)

// ErrSharedStore means that our store already holds kube-apiserver's own
// event (same uid and resourceVersion): kube-apiserver keeps its events in
// our etcd (offload mode, --etcd-servers-overrides=/events#...), and
// mirroring would copy every event onto itself.
var ErrSharedStore = errors.New("kube-apiserver stores its events in this server's etcd " +
	"(offload mode, --etcd-servers-overrides=/events#...): there is nothing to mirror, and mirroring would rewrite every event onto itself; " +
	"run with --mirror=false (or --events-shared-with-kube-apiserver)")

// Sync upserts one upstream event into the store: create when absent,
// update otherwise, nothing when the stored event already mirrors this
// upstream version. It reports whether it wrote. A conflict (another
// writer got in between) is returned like any failed write, for the
// caller to retry.
func (m *Mirror) Sync(ctx context.Context, upstream *corev1.Event) (wrote bool, err error) {
	ctx = eventregistry.InternalWriteContext(ctx, upstream.Namespace, ourcorev1.SchemeGroupVersion)
	obj, err := m.store.Get(ctx, upstream.Name, &metav1.GetOptions{})
	var existing *core.Event
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, err
	default:
		existing = obj.(*core.Event)
		if existing.UID == upstream.UID {
			return false, ErrSharedStore
		}
		if Unchanged(existing, upstream) {
			return false, nil
		}
	}

	event, err := Convert(m.decoder, upstream)
	if err != nil {
		return false, apierrors.NewBadRequest(err.Error())
	}
	if err := m.limiter.Wait(ctx); err != nil {
		return false, err
	}
	operation := OperationCreate
	if existing == nil {
		_, err = m.store.Create(ctx, event, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	} else {
		operation = OperationUpdate
		event.ResourceVersion = existing.ResourceVersion
		event.UID = existing.UID
		event.CreationTimestamp = existing.CreationTimestamp
		_, _, err = m.store.Update(ctx, event.Name, rest.DefaultUpdatedObjectInfo(event),
			rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	}
	if err != nil {
		return false, err
	}
	writesTotal.WithLabelValues(operation).Inc()
	return true, nil
}

// Unchanged tells whether stored is the mirror of upstream at its current
// resourceVersion, so that writing it again would change nothing.
func Unchanged(stored *core.Event, upstream *corev1.Event) bool {
	return stored.Labels[LabelMirroredFrom] == SourceKubeAPIServer &&
		stored.Annotations[AnnotationUID] == string(upstream.UID) &&
		stored.Annotations[AnnotationResourceVersion] == upstream.ResourceVersion
}

// Convert turns an upstream k8s.io/api core/v1 Event into the internal
// Event the mirror stores: labeled, annotated with its upstream identity,
// and without the server-owned metadata of kube-apiserver (uid,
// resourceVersion, creation time, managed fields), which our store sets.
//
// It goes through JSON and the server's own core/v1 decoding (defaulting
// and conversion to internal), the path a core/v1 write to this server
// takes: our core/v1 type has the JSON names of k8s.io/api's, so nothing
// is copied field by field and a field added to both is carried over
// without a change here.
func Convert(decoder runtime.Decoder, upstream *corev1.Event) (*core.Event, error) {
	versioned := upstream.DeepCopy()
	versioned.APIVersion, versioned.Kind = "v1", "Event"
	data, err := json.Marshal(versioned)
	if err != nil {
		return nil, err
	}
	obj, err := runtime.Decode(decoder, data)
	if err != nil {
		return nil, fmt.Errorf("decoding upstream event %s/%s: %w", upstream.Namespace, upstream.Name, err)
	}
	event, ok := obj.(*core.Event)
	if !ok {
		return nil, errors.New("decoding an upstream event did not give an internal Event")
	}
	event.TypeMeta = metav1.TypeMeta{}
	event.ObjectMeta = metav1.ObjectMeta{
		Name:        event.Name,
		Namespace:   event.Namespace,
		Labels:      event.Labels,
		Annotations: event.Annotations,
	}
	if event.Labels == nil {
		event.Labels = map[string]string{}
	}
	event.Labels[LabelMirroredFrom] = SourceKubeAPIServer
	if event.Annotations == nil {
		event.Annotations = map[string]string{}
	}
	event.Annotations[AnnotationUID] = string(upstream.UID)
	event.Annotations[AnnotationResourceVersion] = upstream.ResourceVersion
	return event, nil
}
