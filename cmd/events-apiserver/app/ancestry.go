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

package app

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/kube-events/events-apiserver/pkg/ancestry"
)

// AncestryOptions are the flags of the resolution of events' chains of
// controller owners (see pkg/ancestry), which the regarding.ancestor field
// selectors match.
type AncestryOptions struct {
	// Timeout bounds the resolution of one event's chain, which its first
	// write waits for; 0 turns resolution off.
	Timeout time.Duration
	// CacheSize is how many objects' controllers are kept.
	CacheSize int
}

func newAncestryOptions() AncestryOptions {
	defaults := ancestry.Options{}.Defaulted()
	return AncestryOptions{Timeout: defaults.Timeout, CacheSize: defaults.CacheSize}
}

func (a *AncestryOptions) addFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&a.Timeout, "ancestry-timeout", a.Timeout, "Longest time the first write of an event waits for the chain of controller owners "+
		"of its regarding object (its ReplicaSet and Deployment, its Job and CronJob, ...) to be read from kube-apiserver; the write never fails for it, "+
		"and a chain cut short by the time or an unreachable kube-apiserver is resolved again in the background. 0 turns the chains off. "+
		"Without a kube-apiserver (standalone) events carry no chain.")
	fs.IntVar(&a.CacheSize, "ancestry-cache-size", a.CacheSize, "How many objects' controller owners are kept in memory, so that the events of "+
		"sibling pods read their ReplicaSet and Deployment once.")
}

func (a *AncestryOptions) validate() []error {
	var errs []error
	if a.Timeout < 0 {
		errs = append(errs, fmt.Errorf("--ancestry-timeout must not be negative, got %v", a.Timeout))
	}
	if a.CacheSize <= 0 {
		errs = append(errs, fmt.Errorf("--ancestry-cache-size must be positive, got %d", a.CacheSize))
	}
	return errs
}

// resolver is the chains' resolver reading through clientConfig, the
// server's client of kube-apiserver; nil when there is none (standalone)
// or chains are off.
func (a *AncestryOptions) resolver(clientConfig *rest.Config) (*ancestry.Resolver, error) {
	if clientConfig == nil || a.Timeout == 0 {
		return nil, nil
	}
	return ancestry.NewResolver(clientConfig, ancestry.Options{Timeout: a.Timeout, CacheSize: a.CacheSize})
}
