package eventseries

import (
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-events/events-apiserver/pkg/admission/pluginconfig"
)

// The apiVersion and kind of the plugin's configuration, as it appears in the
// plugins[].configuration of an AdmissionConfiguration file or in a file that
// plugins[].path points at.
const (
	ConfigurationAPIVersion = "eventseries.admission.events.k8s.io/v1alpha1"
	ConfigurationKind       = "EventSeriesConfiguration"
)

// Defaults match client-go's tools/events recorder (v0.37): it finishes a
// series once it has seen no occurrence for 6 minutes (finishTime) and
// re-sends every ongoing series every 30 minutes (refreshTime). The slack
// covers a heartbeat that is late by up to one finish cycle.
const (
	DefaultFinishAfter       = 6 * time.Minute
	DefaultHeartbeatInterval = 30 * time.Minute
	DefaultHeartbeatSlack    = 6 * time.Minute
)

// Configuration is the EventSeries admission configuration file format.
// Unset durations take their defaults; set ones must be positive.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`

	// FinishAfter: a write whose series.lastObservedTime is older than this
	// when it arrives, and that does not set series.state itself, finishes
	// the series.
	FinishAfter *metav1.Duration `json:"finishAfter,omitempty"`
	// HeartbeatInterval is how often reporters re-send an ongoing series.
	HeartbeatInterval *metav1.Duration `json:"heartbeatInterval,omitempty"`
	// HeartbeatSlack is how late a heartbeat may be before the series is
	// considered abandoned: an Ongoing series last observed more than
	// heartbeatInterval+heartbeatSlack ago becomes Unknown.
	HeartbeatSlack *metav1.Duration `json:"heartbeatSlack,omitempty"`
	// SweepInterval is how often the server's sweeper looks for abandoned
	// series, so an abandoned series is marked Unknown at most this long
	// after it crossed heartbeatInterval+heartbeatSlack. The admission
	// plugin itself does not use it.
	SweepInterval *metav1.Duration `json:"sweepInterval,omitempty"`
}

// Thresholds are the resolved durations the plugin and the sweeper work with.
type Thresholds struct {
	FinishAfter       time.Duration
	HeartbeatInterval time.Duration
	HeartbeatSlack    time.Duration
	// SweepInterval is how often the server's sweeper runs; zero means
	// its default (pkg/registry/event/series).
	SweepInterval time.Duration
}

// DefaultThresholds are the thresholds when no configuration is given.
func DefaultThresholds() Thresholds {
	return Thresholds{
		FinishAfter:       DefaultFinishAfter,
		HeartbeatInterval: DefaultHeartbeatInterval,
		HeartbeatSlack:    DefaultHeartbeatSlack,
	}
}

// AbandonedAfter is how long an Ongoing series may go without being
// observed before the sweeper marks it Unknown.
func (t Thresholds) AbandonedAfter() time.Duration {
	return t.HeartbeatInterval + t.HeartbeatSlack
}

// Validate checks that every threshold is positive, and the sweep interval
// positive or zero (the default).
func (t Thresholds) Validate() field.ErrorList {
	var errs field.ErrorList
	if t.SweepInterval < 0 {
		errs = append(errs, field.Invalid(field.NewPath("sweepInterval"), t.SweepInterval.String(), "must be a positive duration"))
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{
		{"finishAfter", t.FinishAfter},
		{"heartbeatInterval", t.HeartbeatInterval},
		{"heartbeatSlack", t.HeartbeatSlack},
	} {
		if d.value <= 0 {
			errs = append(errs, field.Invalid(field.NewPath(d.name), d.value.String(), "must be a positive duration"))
		}
	}
	return errs
}

// LoadConfiguration reads an EventSeriesConfiguration (YAML or JSON) and
// returns its validated thresholds. A nil or empty reader yields the
// defaults. Unknown or duplicate fields, a wrong apiVersion or kind, and
// durations that are not positive are errors.
func LoadConfiguration(config io.Reader) (Thresholds, error) {
	var cfg Configuration
	found, err := pluginconfig.Decode(config, ConfigurationAPIVersion, ConfigurationKind, &cfg, &cfg.TypeMeta)
	if err != nil {
		return Thresholds{}, err
	}
	if !found {
		return DefaultThresholds(), nil
	}
	thresholds := DefaultThresholds()
	if cfg.FinishAfter != nil {
		thresholds.FinishAfter = cfg.FinishAfter.Duration
	}
	if cfg.HeartbeatInterval != nil {
		thresholds.HeartbeatInterval = cfg.HeartbeatInterval.Duration
	}
	if cfg.HeartbeatSlack != nil {
		thresholds.HeartbeatSlack = cfg.HeartbeatSlack.Duration
	}
	errs := thresholds.Validate()
	if cfg.SweepInterval != nil {
		thresholds.SweepInterval = cfg.SweepInterval.Duration
		if thresholds.SweepInterval <= 0 {
			errs = append(errs, field.Invalid(field.NewPath("sweepInterval"), thresholds.SweepInterval.String(), "must be a positive duration"))
		}
	}
	if len(errs) > 0 {
		return Thresholds{}, fmt.Errorf("invalid %s: %w", ConfigurationKind, errs.ToAggregate())
	}
	return thresholds, nil
}

// LoadThresholdsFromAdmissionConfigFile reads the EventSeries plugin's
// thresholds from an --admission-control-config-file (an
// apiserver.config.k8s.io AdmissionConfiguration), the same way the admission
// chain hands them to the plugin. The server uses it to give the sweeper the
// thresholds the plugin enforces. An empty path, or a file without an
// EventSeries entry, yields the defaults.
func LoadThresholdsFromAdmissionConfigFile(path string) (Thresholds, error) {
	config, err := pluginconfig.ForPlugin(path, PluginName)
	if err != nil {
		return Thresholds{}, err
	}
	return LoadConfiguration(config)
}
