//go:build tools

// Package hack pins the code generators that hack/update-codegen.sh runs, so
// that go.mod decides their versions and `go install` needs no @version.
package hack

import (
	_ "golang.org/x/tools/cmd/goimports"
	_ "k8s.io/code-generator"
	_ "k8s.io/code-generator/cmd/go-to-protobuf"
	_ "k8s.io/code-generator/cmd/go-to-protobuf/protoc-gen-gogo"
	_ "k8s.io/kube-openapi/cmd/openapi-gen"
)
