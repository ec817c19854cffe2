#!/usr/bin/env bash
# The side-by-side benchmark (make bench): kube-apiserver, then
# events-apiserver, each on a fresh etcd of the same envtest assets, loaded
# by unmodified client-go from test/bench; prints a Markdown table with
# ratios. Flags are passed to hack/bench (go run ./hack/bench -h lists them).
# Takes about 35 minutes and most of two cores: run it by hand, on a quiet
# machine.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

# 10,000 watchers are about a hundred connections per side, and etcd and
# both servers keep files open: raise the soft limit as far as allowed.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

assets="$(hack/envtest-assets.sh)"
go build -o bin/events-apiserver ./cmd/events-apiserver
go build -o bin/bench ./hack/bench
exec bin/bench --assets "${assets}" --server-binary bin/events-apiserver "$@"
