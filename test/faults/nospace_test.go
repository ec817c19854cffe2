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

package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Settings of the NOSPACE fault: a small etcd quota, filled by events
// carrying 200 KiB of annotations, which expire after noSpaceTTL; the
// server's etcd maintenance looks every two seconds.
const (
	noSpaceQuota   = "--quota-backend-bytes=16777216"
	noSpaceTTL     = 20 * time.Second
	noSpacePadding = 200 << 10
)

// noSpace fills etcd to its quota until it raises NOSPACE. The steady
// load's creates are then refused; the filler events expire with their
// TTL, and the server's own housekeeping (pkg/etcdmaint) compacts,
// defragments and disarms the alarm. Everything acknowledged up to the
// alarm is verified while etcd is out of space (it has expired by the
// time etcd takes writes again); what is acknowledged afterwards at the
// end, as in every fault. Both verifications count only the events whose
// TTL cannot have passed yet (verifyTTL): on a slow machine the filling
// takes longer than the TTL, and the first events of the load expire, as
// they should, before they are read.
func noSpace() faultCase {
	return faultCase{
		name: "4. etcd NOSPACE (16 MiB quota)",
		note: "healed by the server's compaction, defragmentation and alarm disarm",
		start: func(t *testing.T) *env {
			etcd := startEtcd(t, 1, noSpaceQuota)
			return &env{
				etcd: etcd,
				server: startServer(t, "--etcd-servers="+endpoints(etcd),
					"--event-ttl="+noSpaceTTL.String(),
					"--etcd-maintenance-interval=2s"),
				namespace: namespaceFor(t),
				ttl:       noSpaceTTL,
			}
		},
		inject: func(t *testing.T, e *env, l *load) (time.Time, map[string]written) {
			filler := startLoad(t, e.server.RestConfig, e.namespace+"-filler", []reporterSpec{{
				version: eventsV1, padding: noSpacePadding,
				until: func(err error) bool { return strings.Contains(err.Error(), "database space exceeded") },
			}})
			filler.done.Wait()
			end := time.Now()
			alarms, err := e.etcd.Client.AlarmList(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(alarms.Alarms) == 0 {
				t.Fatalf("etcd refused a write for lack of space but raised no alarm")
			}
			// The steady load is refused too.
			errorsBefore := l.errorCount()
			err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				return l.errorCount() >= errorsBefore+6, nil
			})
			if err != nil {
				t.Fatalf("the steady load's creates were not refused under NOSPACE")
			}
			verified, _, _, _ := l.snapshot()
			fillerAcked, fillerErrs, _, _ := filler.snapshot()
			lost, expired := verifyTTL(t, e.server.RestConfig, e.namespace, verified, noSpaceTTL)
			fillerLost, fillerExpired := verifyTTL(t, e.server.RestConfig, e.namespace+"-filler", fillerAcked, noSpaceTTL)
			for _, lost := range [][]string{lost, fillerLost} {
				if len(lost) > 0 {
					t.Errorf("under NOSPACE, %d acknowledged creates are not readable:\n%s", len(lost), strings.Join(first(lost, 20), "\n"))
				}
			}
			if expired == len(verified) {
				t.Errorf("under NOSPACE, all %d steady creates acknowledged before had expired when read: nothing verified", len(verified))
			}
			t.Logf("NOSPACE after %d filler events of %d KiB (filler errors: %s, %d expired before they were read); "+
				"%d steady creates acknowledged before, %d expired before they were read, the others readable",
				len(fillerAcked), noSpacePadding>>10, formatCodes(fillerErrs), fillerExpired, len(verified), expired)
			e.expired += expired
			return end, verified
		},
	}
}
