// Command events-apiserver serves Kubernetes Events through core/v1,
// events.k8s.io/v1beta1 and events.k8s.io/v1 from one TTL'd etcd store.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/kube-events/events-apiserver/cmd/events-apiserver/app"
)

func main() {
	app.SetDefaultGCPercent()
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(app.NewCommand(ctx)))
}
