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

// Package validation checks an event policy after defaulting.
package validation

import (
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
)

// ValidateEventPolicy checks every part of a defaulted policy.
func ValidateEventPolicy(policy *eventpolicy.EventPolicy) field.ErrorList {
	errs := ValidateLimits(policy.Limits, field.NewPath("limits"))
	errs = append(errs, ValidateFolding(policy.Folding, field.NewPath("folding"))...)
	errs = append(errs, ValidateSeries(policy.Series, field.NewPath("series"))...)
	return append(errs, ValidateExport(policy.Export, field.NewPath("export"))...)
}

// ValidateExport checks the export's selection: no empty values, a rate
// that is no bound (qps 0) or a bucket of at least one token.
func ValidateExport(export eventpolicy.Export, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name   string
		values []string
	}{
		{"namespaces", export.Namespaces}, {"excludedNamespaces", export.ExcludedNamespaces}, {"types", export.Types},
		{"reasons", export.Reasons}, {"reportingControllers", export.ReportingControllers},
	} {
		for i, v := range list.values {
			if v == "" {
				errs = append(errs, field.Required(path.Child(list.name).Index(i), "must not be empty"))
			}
		}
	}
	rate := path.Child("namespaceRate")
	if export.NamespaceRate.QPS < 0 {
		errs = append(errs, field.Invalid(rate.Child("qps"), export.NamespaceRate.QPS, "must not be negative"))
	}
	if export.NamespaceRate.QPS > 0 && export.NamespaceRate.Burst < 1 {
		errs = append(errs, field.Invalid(rate.Child("burst"), export.NamespaceRate.Burst, "must be at least 1 with a positive qps"))
	}
	return errs
}

// ValidateLimits checks the limits: known types, each at most once,
// positive qps and burst, positive cache sizes.
func ValidateLimits(limits []eventpolicy.Limit, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[eventpolicy.LimitType]bool{}
	for i, limit := range limits {
		path := path.Index(i)
		switch {
		case !isLimitType(limit.Type):
			errs = append(errs, field.NotSupported(path.Child("type"), limit.Type, eventpolicy.LimitTypes))
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
		if limit.CacheSize < 1 {
			errs = append(errs, field.Invalid(path.Child("cacheSize"), limit.CacheSize, "must be at least 1"))
		}
	}
	return errs
}

func isLimitType(t eventpolicy.LimitType) bool {
	for _, known := range eventpolicy.LimitTypes {
		if t == known {
			return true
		}
	}
	return false
}

// ValidateFolding checks that every folding threshold is positive.
func ValidateFolding(folding eventpolicy.Folding, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if folding.After < 1 {
		errs = append(errs, field.Invalid(path.Child("after"), folding.After, "must be at least 1"))
	}
	if folding.CacheSize < 1 {
		errs = append(errs, field.Invalid(path.Child("cacheSize"), folding.CacheSize, "must be at least 1"))
	}
	errs = append(errs, positive(folding.Window.Duration, path.Child("window"))...)
	return append(errs, positive(folding.FlushInterval.Duration, path.Child("flushInterval"))...)
}

// ValidateSeries checks that every series threshold is positive.
func ValidateSeries(series eventpolicy.Series, path *field.Path) field.ErrorList {
	errs := positive(series.FinishAfter.Duration, path.Child("finishAfter"))
	errs = append(errs, positive(series.HeartbeatInterval.Duration, path.Child("heartbeatInterval"))...)
	errs = append(errs, positive(series.HeartbeatSlack.Duration, path.Child("heartbeatSlack"))...)
	return append(errs, positive(series.SweepInterval.Duration, path.Child("sweepInterval"))...)
}

func positive(d time.Duration, path *field.Path) field.ErrorList {
	if d > 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(path, d.String(), "must be a positive duration")}
}
