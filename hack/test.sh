#!/usr/bin/env bash
# The whole suite, as CI runs it: hack/verify.sh (static checks, linters and
# the unit tests with -race), then the integration tests against real etcd,
# kube-apiserver and kubectl binaries that hack/envtest-assets.sh builds from
# Go modules on first use (cached after), and the image test (test/image:
# builds the image and runs it non-root on a read-only root filesystem), the
# fault suite (test/faults), the robustness harness's smoke
# (test/robustness), a short fuzzing run of every fuzz target, the
# benchmark smokes and, last, the end-to-end suite on a one-node cluster
# (test/e2e, as root).
#
# The cluster's binaries (hack/cluster-assets.sh, about 15 minutes of CPU
# cold) build in the background at the lowest priority from the start, on
# the CPU the tests leave idle while they wait on servers; the build scripts
# lock what they build, so a suite that needs a binary first waits for it.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

# phase NAME: prints the time since the start beside each phase's name.
phase() { printf 'test: [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

mkdir -p .cache
cluster_log=.cache/cluster-assets.log
phase "cluster binaries for test/e2e, in the background (log: ${cluster_log})"
# setsid: its own process group, so that an early failure stops the build too.
setsid nice -n 19 hack/cluster-assets.sh >"${cluster_log}" 2>&1 &
cluster_assets=$!
trap 'kill -- -"${cluster_assets}" 2>/dev/null || true' EXIT

# promtool (about 3.5 minutes of CPU cold) builds beside the first static
# checks; hack/verify-monitoring.sh waits for it (the script's lock).
setsid nice -n 10 hack/promtool-assets.sh >.cache/promtool-assets.log 2>&1 &
promtool_assets=$!
trap 'kill -- -"${cluster_assets}" -"${promtool_assets}" 2>/dev/null || true' EXIT

# The OpenTelemetry Collector the export's tests send to (test/integration/
# history) builds from its Go modules beside the static checks; its lock
# makes the integration phase wait for it.
setsid nice -n 10 hack/otelcol-assets.sh >.cache/otelcol-assets.log 2>&1 &
otelcol_assets=$!
trap 'kill -- -"${cluster_assets}" -"${promtool_assets}" -"${otelcol_assets}" 2>/dev/null || true' EXIT

phase "verify"
hack/verify.sh

phase "envtest assets"
KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
export KUBEBUILDER_ASSETS
# Tests run the kubectl that matches the kube-apiserver they talk to.
export PATH="${KUBEBUILDER_ASSETS}:${PATH}"
# test/integration/history runs the archive on victoria-logs as well.
VICTORIALOGS_ASSETS="$(hack/victorialogs-assets.sh)"
export VICTORIALOGS_ASSETS
OTELCOL_ASSETS="$(hack/otelcol-assets.sh)"
export OTELCOL_ASSETS

phase "go test ./test/... (integration and image)"
go test -count=1 -timeout 45m $(go list ./test/... | grep -v -e '/test/faults$' -e '/test/robustness$' -e '/test/e2e')

# The fault suite prints its table (-v); about 4 minutes on 2 cores.
phase "fault suite (test/faults)"
go test -count=1 -timeout 15m -v ./test/faults

# The robustness harness's smoke: 40 s of traffic and faults per store
# cache on the livestore_debug build, every list, watch and history page
# checked against etcd's history; about 2.5 minutes with the build and
# the validation (make test-robustness runs 10 minutes each).
phase "robustness smoke (test/robustness)"
go test -count=1 -timeout 15m -v ./test/robustness -robustness.duration=40s -robustness.store-cache=compact,watch-cache

# Go native fuzzing, bounded by executions, not by time: a -fuzztime
# duration races Go's fuzzing coordinator at the deadline and fails a
# target that found nothing ("context deadline exceeded", go.dev/issue/75804,
# fixed in Go 1.27). Every go test also replays the committed corpus
# (pkg/apiserver/testdata/fuzz).
phase "fuzz, ${FUZZ_EXECS:=5000x} executions per target"
for target in FuzzDecodeJSON FuzzDecodeProtobuf FuzzFieldSelector; do
	go test -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZ_EXECS}" -fuzzminimizetime 200x ./pkg/apiserver
done

phase "storm benchmark, smoke form (5s per run; make bench-storm runs 60s)"
go test -count=1 -timeout 5m ./test/integration/storm -run '^$' -bench BenchmarkStorm -benchtime 1x -storm.duration 5s

phase "mirror benchmark, smoke form (2,000 events, 100/s for 10s; budget 1 minute)"
hack/bench-mirror.sh --smoke

phase "end-to-end suite (test/e2e): waiting for the cluster binaries"
if ! wait "${cluster_assets}"; then
  cat "${cluster_log}" >&2
  echo "test: hack/cluster-assets.sh failed" >&2
  exit 1
fi
phase "end-to-end suite (test/e2e)"
go test -count=1 -timeout 40m -v ./test/e2e
phase "done"
