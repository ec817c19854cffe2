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

package conversion

// ReportingController is what events.k8s.io shows as reportingController:
// the event's own reporting controller, or for legacy events that only carry
// source.component, that component.
func ReportingController(reportingController, sourceComponent string) string {
	if reportingController != "" {
		return reportingController
	}
	return sourceComponent
}

// Host merges events.k8s.io/v1beta1's two spellings of the reporting host,
// deprecatedSource.host and deprecatedHost, into the internal Source.Host.
// Either one alone fills it. When both are set and differ, host is
// deprecatedSource.host and conflict is deprecatedHost, for validation to reject.
func Host(sourceHost, deprecatedHost string) (host, conflict string) {
	switch {
	case sourceHost == "":
		return deprecatedHost, ""
	case deprecatedHost == "" || deprecatedHost == sourceHost:
		return sourceHost, ""
	default:
		return sourceHost, deprecatedHost
	}
}
