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

package aggregation

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeV1 is kube-apiserver's own events.k8s.io version; ourV1beta1 is ours.
const (
	eventsGroup = "events.k8s.io"
	kubeV1      = "events.k8s.io/v1"
	ourV1beta1  = "events.k8s.io/v1beta1"
)

// TestLegacyDiscoveryPrefersOurV1beta1 reads kube-apiserver's unaggregated
// discovery documents (/apis and /apis/events.k8s.io), which older clients
// use: the group holds kube-apiserver's v1 and our v1beta1, and the
// APIService's versionPriority makes v1beta1 the preferred version.
func TestLegacyDiscoveryPrefersOurV1beta1(t *testing.T) {
	rest := adminClient(t).Discovery().RESTClient()
	for _, path := range []string{"/apis", "/apis/" + eventsGroup} {
		t.Run(path, func(t *testing.T) {
			body, err := rest.Get().AbsPath(path).SetHeader("Accept", "application/json").DoRaw(testContext(t))
			if err != nil {
				t.Fatal(err)
			}
			var group metav1.APIGroup
			if path == "/apis" {
				var list metav1.APIGroupList
				if err := json.Unmarshal(body, &list); err != nil {
					t.Fatal(err)
				}
				i := slices.IndexFunc(list.Groups, func(g metav1.APIGroup) bool { return g.Name == eventsGroup })
				if i < 0 {
					t.Fatalf("no %s in %s", eventsGroup, body)
				}
				group = list.Groups[i]
			} else if err := json.Unmarshal(body, &group); err != nil {
				t.Fatal(err)
			}
			var versions []string
			for _, v := range group.Versions {
				versions = append(versions, v.GroupVersion)
			}
			if want := []string{ourV1beta1, kubeV1}; !slices.Equal(versions, want) {
				t.Errorf("versions %v, want %v (ours first: higher versionPriority)", versions, want)
			}
			if group.PreferredVersion.GroupVersion != ourV1beta1 {
				t.Errorf("preferredVersion %s, want %s", group.PreferredVersion.GroupVersion, ourV1beta1)
			}
		})
	}
}

// TestAggregatedDiscoveryPrefersOurV1beta1 reads the aggregated discovery
// document (apidiscovery.k8s.io/v2) that kubectl and client-go use, in
// which a group's first version is its preferred one, and checks that it
// carries the resources our server serves.
func TestAggregatedDiscoveryPrefersOurV1beta1(t *testing.T) {
	body, err := adminClient(t).Discovery().RESTClient().Get().AbsPath("/apis").
		SetHeader("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").DoRaw(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	var list apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list.Items, func(g apidiscoveryv2.APIGroupDiscovery) bool { return g.Name == eventsGroup })
	if i < 0 {
		t.Fatalf("no %s in aggregated discovery", eventsGroup)
	}
	group := list.Items[i]
	var versions []string
	for _, v := range group.Versions {
		versions = append(versions, v.Version)
	}
	if want := []string{"v1beta1", "v1"}; !slices.Equal(versions, want) {
		t.Fatalf("versions %v, want %v (the first is preferred)", versions, want)
	}
	v1beta1 := group.Versions[0]
	if v1beta1.Freshness != apidiscoveryv2.DiscoveryFreshnessCurrent {
		t.Errorf("v1beta1 freshness %q, want Current: kube-apiserver has fetched our discovery", v1beta1.Freshness)
	}
	j := slices.IndexFunc(v1beta1.Resources, func(r apidiscoveryv2.APIResourceDiscovery) bool { return r.Resource == "events" })
	if j < 0 {
		t.Fatalf("v1beta1 has no events resource: %+v", v1beta1.Resources)
	}
	events := v1beta1.Resources[j]
	for _, verb := range []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"} {
		if !slices.Contains(events.Verbs, verb) {
			t.Errorf("v1beta1 events verbs %v lack %s", events.Verbs, verb)
		}
	}
	if events.Scope != apidiscoveryv2.ScopeNamespace {
		t.Errorf("v1beta1 events scope %q, want Namespaced", events.Scope)
	}
}

// TestClientGoDiscoveryPrefersOurV1beta1 asks client-go's discovery
// client, which negotiates aggregated discovery, for the preferred
// resources.
func TestClientGoDiscoveryPrefersOurV1beta1(t *testing.T) {
	disco := adminClient(t).Discovery()
	groups, err := disco.ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == eventsGroup })
	if i < 0 {
		t.Fatalf("no %s group", eventsGroup)
	}
	if got := groups.Groups[i].PreferredVersion.GroupVersion; got != ourV1beta1 {
		t.Errorf("client-go preferred version %s, want %s", got, ourV1beta1)
	}
	preferred, err := disco.ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	var eventsVersions []string
	for _, list := range preferred {
		for _, r := range list.APIResources {
			if r.Name == "events" {
				eventsVersions = append(eventsVersions, list.GroupVersion)
			}
		}
	}
	slices.Sort(eventsVersions)
	if want := []string{ourV1beta1, "v1"}; !slices.Equal(eventsVersions, want) {
		t.Errorf("preferred events resources in %v, want %v", eventsVersions, want)
	}
}

// TestKubectlSeesBothVersionsAndPrefersOurs runs kubectl api-versions and
// api-resources, which read aggregated discovery.
func TestKubectlSeesBothVersionsAndPrefersOurs(t *testing.T) {
	versions := strings.Fields(mustKubectl(t, "api-versions"))
	for _, want := range []string{ourV1beta1, kubeV1} {
		if !slices.Contains(versions, want) {
			t.Errorf("kubectl api-versions lacks %s: %v", want, versions)
		}
	}
	resources := strings.Fields(mustKubectl(t, "api-resources", "--api-group="+eventsGroup, "--no-headers"))
	// NAME SHORTNAMES APIVERSION NAMESPACED KIND; events has the short name ev.
	if !slices.Contains(resources, ourV1beta1) || slices.Contains(resources, kubeV1) {
		t.Errorf("kubectl api-resources --api-group=%s lists %v, want the events resource at %s only", eventsGroup, resources, ourV1beta1)
	}
}
