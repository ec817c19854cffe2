#!/usr/bin/env bash
# The whole suite, as CI runs it: static checks, then every Go test (unit and
# integration) against real etcd, kube-apiserver and kubectl binaries that
# hack/envtest-assets.sh builds from Go modules on first use (cached after).
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

hack/verify.sh

echo "test: envtest assets"
KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
export KUBEBUILDER_ASSETS
# Tests run the kubectl that matches the kube-apiserver they talk to.
export PATH="${KUBEBUILDER_ASSETS}:${PATH}"

echo "test: go test"
go test -count=1 -timeout 45m ./...

echo "test: mirror benchmark, smoke form (2,000 events, 100/s for 10s; budget 1 minute)"
hack/bench-mirror.sh --smoke
