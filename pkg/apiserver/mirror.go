package apiserver

import (
	"context"

	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/kube-events/events-apiserver/pkg/mirror"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
)

// mirrorHookName names the post-start hook that starts the mirror and the
// pre-shutdown hook that stops it.
const mirrorHookName = "start-events-mirror"

// installMirror builds the mirror of config into events and runs it from
// the server's start until its shutdown: stopped, and waited for, in a
// pre-shutdown hook, before storage goes away.
func installMirror(server *genericapiserver.GenericAPIServer, events *eventregistry.REST, config mirror.Config) error {
	m, err := mirror.NewForConfig(config, events, Codecs.UniversalDecoder())
	if err != nil {
		return err
	}
	runner := &sweeperRunner{}
	if err := server.AddPostStartHook(mirrorHookName, func(hook genericapiserver.PostStartHookContext) error {
		runner.start(hook, func(ctx context.Context) { m.Run(ctx) })
		return nil
	}); err != nil {
		return err
	}
	return server.AddPreShutdownHook(mirrorHookName, func() error {
		runner.stop()
		return nil
	})
}
