// Package faults is the fault suite: it runs the events-apiserver binary
// and the envtest etcd binary as separate processes, drives a steady create
// load through unmodified client-go (core/v1, events.k8s.io/v1beta1 and v1)
// and, during it, kills, pauses or fills etcd, kills or restarts the
// server, and then checks that every acknowledged create is still readable
// with its content and that the server became ready again by itself.
//
// Its tests print a table per fault (acknowledged creates, lost creates,
// client errors by code, time to ready); the README's "Faults" section
// holds the numbers. Run it with
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test -count=1 -v ./test/faults/
package faults
