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

// Package load decodes the event policy: an EventPolicy file, or the
// former admission plugin configuration kinds, which it converts. The
// server decodes the policy once and hands it to the admission plugins,
// the store and the controllers.
package load

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/install"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/v1alpha1"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/validation"
)

var (
	scheme = runtime.NewScheme()
	// strict: unknown and duplicate fields are errors.
	codecs = serializer.NewCodecFactory(scheme, serializer.EnableStrict)
)

func init() {
	install.Install(scheme)
}

// Decode reads one configuration (YAML or JSON) and returns what it sets as
// a v1alpha1 EventPolicy, not defaulted, and its kind. The configuration is
// an EventPolicy, or one of the former plugin kinds: an
// EventRateLimitConfiguration sets the limits and folding, an
// EventSeriesConfiguration the series thresholds. Empty data sets nothing
// (kind ""). Unknown or duplicate fields and other kinds are errors.
func Decode(data []byte) (*v1alpha1.EventPolicy, string, error) {
	policy := &v1alpha1.EventPolicy{}
	if len(bytes.TrimSpace(data)) == 0 {
		return policy, "", nil
	}
	obj, gvk, err := codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, "", fmt.Errorf("decoding the event policy: %w", err)
	}
	switch obj := obj.(type) {
	case *v1alpha1.EventPolicy:
		policy = obj
	case *v1alpha1.EventRateLimitConfiguration:
		obj.Policy(policy)
	case *v1alpha1.EventSeriesConfiguration:
		obj.Policy(policy)
	default:
		return nil, "", fmt.Errorf("decoding the event policy: unexpected kind %s", gvk)
	}
	return policy, gvk.Kind, nil
}

// Complete defaults, converts and validates a policy; nil is the default
// policy.
func Complete(versioned *v1alpha1.EventPolicy) (*eventpolicy.EventPolicy, error) {
	if versioned == nil {
		versioned = &v1alpha1.EventPolicy{}
	}
	versioned = versioned.DeepCopy()
	scheme.Default(versioned)
	policy := &eventpolicy.EventPolicy{}
	if err := scheme.Convert(versioned, policy, nil); err != nil {
		return nil, err
	}
	if errs := validation.ValidateEventPolicy(policy); len(errs) > 0 {
		return nil, fmt.Errorf("invalid event policy: %w", errs.ToAggregate())
	}
	return policy, nil
}

// Default is the policy when none is given.
func Default() *eventpolicy.EventPolicy {
	policy, err := Complete(nil)
	if err != nil {
		panic(err) // the defaults are valid; a test holds them to it
	}
	return policy
}
