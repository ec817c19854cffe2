// +k8s:deepcopy-gen=package

// Package core holds the internal Event type: the union of core/v1 and
// events.k8s.io v1beta1/v1 Events. Every served version converts to and from
// it, the registry and admission work on it, and it is never serialized.
package core
