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

package framework

import (
	"os"
	"path/filepath"
)

// WriteRateLimitAdmissionConfig writes, in dir, an admission configuration
// file (--admission-control-config-file) whose EventRateLimit plugin has the
// EventRateLimitConfiguration fields of body (YAML, indented by four spaces
// under "configuration:"), and returns its path.
func WriteRateLimitAdmissionConfig(dir, body string) (string, error) {
	config := `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventRateLimit
  configuration:
    apiVersion: eventratelimit.admission.events.k8s.io/v1alpha1
    kind: EventRateLimitConfiguration
` + body
	path := filepath.Join(dir, "admission.yaml")
	return path, os.WriteFile(path, []byte(config), 0o600)
}
