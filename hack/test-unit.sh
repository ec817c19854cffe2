#!/usr/bin/env bash
# The unit tests (cmd/ and pkg/), with the race detector. pkg/mirror's store
# tests run the registry against a real etcd: the etcd binary is built from
# Go modules on first use (about 30s) and cached in .cache/envtest;
# pkg/archive's service tests run victoria-logs, built the same way.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

echo "test-unit: etcd for pkg/mirror (hack/envtest-assets.sh --etcd-only)"
KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh --etcd-only)"
export KUBEBUILDER_ASSETS

echo "test-unit: victoria-logs for pkg/archive (hack/victorialogs-assets.sh)"
VICTORIALOGS_ASSETS="$(hack/victorialogs-assets.sh)"
export VICTORIALOGS_ASSETS

echo "test-unit: go test -race ./cmd/... ./pkg/... (pkg/livestore apart)"
go test -race -count=1 -timeout 20m ./cmd/... $(go list ./pkg/... | grep -v '/pkg/livestore$')

# The live store's tests run in its debug build, in which the memory it
# frees is left mapped with no access: a read of freed memory faults.
echo "test-unit: go test -race -tags livestore_debug ./pkg/livestore"
go test -race -count=1 -timeout 20m -tags livestore_debug ./pkg/livestore

echo "test-unit: go test -race ./... in pkg/recorder (a module of its own)"
go test -C pkg/recorder -race -count=1 -timeout 10m ./...

echo "test-unit: go test -race ./releasetool in hack/tools (the release's SBOM and signatures)"
go test -C hack/tools -race -count=1 -timeout 5m ./releasetool
