// Package pluginconfig reads the configuration of this server's admission
// plugins the way every one of them wants it: strictly decoded YAML or JSON
// of one apiVersion and kind, found in the standard admission configuration
// file (--admission-control-config-file).
package pluginconfig

import (
	"bytes"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	"sigs.k8s.io/yaml"
)

// Decode strictly decodes config (YAML or JSON) into into and checks its
// apiVersion and kind, which decoding wrote to typeMeta (into's own). It returns false, leaving into alone, when config is
// nil or empty: the plugin then takes its defaults. Unknown or duplicate
// fields and a wrong apiVersion or kind are errors.
func Decode(config io.Reader, apiVersion, kind string, into any, typeMeta *metav1.TypeMeta) (bool, error) {
	if config == nil {
		return false, nil
	}
	data, err := io.ReadAll(config)
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", kind, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return false, nil
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		return false, fmt.Errorf("decoding %s: %w", kind, err)
	}
	if typeMeta.APIVersion != apiVersion || typeMeta.Kind != kind {
		return false, fmt.Errorf("decoding %s: got apiVersion %q, kind %q; want apiVersion %q, kind %q",
			kind, typeMeta.APIVersion, typeMeta.Kind, apiVersion, kind)
	}
	return true, nil
}

// ForPlugin returns plugin's configuration from the admission configuration
// file at path, as the admission chain hands it to the plugin: nil when
// path is empty or the file has no entry for plugin.
func ForPlugin(path, plugin string) (io.Reader, error) {
	configScheme := runtime.NewScheme()
	apiserverinstall.Install(configScheme)
	provider, err := admission.ReadAdmissionConfiguration([]string{plugin}, path, configScheme)
	if err != nil {
		return nil, err
	}
	return provider.ConfigFor(plugin)
}
