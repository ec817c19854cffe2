// Package generated_test checks that the generated clientset, listers and
// informers build and talk to the right API paths for all three groups.
package generated_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventsv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	eventsv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
	"github.com/kube-events/events-apiserver/pkg/generated/clientset/versioned"
	"github.com/kube-events/events-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/kube-events/events-apiserver/pkg/generated/clientset/versioned/scheme"
	"github.com/kube-events/events-apiserver/pkg/generated/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

const protobufContentType = "application/vnd.kubernetes.protobuf"

// TestClientsetGetPathsAndDecoding gets one Event through each group's client
// from an HTTP server that answers like the events-apiserver would, and checks
// the request path (core/v1 lives under /api, not /apis) and that
// series.state survives decoding in both JSON and protobuf.
func TestClientsetGetPathsAndDecoding(t *testing.T) {
	// Every answer carries this series.
	const wantCount, wantState = 4, "Finished"
	tests := []struct {
		name        string
		contentType string
		wantPath    string
		answer      runtime.Object
		get         func(versioned.Interface) (count int32, state string, err error)
	}{
		{
			name:     "core/v1 json",
			wantPath: "/api/v1/namespaces/ns/events/e1",
			answer: &corev1.Event{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
				ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "ns"},
				Series:     &corev1.EventSeries{Count: 4, State: corev1.EventSeriesStateFinished},
			},
			get: func(c versioned.Interface) (int32, string, error) {
				e, err := c.CoreV1().Events("ns").Get(context.Background(), "e1", metav1.GetOptions{})
				if err != nil {
					return 0, "", err
				}
				return e.Series.Count, string(e.Series.State), nil
			},
		},
		{
			name:        "core/v1 protobuf",
			contentType: protobufContentType,
			wantPath:    "/api/v1/namespaces/ns/events/e1",
			answer: &corev1.Event{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
				ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "ns"},
				Series:     &corev1.EventSeries{Count: 4, State: corev1.EventSeriesStateFinished},
			},
			get: func(c versioned.Interface) (int32, string, error) {
				e, err := c.CoreV1().Events("ns").Get(context.Background(), "e1", metav1.GetOptions{})
				if err != nil {
					return 0, "", err
				}
				return e.Series.Count, string(e.Series.State), nil
			},
		},
		{
			name:     "events.k8s.io/v1beta1 json",
			wantPath: "/apis/events.k8s.io/v1beta1/namespaces/ns/events/e1",
			answer: &eventsv1beta1.Event{
				TypeMeta:   metav1.TypeMeta{APIVersion: "events.k8s.io/v1beta1", Kind: "Event"},
				ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "ns"},
				Series:     &eventsv1beta1.EventSeries{Count: 4, State: eventsv1beta1.EventSeriesStateFinished},
			},
			get: func(c versioned.Interface) (int32, string, error) {
				e, err := c.EventsV1beta1().Events("ns").Get(context.Background(), "e1", metav1.GetOptions{})
				if err != nil {
					return 0, "", err
				}
				return e.Series.Count, string(e.Series.State), nil
			},
		},
		{
			name:        "events.k8s.io/v1 protobuf",
			contentType: protobufContentType,
			wantPath:    "/apis/events.k8s.io/v1/namespaces/ns/events/e1",
			answer: &eventsv1.Event{
				TypeMeta:   metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
				ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "ns"},
				Series:     &eventsv1.EventSeries{Count: 4, State: eventsv1.EventSeriesStateFinished},
			},
			get: func(c versioned.Interface) (int32, string, error) {
				e, err := c.EventsV1().Events("ns").Get(context.Background(), "e1", metav1.GetOptions{})
				if err != nil {
					return 0, "", err
				}
				return e.Series.Count, string(e.Series.State), nil
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotPath string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotPath = r.URL.Path
				if tt.contentType == protobufContentType {
					w.Header().Set("Content-Type", protobufContentType)
					if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(tt.answer, w); err != nil {
						t.Errorf("encoding protobuf answer: %v", err)
					}
					return
				}
				w.Header().Set("Content-Type", "application/json")
				if err := json.NewEncoder(w).Encode(tt.answer); err != nil {
					t.Errorf("encoding JSON answer: %v", err)
				}
			}))
			defer srv.Close()

			client, err := versioned.NewForConfig(&rest.Config{
				Host:          srv.URL,
				ContentConfig: rest.ContentConfig{ContentType: tt.contentType},
			})
			if err != nil {
				t.Fatalf("NewForConfig: %v", err)
			}
			count, state, err := tt.get(client)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if gotPath != tt.wantPath {
				t.Errorf("request path = %q, want %q", gotPath, tt.wantPath)
			}
			if count != wantCount || state != wantState {
				t.Errorf("series = {count %d, state %q}, want {count %d, state %q}", count, state, wantCount, wantState)
			}
		})
	}
}

// TestInformerListerSeesCreatedEvent runs the generated informer for each
// group over the generated fake clientset and reads back through the lister.
func TestInformerListerSeesCreatedEvent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := fake.NewSimpleClientset()
	factory := externalversions.NewSharedInformerFactory(client, 0)
	coreInformer := factory.Core().V1().Events()
	v1beta1Informer := factory.Events().V1beta1().Events()
	v1Informer := factory.Events().V1().Events()
	// Informer() registers each informer with the factory; Start only runs registered ones.
	synced := []cache.InformerSynced{
		coreInformer.Informer().HasSynced,
		v1beta1Informer.Informer().HasSynced,
		v1Informer.Informer().HasSynced,
	}
	factory.Start(ctx.Done())
	defer func() {
		cancel() // stops the informers; Shutdown waits for them
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		t.Fatal("informer caches did not sync")
	}

	meta := metav1.ObjectMeta{Name: "e1", Namespace: "ns"}
	if _, err := client.CoreV1().Events("ns").Create(ctx, &corev1.Event{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create core/v1: %v", err)
	}
	if _, err := client.EventsV1beta1().Events("ns").Create(ctx, &eventsv1beta1.Event{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create events.k8s.io/v1beta1: %v", err)
	}
	if _, err := client.EventsV1().Events("ns").Create(ctx, &eventsv1.Event{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create events.k8s.io/v1: %v", err)
	}

	listers := map[string]func() error{
		"core/v1":               func() error { _, err := coreInformer.Lister().Events("ns").Get("e1"); return err },
		"events.k8s.io/v1beta1": func() error { _, err := v1beta1Informer.Lister().Events("ns").Get("e1"); return err },
		"events.k8s.io/v1":      func() error { _, err := v1Informer.Lister().Events("ns").Get("e1"); return err },
	}
	for group, get := range listers {
		for err := get(); err != nil; err = get() {
			select {
			case <-ctx.Done():
				t.Fatalf("%s lister never saw the created Event: %v", group, err)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}
