#!/usr/bin/env bash
# The whole suite, as CI runs it: hack/verify.sh (static checks, linters and
# the unit tests with -race), then the integration tests against real etcd,
# kube-apiserver and kubectl binaries that hack/envtest-assets.sh builds from
# Go modules on first use (cached after), and the image test (test/image:
# builds the image and runs it non-root on a read-only root filesystem).
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

hack/verify.sh

echo "test: envtest assets"
KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
export KUBEBUILDER_ASSETS
# Tests run the kubectl that matches the kube-apiserver they talk to.
export PATH="${KUBEBUILDER_ASSETS}:${PATH}"

echo "test: go test ./test/... (integration and image)"
go test -count=1 -timeout 45m ./test/...

echo "test: storm benchmark, smoke form (5s per run; make bench-storm runs 60s)"
go test -count=1 -timeout 5m ./test/integration/storm -run '^$' -bench BenchmarkStorm -benchtime 1x -storm.duration 5s

echo "test: mirror benchmark, smoke form (2,000 events, 100/s for 10s; budget 1 minute)"
hack/bench-mirror.sh --smoke
