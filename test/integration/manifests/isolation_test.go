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

package manifests

import (
	"net"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kube-events/events-apiserver/cmd/events-apiserver/app"
)

// TestEventsEtcdAdmitsOnlyTheControlPlane: in offload and takeover, the
// events etcd's NodePort keeps the source of a connection
// (externalTrafficPolicy: Local) and its NetworkPolicy admits to the
// client port the server's pods, the members and the control-plane nodes'
// addresses (a CIDR the operator sets), never every source.
func TestEventsEtcdAdmitsOnlyTheControlPlane(t *testing.T) {
	c := startCluster(t)
	for _, overlay := range []string{"offload", "takeover"} {
		t.Run(overlay, func(t *testing.T) {
			objs := c.render(t, filepath.Join(c.root, "artifacts", "overlays", overlay))
			svc := typed[corev1.Service](t, objs.find("Service", "", "events-etcd"))
			if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
				t.Errorf("Service events-etcd type %q externalTrafficPolicy %q, want NodePort and Local (a NetworkPolicy sees the source only then)",
					svc.Spec.Type, svc.Spec.ExternalTrafficPolicy)
			}
			policy := typed[networkingv1.NetworkPolicy](t, objs.find("NetworkPolicy", "networking.k8s.io", "events-etcd"))
			expectClientPortAdmitsOnlyTheControlPlane(t, policy)
		})
	}
}

// expectClientPortAdmitsOnlyTheControlPlane checks that every rule that
// opens the client port names its sources: the server's pods, the
// members, and addresses narrower than the whole network.
func expectClientPortAdmitsOnlyTheControlPlane(t *testing.T, policy *networkingv1.NetworkPolicy) {
	t.Helper()
	client := intstr.FromString("client")
	var rules, blocks int
	for _, rule := range policy.Spec.Ingress {
		opens := len(rule.Ports) == 0
		for _, port := range rule.Ports {
			opens = opens || port.Port == nil || *port.Port == client || port.Port.IntVal == 2379
		}
		if !opens {
			continue
		}
		rules++
		if len(rule.From) == 0 {
			t.Errorf("NetworkPolicy %s opens the client port to every source: %+v", policy.Name, rule)
		}
		for _, peer := range rule.From {
			switch {
			case peer.IPBlock != nil:
				_, cidr, err := net.ParseCIDR(peer.IPBlock.CIDR)
				if err != nil {
					t.Errorf("NetworkPolicy %s: ipBlock %q: %v", policy.Name, peer.IPBlock.CIDR, err)
					continue
				}
				if ones, _ := cidr.Mask.Size(); ones == 0 {
					t.Errorf("NetworkPolicy %s opens the client port to %s, every address", policy.Name, peer.IPBlock.CIDR)
				}
				blocks++
			case peer.NamespaceSelector != nil:
				t.Errorf("NetworkPolicy %s opens the client port to namespaces %v", policy.Name, peer.NamespaceSelector)
			case peer.PodSelector == nil:
				t.Errorf("NetworkPolicy %s: a peer with no selector: %+v", policy.Name, peer)
			}
		}
	}
	if rules != 1 || blocks == 0 {
		t.Errorf("NetworkPolicy %s: %d rules open the client port, with %d address blocks; want one, with the control-plane nodes'", policy.Name, rules, blocks)
	}
}

// TestExternalEtcdIsMaintainedByItsOwner: against an etcd it does not own
// (overlays/external-etcd, which may share kube-apiserver's), the server
// neither defragments the members nor disarms alarms; with the bundled
// etcd, which is its own, it does.
func TestExternalEtcdIsMaintainedByItsOwner(t *testing.T) {
	c := startCluster(t)
	for _, tc := range []struct {
		overlay  string
		maintain bool
	}{
		{"external-etcd", false},
		{"default", true},
		{"offload", true},
	} {
		t.Run(tc.overlay, func(t *testing.T) {
			objs := c.render(t, filepath.Join(c.root, "artifacts", "overlays", tc.overlay))
			dep := typed[appsv1.Deployment](t, objs.find("Deployment", "apps", "events-apiserver"))
			opts := app.NewOptions()
			fs := pflag.NewFlagSet("events-apiserver", pflag.ContinueOnError)
			opts.AddFlags(fs)
			if err := fs.Parse(dep.Spec.Template.Spec.Containers[0].Args); err != nil {
				t.Fatal(err)
			}
			if maintains := opts.EtcdMaintenance.Interval != 0; maintains != tc.maintain {
				t.Errorf("the server maintains the etcd: %v (--etcd-maintenance-interval=%v), want %v", maintains, opts.EtcdMaintenance.Interval, tc.maintain)
			}
		})
	}
}
