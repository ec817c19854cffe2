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
