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

package app

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-events/events-apiserver/pkg/mirror"
)

// Values of --mirror.
const (
	MirrorAuto  = "auto"
	MirrorOn    = "true"
	MirrorOff   = "false"
	mirrorAgent = "events-apiserver-mirror"
)

// MirrorOptions are the flags of the mirror of kube-apiserver's core/v1
// events into our store; Config turns them into the mirror's configuration
// (see pkg/mirror).
type MirrorOptions struct {
	// Mode is auto, true or false. auto mirrors when the server runs in a
	// cluster (KUBERNETES_SERVICE_HOST is set) or Kubeconfig is set.
	Mode string
	// Kubeconfig reaches the kube-apiserver to mirror; empty means the
	// in-cluster configuration, else --kubeconfig.
	Kubeconfig string
	// SharedWithKubeAPIServer says kube-apiserver keeps its events in our
	// etcd (offload mode): there is nothing to mirror.
	SharedWithKubeAPIServer bool
	// Bounds of the mirror.
	Options mirror.Options
}

func newMirrorOptions() MirrorOptions {
	return MirrorOptions{Mode: MirrorAuto, Options: mirror.Options{}.Defaulted()}
}

func (m *MirrorOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&m.Mode, "mirror", m.Mode, "Copy kube-apiserver's core/v1 Events into this server's store: auto, true or false. "+
		"auto mirrors when the server runs in a cluster or --mirror-kubeconfig is set, and not in standalone mode "+
		"or with --events-shared-with-kube-apiserver otherwise.")
	fs.StringVar(&m.Kubeconfig, "mirror-kubeconfig", m.Kubeconfig, "Kubeconfig of the kube-apiserver to mirror events from; "+
		"defaults to the in-cluster configuration, else --kubeconfig. Needs list and watch of events in all namespaces.")
	fs.BoolVar(&m.SharedWithKubeAPIServer, "events-shared-with-kube-apiserver", m.SharedWithKubeAPIServer,
		"kube-apiserver keeps its events in this server's etcd (offload mode, --etcd-servers-overrides=/events#...): never mirror.")
	o := &m.Options
	fs.IntVar(&o.MaxPending, "mirror-queue-size", o.MaxPending, "How many upstream events may wait to be written; "+
		"while that many wait, the mirror stops reading from kube-apiserver until writes catch up (nothing is dropped).")
	fs.Int64Var(&o.PageSize, "mirror-page-size", o.PageSize, "How many events each list call to kube-apiserver returns.")
	fs.Float32Var(&o.QPS, "mirror-qps", o.QPS, "Writes per second of mirrored events into the store.")
	fs.IntVar(&o.Burst, "mirror-burst", o.Burst, "Burst of writes of mirrored events into the store.")
	fs.IntVar(&o.Workers, "mirror-workers", o.Workers, "How many mirrored events are written at once.")
	fs.DurationVar(&o.RetryMaxDelay, "mirror-retry-max-delay", o.RetryMaxDelay,
		"Longest wait between two attempts to write an event whose writes fail (the wait starts at 100ms and doubles).")
}

// enabled decides whether to mirror, per Mode.
func (m *MirrorOptions) enabled() bool {
	switch {
	case m.Mode == MirrorOn:
		return true
	case m.Mode == MirrorAuto && !m.SharedWithKubeAPIServer:
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
	if m.Mode == MirrorOn && m.SharedWithKubeAPIServer {
		errs = append(errs, errors.New("--mirror=true with --events-shared-with-kube-apiserver: kube-apiserver already keeps its events "+
			"in this server's etcd, mirroring would rewrite every event onto itself; drop one of the flags"))
	}
	o := m.Options
	for _, bound := range []struct {
		flag  string
		value float64
	}{
		{"--mirror-queue-size", float64(o.MaxPending)}, {"--mirror-page-size", float64(o.PageSize)},
		{"--mirror-qps", float64(o.QPS)}, {"--mirror-burst", float64(o.Burst)}, {"--mirror-workers", float64(o.Workers)},
		{"--mirror-retry-max-delay", float64(o.RetryMaxDelay)},
	} {
		if bound.value <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %v", bound.flag, bound.value))
		}
	}
	return errs
}

// config is the mirror's configuration, nil when not mirroring. The
// kube-apiserver is --mirror-kubeconfig, else in-cluster, else
// coreAPIKubeconfig (--kubeconfig).
func (m *MirrorOptions) config(coreAPIKubeconfig string) (*mirror.Config, error) {
	if !m.enabled() {
		return nil, nil
	}
	var upstream *rest.Config
	var err error
	switch {
	case m.Kubeconfig != "":
		upstream, err = clientcmd.BuildConfigFromFlags("", m.Kubeconfig)
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		upstream, err = rest.InClusterConfig()
	case coreAPIKubeconfig != "":
		upstream, err = clientcmd.BuildConfigFromFlags("", coreAPIKubeconfig)
	default:
		err = errors.New("--mirror=true needs --mirror-kubeconfig, an in-cluster configuration or --kubeconfig")
	}
	if err != nil {
		return nil, fmt.Errorf("mirror: %w", err)
	}
	upstream = rest.CopyConfig(upstream)
	upstream.UserAgent = mirrorAgent
	return &mirror.Config{Upstream: upstream, Options: m.Options}, nil
}
