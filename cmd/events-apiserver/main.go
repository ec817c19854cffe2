// Command events-apiserver serves Kubernetes Events through core/v1,
// events.k8s.io/v1beta1 and events.k8s.io/v1 from one TTL'd etcd store.
package main

import (
	"os"
	"runtime/debug"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/kube-events/events-apiserver/cmd/events-apiserver/app"
)

// defaultGCPercent is the collector's target when GOGC is not set. Most of
// this server's heap is its watch cache, every event it serves, long-lived;
// Go's default of 100 lets the heap grow to twice that between collections,
// and the process to about three times it. 50 keeps the process near twice
// its cache for a few percent more CPU per write (measured in README,
// "Where the memory goes"); Prometheus sets 75 for the same reason. GOGC
// and GOMEMLIMIT, when set, decide as usual.
const defaultGCPercent = 50

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(app.NewCommand(ctx)))
}
