// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/kube-events/events-apiserver/pkg/apis/core
// +k8s:defaulter-gen=TypeMeta
// +k8s:protobuf-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.k8s.eventsapiserver.core.v1
// +groupName=

// Package v1 is core/v1 Event as served under /api/v1: field for field, JSON
// and protobuf, the same as k8s.io/api/core/v1.Event, plus series.state.
package v1
