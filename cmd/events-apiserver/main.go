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

// Command events-apiserver serves Kubernetes Events through core/v1,
// events.k8s.io/v1beta1 and events.k8s.io/v1 from one TTL'd etcd store.
package main

import (
	"fmt"
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/kube-events/events-apiserver/cmd/events-apiserver/app"
)

func main() {
	app.SetDefaultGCPercent()
	if err := app.SetArchiveLibraryFlags(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	memory := app.SetMemoryLimit()
	ctx := genericapiserver.SetupSignalContext()
	go memory.Follow(ctx)
	os.Exit(cli.Run(app.NewCommand(ctx, memory)))
}
