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

// Package controller gives every loop the server runs (the series
// controllers, the mirror, the etcd maintenance, the fold flush, ...) one
// lifecycle: a Manager starts them from the generic server's post-start
// hook and stops them, waiting for their work in flight, from its
// pre-shutdown hook, either under the etcd election (pkg/leaderelection) or
// on every replica, and reports each loop's health: on /livez whether it is
// alive and not wedged, on /dependencyz whether what it depends on answers.
// A loop that panics crashes the process, as Kubernetes components do.
package controller

import (
	"context"

	"github.com/kube-events/events-apiserver/pkg/controller/health"
)

// Controller is a loop the server runs.
type Controller interface {
	// Name names the loop in logs and in its health check.
	Name() string
	// Run works until ctx is done and returns once its work in flight
	// ended. A Run that returns while ctx goes on is a loop that died.
	Run(ctx context.Context)
}

// Reporter is implemented by a Controller that reports its work, its
// progress and its dependency (pkg/controller/health): its /livez check then
// also fails while it is wedged, and it has a check on /dependencyz. It is
// only asked while the controller runs.
type Reporter interface {
	Health() *health.Tracker
}
