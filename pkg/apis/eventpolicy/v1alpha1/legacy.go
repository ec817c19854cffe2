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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The configuration kinds of the admission plugins from before the policy
// had a home of its own, as an admission configuration file gives them in
// plugins[].configuration (or in a file plugins[].path names). They are
// read only to be converted into an EventPolicy (Policy).

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EventRateLimitConfiguration is the EventRateLimit plugin's former
// configuration (eventratelimit.admission.events.k8s.io/v1alpha1): the
// limits and the folding of an EventPolicy.
type EventRateLimitConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// Limits: as EventPolicy's; unset takes the defaults, [] limits nothing.
	Limits []Limit `json:"limits,omitempty"`
	// Folding: as EventPolicy's.
	Folding *Folding `json:"folding,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EventSeriesConfiguration is the EventSeries plugin's former configuration
// (eventseries.admission.events.k8s.io/v1alpha1): the series thresholds of
// an EventPolicy.
type EventSeriesConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	Series `json:",inline"`
}

// Policy copies what c sets into policy.
func (c *EventRateLimitConfiguration) Policy(policy *EventPolicy) {
	if c.Limits != nil {
		policy.Limits = append([]Limit{}, c.Limits...)
	}
	if c.Folding != nil {
		policy.Folding = *c.Folding
	}
}

// Policy copies what c sets into policy.
func (c *EventSeriesConfiguration) Policy(policy *EventPolicy) {
	policy.Series = c.Series
}
