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
