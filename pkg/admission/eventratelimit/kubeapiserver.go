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
	"errors"
	"math"

	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
)

// The group version and kind of kube-apiserver's EventRateLimit plugin
// configuration (k8s.io/kubernetes plugin/pkg/admission/eventratelimit).
const (
	KubeAPIServerConfigurationAPIVersion = "eventratelimit.admission.k8s.io/v1alpha1"
	KubeAPIServerConfigurationKind       = "Configuration"
)

// KubeAPIServerConfiguration is the configuration of kube-apiserver's own
// EventRateLimit admission plugin, which limits the core/v1 event writes
// that kube-apiserver stores itself. It is the wire form of that plugin's
// v1alpha1 Configuration; the server does not import k8s.io/kubernetes.
type KubeAPIServerConfiguration struct {
	APIVersion string               `json:"apiVersion"`
	Kind       string               `json:"kind"`
	Limits     []KubeAPIServerLimit `json:"limits"`
}

// KubeAPIServerLimit is one limit of kube-apiserver's plugin.
type KubeAPIServerLimit struct {
	// Type is Server, Namespace, User or SourceAndObject.
	Type      string `json:"type"`
	QPS       int32  `json:"qps"`
	Burst     int32  `json:"burst"`
	CacheSize int32  `json:"cacheSize,omitempty"`
}

// kubeAPIServerLimitTypes are, for each limit type of the event policy,
// the nearest limit type of kube-apiserver's plugin: a kubelet or a
// controller with credentials of its own is one user, and kube-apiserver
// can only tell a reporter by its event's source within an object.
var kubeAPIServerLimitTypes = map[eventpolicy.LimitType]string{
	eventpolicy.Reporter:  "User",
	eventpolicy.Object:    "SourceAndObject",
	eventpolicy.Namespace: "Namespace",
}

// ErrNoLimits is returned for a policy without limits: kube-apiserver's
// plugin needs at least one, so leave it off.
var ErrNoLimits = errors.New("the event policy has no limits: leave kube-apiserver's EventRateLimit plugin off")

// NewKubeAPIServerConfiguration returns the configuration of
// kube-apiserver's EventRateLimit plugin that holds core/v1 writers to the
// policy's limits, in the policy's order: Reporter becomes User (per
// authenticated user, not per reporting controller and instance within it),
// Object becomes SourceAndObject (per source and involved object, so
// several reporters of one object each get its budget) and Namespace stays
// Namespace. kube-apiserver's qps is a whole number: a fractional qps is
// rounded up. Its plugin answers 429 without Retry-After, which client-go
// does not retry.
func NewKubeAPIServerConfiguration(limits []eventpolicy.Limit) (*KubeAPIServerConfiguration, error) {
	if len(limits) == 0 {
		return nil, ErrNoLimits
	}
	config := &KubeAPIServerConfiguration{
		APIVersion: KubeAPIServerConfigurationAPIVersion,
		Kind:       KubeAPIServerConfigurationKind,
	}
	for _, limit := range limits {
		config.Limits = append(config.Limits, KubeAPIServerLimit{
			Type:      kubeAPIServerLimitTypes[limit.Type],
			QPS:       int32(math.Ceil(limit.QPS)),
			Burst:     limit.Burst,
			CacheSize: limit.CacheSize,
		})
	}
	return config, nil
}
