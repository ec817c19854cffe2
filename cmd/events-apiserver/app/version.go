package app

import (
	"fmt"
	"strings"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
	basecompatibility "k8s.io/component-base/compatibility"
)

// unbuiltGitVersion prefixes component-base's version when the binary was
// built without -ldflags -X (go run, go build, go test).
const unbuiltGitVersion = "v0.0.0-master"

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
