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

package apiserver

import (
	"strings"

	"k8s.io/apiserver/pkg/server/healthz"
)

// withoutEtcdChecks drops the etcd checks from a server's /livez checks.
// k8s.io/apiserver adds its etcd check to /livez as well as to /readyz and
// /healthz, so a kubelet would restart every replica of a server that is
// only waiting for etcd, which a restart does not bring back; and a server
// restarted meanwhile fails to start while etcd is away. /readyz keeps the
// checks: a replica that cannot reach etcd takes no traffic, and comes back
// by itself once etcd answers.
func withoutEtcdChecks(checks []healthz.HealthChecker) []healthz.HealthChecker {
	var kept []healthz.HealthChecker
	for _, check := range checks {
		if check.Name() == "etcd" || isEtcdOverrideCheck(check.Name()) {
			continue
		}
		kept = append(kept, check)
	}
	return kept
}

func isEtcdOverrideCheck(name string) bool {
	return strings.HasPrefix(name, "etcd-override-") && !strings.HasSuffix(name, "-readiness")
}
