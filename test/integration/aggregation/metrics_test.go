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

package aggregation

import (
	"net/http"
	"testing"

	"k8s.io/client-go/rest"
)

// TestMetricsScrapeAnswers: /metrics, on the secure port behind delegated
// authentication and authorization, answers a scrape without credentials
// 403 (anonymous requests are on, as in kube-apiserver: the request is
// system:anonymous's, which the SubjectAccessReview refuses), one with a
// token kube-apiserver does not know 401, and one with the right 200, as
// docs/monitoring.md says.
func TestMetricsScrapeAnswers(t *testing.T) {
	cases := []struct {
		name   string
		config *rest.Config
		want   int
	}{
		{name: "no credentials", config: direct(func(*rest.Config) {}), want: http.StatusForbidden},
		{name: "invalid token", config: direct(func(cfg *rest.Config) { cfg.BearerToken = "not-a-token" }), want: http.StatusUnauthorized},
		{name: "system:masters", config: cluster.ServerConfig, want: http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			client, err := rest.HTTPClientFor(c.config)
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, c.config.Host+"/metrics", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("GET /metrics: %s, want %d", resp.Status, c.want)
			}
		})
	}
}
