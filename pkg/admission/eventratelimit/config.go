package eventratelimit

import (
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-events/events-apiserver/pkg/admission/pluginconfig"

	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
)

// The apiVersion and kind of the plugin's configuration, as it appears in the
// plugins[].configuration of an AdmissionConfiguration file or in a file that
// plugins[].path points at.
const (
	ConfigurationAPIVersion = "eventratelimit.admission.events.k8s.io/v1alpha1"
	ConfigurationKind       = "EventRateLimitConfiguration"
)

// LimitType is what a limit keeps a token bucket for.
type LimitType string

const (
	// Reporter: one bucket per reporter, that is per authenticated user and,
	// within it, per reportingController and reportingInstance (for legacy
	// events: source.component and source.host).
	Reporter LimitType = "Reporter"
	// Namespace: one bucket per namespace.
	Namespace LimitType = "Namespace"
	// Object: one bucket per regarding object (core/v1: involvedObject).
	Object LimitType = "Object"
)

// limitTypes are the known limit types, in the order they are checked: the
// most specific first, so that a reporter over its own budget is refused
// before it takes tokens from the budgets it shares with others.
var limitTypes = []LimitType{Reporter, Object, Namespace}

// Default limits: a healthy cluster's reporters (a kubelet on node restart,
// a controller reconciling hundreds of objects) stay well within them, and a
// 2-core server takes their sum; a storming reporter is held to 20 writes/s.
func defaultLimits() []Limit {
	return []Limit{
		{Type: Reporter, QPS: 20, Burst: 200, CacheSize: DefaultCacheSize},
		{Type: Object, QPS: 10, Burst: 100, CacheSize: DefaultCacheSize},
		{Type: Namespace, QPS: 200, Burst: 2000, CacheSize: DefaultCacheSize},
	}
}

// DefaultCacheSize is how many buckets of one limit type are kept by
// default; the least recently used are forgotten (and start full again).
const DefaultCacheSize = 4096

// Configuration is the EventRateLimit admission configuration file format.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`

	// Limits are the token buckets every event create and update must take a
	// token from. Unset: the defaults (Reporter 20/s burst 200, Object 10/s
	// burst 100, Namespace 200/s burst 2000). Set, it replaces them: an empty
	// list limits nothing.
	Limits *[]Limit `json:"limits,omitempty"`
	// Folding configures the folding of isomorphic creates; unset: on, with
	// the defaults.
	Folding *Folding `json:"folding,omitempty"`
}

// Limit is one limit type's token buckets.
type Limit struct {
	// Type is Reporter, Namespace or Object.
	Type LimitType `json:"type"`
	// QPS is how many writes per second a bucket refills.
	QPS float64 `json:"qps"`
	// Burst is the bucket's size: writes allowed at once after a quiet time.
	Burst int `json:"burst"`
	// CacheSize is how many buckets of this type are kept (least recently
	// used first forgotten); 0 means DefaultCacheSize.
	CacheSize int `json:"cacheSize,omitempty"`
}

// Folding is the configuration of the folding of isomorphic creates, which
// the events store does.
type Folding struct {
	// Enabled turns folding on or off; default true.
	Enabled *bool `json:"enabled,omitempty"`
	// After is how many isomorphic creates in a row are stored as events of
	// their own before the next ones are folded (default 10).
	After *int `json:"after,omitempty"`
	// Window is the longest gap between two isomorphic creates of one burst
	// (default 10m).
	Window *metav1.Duration `json:"window,omitempty"`
	// FlushInterval is how often, at most, a folded series is written to
	// etcd (default 10s).
	FlushInterval *metav1.Duration `json:"flushInterval,omitempty"`
	// CacheSize is how many series are tracked at once (default 4096).
	CacheSize *int `json:"cacheSize,omitempty"`
}

// Config is a loaded, validated configuration.
type Config struct {
	Limits []Limit
	// Fold is nil when folding is off.
	Fold *eventregistry.FoldConfig
}

