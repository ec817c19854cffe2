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

package eventratelimit

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
)

// reinvokingMutator stands for a mutating webhook with reinvocationPolicy
// IfNeeded after another plugin changed the object: on its first call it
// changes the event and asks for the chain to be reinvoked, as the webhook
// dispatcher does.
type reinvokingMutator struct {
	*admission.Handler
	calls int
}

func (m *reinvokingMutator) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	m.calls++
	if !a.GetReinvocationContext().IsReinvoke() {
		a.GetObject().(*core.Event).Message += " (mutated)"
		a.GetReinvocationContext().SetShouldReinvoke()
	}
	return nil
}

// refuser is a validating step that refuses the writes whose message says so.
type refuser struct{ *admission.Handler }

var errRefused = errors.New("refused")

func (refuser) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetObject().(*core.Event).Message == "refuse (mutated)" {
		return errRefused
	}
	return nil
}

// TestReinvokedChainChargesOncePerWrite builds the chain as the server
// does (admission.Plugins.NewFromPlugins, which wraps it in the handler
// that reinvokes the mutating plugins when a webhook asks for it) and
// counts the writes the limit lets through: exactly its burst, however
// often the mutating phase ran, and not counting the writes an earlier
// validating step refused.
func TestReinvokedChainChargesOncePerWrite(t *testing.T) {
	const burst = 5
	mutator := &reinvokingMutator{Handler: admission.NewHandler(admission.Create, admission.Update)}
	clk := testingclock.NewFakePassiveClock(time.Now())
	plugins := admission.NewPlugins()
	plugins.Register("Mutator", func(io.Reader) (admission.Interface, error) { return mutator, nil })
	plugins.Register("Refuser", func(io.Reader) (admission.Interface, error) {
		return refuser{admission.NewHandler(admission.Create, admission.Update)}, nil
	})
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return NewPlugin([]eventpolicy.Limit{{Type: eventpolicy.Reporter, QPS: 1, Burst: burst, CacheSize: 10}}, clk)
	})
	chain, err := plugins.NewFromPlugins([]string{"Mutator", "Refuser", PluginName}, emptyConfig{}, admission.PluginInitializers{}, nil)
	if err != nil {
		t.Fatal(err)
	}

	// admit runs the chain on one write as the store does: the mutating
	// phase, then the validating one.
	admit := func(message string) error {
		a := base.attributes()
		a.GetObject().(*core.Event).Message = message
		if err := chain.(admission.MutationInterface).Admit(context.Background(), a, nil); err != nil {
			return err
		}
		return chain.(admission.ValidationInterface).Validate(context.Background(), a, nil)
	}
	var got []string
	for _, message := range []string{"refuse", "refuse", "ok", "ok", "refuse", "ok", "ok", "ok", "ok", "refuse", "ok"} {
		switch err := admit(message); {
		case err == nil:
			got = append(got, "admitted")
		case errors.Is(err, errRefused):
			got = append(got, "refused")
		case apierrors.IsTooManyRequests(err):
			got = append(got, "429")
		default:
			t.Fatalf("write %q: %v", message, err)
		}
	}
	want := []string{"refused", "refused", "admitted", "admitted", "refused", "admitted", "admitted", "admitted", "429", "refused", "429"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("writes with a burst of %d (-want +got):\n%s", burst, diff)
	}
	if mutator.calls != 2*len(want) {
		t.Errorf("mutating plugin called %d times for %d writes, want each write reinvoked once", mutator.calls, len(want))
	}
}

// emptyConfig gives every plugin no configuration.
type emptyConfig struct{}

func (emptyConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }
