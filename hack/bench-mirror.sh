#!/usr/bin/env bash
# Mirror benchmark: seeds a real kube-apiserver with SEED events, starts
# events-apiserver (its own process, its own etcd) mirroring it, times the
# catch-up, drives RATE upstream changes/s for DURATION and prints events
# mirrored, dropped, catch-up time, lag p50/p99 and the server's RSS; fails
# if any upstream event is missing or stale in our store.
#
#   hack/bench-mirror.sh            # 100,000 seeded, 500/s for 60s (make bench-mirror)
#   hack/bench-mirror.sh --smoke    # 2,000 seeded, 100/s for 10s (CI; about a minute)
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

SEED="${SEED:-100000}" RATE="${RATE:-500}" DURATION="${DURATION:-60s}"
if [[ "${1:-}" == "--smoke" ]]; then
  SEED=2000 RATE=100 DURATION=10s
fi

KUBEBUILDER_ASSETS="${KUBEBUILDER_ASSETS:-$(hack/envtest-assets.sh)}"
export KUBEBUILDER_ASSETS
bin="$(mktemp -d)"
trap 'rm -rf "${bin}"' EXIT
go build -o "${bin}/events-apiserver" ./cmd/events-apiserver
go build -o "${bin}/bench-mirror" ./hack/bench-mirror
echo "bench-mirror: seed=${SEED} rate=${RATE}/s duration=${DURATION} on $(nproc) cores"
"${bin}/bench-mirror" -server "${bin}/events-apiserver" -seed "${SEED}" -rate "${RATE}" -duration "${DURATION}"
