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
	"fmt"
	"strings"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	basecompatibility "k8s.io/component-base/compatibility"
	baseversion "k8s.io/component-base/version"
)

// The binary's own version, commit and build date are stamped into
// k8s.io/component-base/version with -ldflags -X by hack/ldflags.sh (make
// build, make image, the Dockerfile). --version prints them, and /version
// serves them with the Kubernetes API machinery's major and minor.

// unbuiltGitVersion prefixes component-base's version when the binary was
// built without -ldflags -X (go run, go build, go test).
const unbuiltGitVersion = "v0.0.0-master"

// kubeEffectiveVersion is the Kubernetes version whose API machinery the
// server is built from, which feature gates and emulation are judged by. It
// is not the server's own release version (that is in GitVersion): the
// server's v0.x must not make the machinery emulate Kubernetes 0.x. Its
// floors are those kube-apiserver uses: three minors back.
func kubeEffectiveVersion() basecompatibility.MutableEffectiveVersion {
	binary := utilversion.MustParse(baseversion.DefaultKubeBinaryVersion)
	floor := binary.WithPatch(0).SubtractMinor(3)
	return basecompatibility.NewEffectiveVersion(binary, false, floor, floor)
}

// useKubeEffectiveVersion registers kubeEffectiveVersion as the kube
// component's in compatibility.DefaultComponentGlobalsRegistry, in place of
// the one k8s.io/apiserver registers at init from the binary's stamped
// version: a release's v0.x would set the feature gates' emulation version
// to 0.x, and overriding a gate's default would then fail at start.
func useKubeEffectiveVersion() {
	registry := compatibility.DefaultComponentGlobalsRegistry
	registry.Reset()
	utilruntime.Must(registry.Register(basecompatibility.DefaultKubeComponent, kubeEffectiveVersion(), utilfeature.DefaultMutableFeatureGate))
}

// servedVersion reports, on /version, a version kubectl can parse even for
// a binary built without version ldflags: the Kubernetes minor whose API
// machinery it is built from, marked as this server's.
type servedVersion struct {
	basecompatibility.EffectiveVersion
}

// Info implements basecompatibility.EffectiveVersion.
func (v servedVersion) Info() *apimachineryversion.Info {
	info := v.EffectiveVersion.Info()
	if info != nil && strings.HasPrefix(info.GitVersion, unbuiltGitVersion) {
		bin := v.BinaryVersion()
		info.GitVersion = fmt.Sprintf("v%d.%d.0+events-apiserver", bin.Major(), bin.Minor())
	}
	return info
}
