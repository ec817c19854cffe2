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

package eventseries

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/admission/internal/eventwrite"
	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/validation"
)

// PluginName is the name under which the plugin registers, for
// --enable-admission-plugins, --disable-admission-plugins and the
// plugins[].name of an admission configuration file.
const PluginName = "EventSeries"

// Register registers the EventSeries plugin with the series thresholds of
// the policy that policy returns when the admission chain is built: the
// server's, decoded once, from the plugin's entry in the admission
// configuration file among others, which the factory therefore ignores.
func Register(plugins *admission.Plugins, policy func() (*eventpolicy.EventPolicy, error)) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		p, err := policy()
		if err != nil {
			return nil, err
		}
		return NewPlugin(p.Series, clock.RealClock{})
	})
}

// Plugin enforces event series semantics on creates and updates of events
// in the core group and in events.k8s.io.
type Plugin struct {
	*admission.Handler
	thresholds eventpolicy.Series
	clock      clock.PassiveClock
}

var (
	_ admission.MutationInterface   = &Plugin{}
	_ admission.ValidationInterface = &Plugin{}
)

// NewPlugin returns the plugin with the given thresholds, reading the time
// from clk (clock.RealClock{} outside tests).
func NewPlugin(thresholds eventpolicy.Series, clk clock.PassiveClock) (*Plugin, error) {
	if errs := validation.ValidateSeries(thresholds, field.NewPath("series")); len(errs) > 0 {
		return nil, fmt.Errorf("invalid %s thresholds: %w", PluginName, errs.ToAggregate())
	}
	return &Plugin{
		Handler:    admission.NewHandler(admission.Create, admission.Update),
		thresholds: thresholds,
		clock:      clk,
	}, nil
}

// Admit defaults the state of a series the client left alone: Ongoing, or
// Finished when the write is the late final write of a series.
func (p *Plugin) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	newEvent, oldEvent, ok, err := eventsOf(a)
	if !ok || err != nil {
		return err
	}
	defaultState(newEvent, oldEvent, p.clock.Now(), p.thresholds)
	return nil
}

// Validate refuses with 422 Invalid a series made Unknown while its
// reporter may still be alive, and, with the policy's strict clock, a series
// last observed before its eventTime. The rules that do not depend on the clock
// are validation's, which every writer meets.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	newEvent, oldEvent, ok, err := eventsOf(a)
	if !ok || err != nil {
		return err
	}
	errs := validateStrictClock(newEvent, oldEvent, p.thresholds)
	errs = append(errs, validateUnknown(newEvent, oldEvent, p.clock.Now(), p.thresholds)...)
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(), errs)
}

// eventsOf returns the new and (on update) old event of a request the plugin
// handles; ok is false for requests it ignores.
func eventsOf(a admission.Attributes) (newEvent, oldEvent *core.Event, ok bool, err error) {
	if !eventwrite.Is(a) {
		return nil, nil, false, nil
	}
	newEvent, isEvent := a.GetObject().(*core.Event)
	if !isEvent {
		return nil, nil, false, apierrors.NewBadRequest(fmt.Sprintf("%s admission: expected an Event, got %T", PluginName, a.GetObject()))
	}
	if a.GetOperation() == admission.Update && a.GetOldObject() != nil {
		oldEvent, isEvent = a.GetOldObject().(*core.Event)
		if !isEvent {
			return nil, nil, false, apierrors.NewBadRequest(fmt.Sprintf("%s admission: expected the old object to be an Event, got %T", PluginName, a.GetOldObject()))
		}
	}
	return newEvent, oldEvent, true, nil
}
