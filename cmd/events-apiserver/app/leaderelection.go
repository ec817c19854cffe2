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

	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/pkg/leaderelection"
)

// LeaderElectionOptions are the flags of the election that picks the one
// replica running the server's controllers (see pkg/leaderelection). Their
// names and meaning follow Kubernetes components' --leader-elect flags; the
// election itself is held in the server's etcd, not in a Lease object.
type LeaderElectionOptions struct {
	// LeaderElect runs the controllers only while this replica is elected;
	// false runs them unconditionally, for a single replica.
	LeaderElect bool
	// LeaseDuration is how long a leader that died without resigning keeps
	// the work from the others (the etcd session TTL).
	LeaseDuration time.Duration
	// Identity names this replica in the election; empty means the host
	// name and a UUID.
	Identity string
}

func newLeaderElectionOptions() LeaderElectionOptions {
	return LeaderElectionOptions{LeaderElect: true, LeaseDuration: leaderelection.DefaultTTL}
}

func (l *LeaderElectionOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&l.LeaderElect, "leader-elect", l.LeaderElect, "Run the controllers (series state, sweeper, mirror) only on the replica elected through etcd, "+
		"so that with several replicas exactly one does the work. false runs them on this replica whatever the others do: for a single replica only.")
	fs.DurationVar(&l.LeaseDuration, "leader-elect-lease-duration", l.LeaseDuration, "How long a leader that stopped without resigning "+
		"(killed, partitioned) keeps the controllers from the other replicas: the TTL of its etcd lease, whole seconds, at least 1s. "+
		"A leader that stops cleanly hands over at once.")
	fs.StringVar(&l.Identity, "leader-elect-identity", l.Identity, "This replica's name in the election, stored as the value of its election key; "+
		"defaults to the host name and a UUID.")
}

func (l *LeaderElectionOptions) validate() []error {
	if !l.LeaderElect {
		return nil
	}
	if l.LeaseDuration < time.Second || l.LeaseDuration%time.Second != 0 {
		return []error{fmt.Errorf("--leader-elect-lease-duration must be whole seconds, at least 1s, got %v", l.LeaseDuration)}
	}
	return nil
}

// config is the election's configuration for pkg/apiserver.
func (l *LeaderElectionOptions) config() apiserver.LeaderElectionConfig {
	return apiserver.LeaderElectionConfig{Disabled: !l.LeaderElect, Identity: l.Identity, TTL: l.LeaseDuration}
}
