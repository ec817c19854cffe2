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

	"github.com/kube-events/events-apiserver/pkg/etcdmaint"
)

// EtcdMaintenanceOptions configure the server's etcd housekeeping (see
// pkg/etcdmaint): defragmentation and the NOSPACE alarm.
type EtcdMaintenanceOptions struct {
	// Interval is how often etcd is looked at; 0 turns the housekeeping off.
	Interval time.Duration
	// HighWater is the fraction of etcd's quota the database file must be
	// back under before the NOSPACE alarm is disarmed.
	HighWater float64
}

func newEtcdMaintenanceOptions() EtcdMaintenanceOptions {
	return EtcdMaintenanceOptions{Interval: etcdmaint.DefaultInterval, HighWater: etcdmaint.DefaultHighWater}
}

func (e *EtcdMaintenanceOptions) addFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&e.Interval, "etcd-maintenance-interval", e.Interval, "How often the server checks etcd's NOSPACE alarm and database size; "+
		"out of space, it compacts, defragments every member (one at a time, the leader last) and disarms the alarm once the database is below --etcd-maintenance-high-water of the quota. "+
		"0 turns this off, for an etcd maintained by someone else.")
	fs.Float64Var(&e.HighWater, "etcd-maintenance-high-water", e.HighWater, "Fraction of etcd's --quota-backend-bytes above which a mostly free database is defragmented, "+
		"and under which the database must be before the NOSPACE alarm is disarmed; in (0, 1].")
}

func (e *EtcdMaintenanceOptions) validate() []error {
	var errs []error
	if e.Interval < 0 {
		errs = append(errs, fmt.Errorf("--etcd-maintenance-interval must not be negative, got %v", e.Interval))
	}
	if e.HighWater <= 0 || e.HighWater > 1 {
		errs = append(errs, fmt.Errorf("--etcd-maintenance-high-water must be in (0, 1], got %v", e.HighWater))
	}
	return errs
}

// config is the maintenance configuration, nil when turned off.
func (e *EtcdMaintenanceOptions) config() *etcdmaint.Config {
	if e.Interval == 0 {
		return nil
	}
	return &etcdmaint.Config{Interval: e.Interval, HighWater: e.HighWater}
}
