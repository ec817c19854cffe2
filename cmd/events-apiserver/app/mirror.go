package app

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/pkg/mirror"
)

// Values of --mirror.
const (
	MirrorAuto  = "auto"
	MirrorOn    = "true"
	MirrorOff   = "false"
	mirrorAgent = "events-apiserver-mirror"
)

// MirrorOptions configure the mirror of kube-apiserver's core/v1 events
// into our store (see pkg/mirror).
type MirrorOptions struct {
	// Mode is auto, true or false. auto mirrors when the server runs in a
	// cluster (KUBERNETES_SERVICE_HOST is set) or Kubeconfig is set.
	Mode string
	// Kubeconfig reaches the kube-apiserver to mirror; empty means the
	// in-cluster configuration, else --kubeconfig.
	Kubeconfig string
	// Bounds of the mirror; see mirror.Options.
	QueueSize int
	QPS       float64
	Burst     int
	Workers   int
}

func newMirrorOptions() MirrorOptions {
	return MirrorOptions{Mode: MirrorAuto, QueueSize: mirror.DefaultQueueSize, QPS: mirror.DefaultQPS,
		Burst: mirror.DefaultBurst, Workers: mirror.DefaultWorkers}
}

func (m *MirrorOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&m.Mode, "mirror", m.Mode, "Copy kube-apiserver's core/v1 Events into this server's store: auto, true or false. "+
		"auto mirrors when the server runs in a cluster or --mirror-kubeconfig is set, and not in standalone mode otherwise.")
	fs.StringVar(&m.Kubeconfig, "mirror-kubeconfig", m.Kubeconfig, "Kubeconfig of the kube-apiserver to mirror events from; "+
		"defaults to the in-cluster configuration, else --kubeconfig. Needs list and watch of events in all namespaces.")
	fs.IntVar(&m.QueueSize, "mirror-queue-size", m.QueueSize, "How many upstream events may wait to be written; beyond it, new ones are dropped and counted in events_apiserver_mirror_dropped_total.")
	fs.Float64Var(&m.QPS, "mirror-qps", m.QPS, "Writes per second of mirrored events into the store.")
	fs.IntVar(&m.Burst, "mirror-burst", m.Burst, "Burst of writes of mirrored events into the store.")
	fs.IntVar(&m.Workers, "mirror-workers", m.Workers, "How many mirrored events are written at once.")
}

// enabled decides whether to mirror, per Mode.
func (m *MirrorOptions) enabled() bool {
	switch m.Mode {
	case MirrorOn:
		return true
	case MirrorAuto:
		return m.Kubeconfig != "" || os.Getenv("KUBERNETES_SERVICE_HOST") != ""
	default:
		return false
	}
}

func (m *MirrorOptions) validate() []error {
	var errs []error
	if m.Mode != MirrorAuto && m.Mode != MirrorOn && m.Mode != MirrorOff {
		errs = append(errs, fmt.Errorf("--mirror must be auto, true or false, got %q", m.Mode))
	}
	if m.QueueSize < 1 {
		errs = append(errs, fmt.Errorf("--mirror-queue-size must be at least 1, got %d", m.QueueSize))
	}
	if m.QPS <= 0 {
		errs = append(errs, fmt.Errorf("--mirror-qps must be positive, got %v", m.QPS))
	}
	if m.Burst < 1 {
		errs = append(errs, fmt.Errorf("--mirror-burst must be at least 1, got %d", m.Burst))
	}
	if m.Workers < 1 {
		errs = append(errs, fmt.Errorf("--mirror-workers must be at least 1, got %d", m.Workers))
	}
	return errs
}

// mirrorClientConfig is the client configuration of the kube-apiserver to
// mirror: --mirror-kubeconfig, else in-cluster, else --kubeconfig.
func (o *Options) mirrorClientConfig() (*rest.Config, error) {
	var config *rest.Config
	var err error
	switch {
	case o.Mirror.Kubeconfig != "":
		config, err = clientcmd.BuildConfigFromFlags("", o.Mirror.Kubeconfig)
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		config, err = rest.InClusterConfig()
	case o.Recommended.CoreAPI.CoreAPIKubeconfigPath != "":
		config, err = clientcmd.BuildConfigFromFlags("", o.Recommended.CoreAPI.CoreAPIKubeconfigPath)
	default:
		err = errors.New("--mirror=true needs --mirror-kubeconfig, an in-cluster configuration or --kubeconfig")
	}
	if err != nil {
		return nil, fmt.Errorf("mirror: %w", err)
	}
	config = rest.CopyConfig(config)
	config.UserAgent = mirrorAgent
	return config, nil
}

// installMirror adds the mirror to server when enabled: it starts in a
// post-start hook and stops with the hook's context, when the server shuts
// down. It reads through its own client and writes to the server's store.
func (o *Options) installMirror(server *apiserver.EventsServer) error {
	if !o.Mirror.enabled() {
		return nil
	}
	config, err := o.mirrorClientConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	m := mirror.New(client, server.Events, apiserver.Codecs.UniversalDecoder(), mirror.Options{
		QueueSize: o.Mirror.QueueSize, QPS: o.Mirror.QPS, Burst: o.Mirror.Burst, Workers: o.Mirror.Workers,
	})
	return server.GenericAPIServer.AddPostStartHook("start-events-mirror", func(hook genericapiserver.PostStartHookContext) error {
		go m.Run(hook)
		return nil
	})
}
