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

package history

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/core/install"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"github.com/kube-events/events-apiserver/pkg/archive"
)

// TestRefusedBeforeTheStore checks the answers given before the store or
// the archive is asked anything: 429 with a Retry-After when every slot
// for history lists is taken, 400 for a watch or a delete-collection with
// history terms.
func TestRefusedBeforeTheStore(t *testing.T) {
	full := &slots{byUser: map[string]int{}} // no slot at all
	// No store and no archive: reaching either would panic.
	r := &REST{clock: clocktesting.NewFakePassiveClock(now), inFlight: full}
	history := &metainternalversion.ListOptions{FieldSelector: fields.ParseSelectorOrDie("involvedObject.name=web-0,history.since=1h")}

	_, err := r.List(context.Background(), history)
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("list with every slot taken: %v, want 429", err)
	}
	if seconds, ok := apierrors.SuggestsClientDelay(err); !ok || seconds != retryAfterSeconds {
		t.Errorf("Retry-After %d (%v), want %d", seconds, ok, retryAfterSeconds)
	}

	for name, call := range map[string]func() error{
		"watch": func() error { _, err := r.Watch(context.Background(), history); return err },
		"delete-collection": func() error {
			_, err := r.DeleteCollection(context.Background(), nil, nil, history)
			return err
		},
		"list with a bad term": func() error {
			_, err := r.List(context.Background(), &metainternalversion.ListOptions{FieldSelector: fields.ParseSelectorOrDie("history.since=soon")})
			return err
		},
	} {
		err := call()
		status, ok := err.(apierrors.APIStatus)
		if !ok || status.Status().Code != http.StatusBadRequest || !strings.Contains(status.Status().Message, "history.since") {
			t.Errorf("%s: %v, want a 400 naming history.since", name, err)
		}
	}
}

// TestDecodeRestoresIdentity: a state archived without its name, namespace
// and UID (as the archiver writes them) and one archived with them (as it
// wrote them before) read back alike, with the record's resourceVersion.
func TestDecodeRestoresIdentity(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	codecs := serializer.NewCodecFactory(scheme)
	codec := codecs.LegacyCodec(corev1.SchemeGroupVersion)
	full := &core.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web-1.17a3", Namespace: "shop", UID: "uid-e"},
		InvolvedObject: core.ObjectReference{Kind: "Pod", Name: "web-1", UID: "uid-p"},
		Reason:         "BackOff", Count: 2,
	}
	stripped := full.DeepCopy()
	stripped.Name, stripped.Namespace, stripped.UID = "", "", ""
	want := full.DeepCopy()
	want.ResourceVersion = "42"
	r := &REST{decoder: codecs.UniversalDecoder()}
	for name, object := range map[string]*core.Event{"without identity": stripped, "with identity": full} {
		t.Run(name, func(t *testing.T) {
			data, err := runtime.Encode(codec, object)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.decode(archive.Record{UID: "uid-e", Namespace: "shop", Name: "web-1.17a3", ResourceVersion: "42", Object: data})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
}