// DefaultConfig is the configuration when none is given.
func DefaultConfig() Config {
	fold := eventregistry.DefaultFoldConfig()
	return Config{Limits: defaultLimits(), Fold: &fold}
}

// Validate checks the limits: known types, each at most once, positive qps
// and burst, cache sizes not negative; and the folding thresholds.
func (c Config) Validate() field.ErrorList {
	var errs field.ErrorList
	seen := map[LimitType]bool{}
	for i, limit := range c.Limits {
		path := field.NewPath("limits").Index(i)
		switch {
		case !isLimitType(limit.Type):
			errs = append(errs, field.NotSupported(path.Child("type"), limit.Type, limitTypes))
		case seen[limit.Type]:
			errs = append(errs, field.Duplicate(path.Child("type"), limit.Type))
		}
		seen[limit.Type] = true
		if limit.QPS <= 0 {
			errs = append(errs, field.Invalid(path.Child("qps"), limit.QPS, "must be positive"))
		}
		if limit.Burst <= 0 {
			errs = append(errs, field.Invalid(path.Child("burst"), limit.Burst, "must be positive"))
		}
		if limit.CacheSize < 0 {
			errs = append(errs, field.Invalid(path.Child("cacheSize"), limit.CacheSize, "must not be negative"))
		}
	}
	if c.Fold != nil {
		errs = append(errs, c.Fold.Validate(field.NewPath("folding"))...)
	}
	return errs
}

func isLimitType(t LimitType) bool {
	for _, known := range limitTypes {
		if t == known {
			return true
		}
	}
	return false
}

// LoadConfiguration reads an EventRateLimitConfiguration (YAML or JSON). A
// nil or empty reader yields the defaults. Unknown or duplicate fields, a
// wrong apiVersion or kind and invalid values are errors.
func LoadConfiguration(config io.Reader) (Config, error) {
	var file Configuration
	found, err := pluginconfig.Decode(config, ConfigurationAPIVersion, ConfigurationKind, &file, &file.TypeMeta)
	if err != nil {
		return Config{}, err
	}
	if !found {
		return DefaultConfig(), nil
	}
	cfg := DefaultConfig()
	if file.Limits != nil {
		cfg.Limits = *file.Limits
		for i := range cfg.Limits {
			if cfg.Limits[i].CacheSize == 0 {
				cfg.Limits[i].CacheSize = DefaultCacheSize
			}
		}
	}
	if f := file.Folding; f != nil {
		applyFolding(cfg.Fold, f)
		if f.Enabled != nil && !*f.Enabled {
			cfg.Fold = nil
		}
	}
	if errs := cfg.Validate(); len(errs) > 0 {
		return Config{}, fmt.Errorf("invalid %s: %w", ConfigurationKind, errs.ToAggregate())
	}
	return cfg, nil
}

func applyFolding(fold *eventregistry.FoldConfig, f *Folding) {
	if f.After != nil {
		fold.After = *f.After
	}
	if f.Window != nil {
		fold.Window = f.Window.Duration
	}
	if f.FlushInterval != nil {
		fold.FlushInterval = f.FlushInterval.Duration
	}
	if f.CacheSize != nil {
		fold.CacheSize = *f.CacheSize
	}
}

// LoadFromAdmissionConfigFile reads the plugin's configuration from an
// --admission-control-config-file (an apiserver.config.k8s.io
// AdmissionConfiguration), the same way the admission chain hands it to the
// plugin. The server uses it to configure folding, which the store does. An
// empty path, or a file without an EventRateLimit entry, yields the
// defaults.
func LoadFromAdmissionConfigFile(path string) (Config, error) {
	config, err := pluginconfig.ForPlugin(path, PluginName)
	if err != nil {
		return Config{}, err
	}
	return LoadConfiguration(config)
}

// retryAfter is a bucket's delay rounded up to whole seconds, at least 1:
// Retry-After counts whole seconds, and 0 would mean "now".
func retryAfter(delay time.Duration) int {
	seconds := int((delay + time.Second - 1) / time.Second)
	return max(seconds, 1)
}
