#!/usr/bin/env bash
# Runs the integration suite's aggregator tests against the oldest
# kube-apiserver docs/install.md supports (KUBE_VERSION, default v1.36.3):
#
#   make test-compat [KUBE_VERSION=v1.36.3 STAGING_VERSION=v0.36.3] [COMPAT_RUN=regexp]
#
# kube-apiserver is built from its Go module at KUBE_VERSION (as
# hack/envtest-assets.sh builds the tested one) into
# .cache/envtest/compat-k8s-<version>; etcd, etcdctl, etcdutl and kubectl are
# the pinned ones of hack/envtest-assets.sh. The first run builds
# kube-apiserver (about 5 minutes on 2 cores); later runs take about as long
# as the tests, a few minutes, which is why CI does not run it: the table in
# docs/install.md records what passed.
#
# With --assets-only it builds the assets and prints their directory.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

# The pinned assets, whatever KUBE_VERSION this run tests.
default_assets="$(env -u KUBE_VERSION -u STAGING_VERSION hack/envtest-assets.sh)"

KUBE_VERSION="${KUBE_VERSION:-v1.36.3}"
if ! [[ "${KUBE_VERSION}" =~ ^v1\.([0-9]+)\.[0-9]+$ ]]; then
  echo "test-compat: KUBE_VERSION=${KUBE_VERSION}: want a release such as v1.36.3" >&2
  exit 2
fi
STAGING_VERSION="${STAGING_VERSION:-v0.${KUBE_VERSION#v1.}}"
export KUBE_VERSION STAGING_VERSION

assets="${ROOT}/.cache/envtest/compat-k8s-${KUBE_VERSION}"
mkdir -p "${assets}"
# shellcheck source=hack/lib/kube-build.sh
source "${ROOT}/hack/lib/kube-build.sh"
(
  flock 9
  if [[ ! -x "${assets}/kube-apiserver" ]]; then
    echo "test-compat: building kube-apiserver ${KUBE_VERSION} (about 5 minutes on 2 cores, cached afterwards)" >&2
    build_kube_cmds "${ROOT}/.cache/envtest/build-compat-kube-apiserver" "${assets}" kube-apiserver
  fi
) 9>"${assets}/.kube.lock"
for tool in etcd etcdctl etcdutl kubectl; do
  ln -sfn "${default_assets}/${tool}" "${assets}/${tool}"
done
got="$("${assets}/kube-apiserver" --version)"
if [[ "${got}" != "Kubernetes ${KUBE_VERSION}" ]]; then
  echo "test-compat: ${assets}/kube-apiserver --version says ${got}, not Kubernetes ${KUBE_VERSION}" >&2
  exit 1
fi
if [[ "${1:-}" == "--assets-only" ]]; then
  echo "${assets}"
  exit 0
fi

# A representative set of the aggregator tests, package by package:
# discovery, delegated authentication and authorization, the cluster's
# admission policies and webhooks and kubectl through the aggregator
# (aggregation); mirror mode's copy of kube-apiserver's events; offload
# mode, kube-apiserver writing to the events etcd; takeover, our server
# answering events.k8s.io/v1 through kube-apiserver, with Kubernetes'
# Events conformance tests. The storms are left out (their figures are
# 1.37's, in docs/storms.md). COMPAT_RUN replaces every package's set.
declare -A sets=(
  [./test/integration/aggregation]='.'
  # All of mirror's: its TestMain starts the server before the test flags
  # are read, so that -run (and -v) do not reach its tests.
  [./test/integration/mirror]='.'
  [./test/integration/offload]='^(TestOurWritesReadBackThroughKubeAPIServer|TestMainEtcdHoldsNoEvents|TestSeriesStateThroughKubeAPIServer|TestRecordersThroughKubeAPIServer|TestEventsWrittenByKubeAPIServerGetTheirChain)$'
  [./test/integration/takeover]='^(TestEventsV1ServedByUs|TestSeriesStateInTheAnswerThroughKubeAPIServer|TestSwitchingOffAndOn)$'
  [./test/integration/conformance]='.'
)
log="${COMPAT_LOG:-$(mktemp -t test-compat-XXXXXX.log)}"
: >"${log}"
echo "test-compat: kube-apiserver ${KUBE_VERSION} (${assets}); go test -v output in ${log}" >&2
failed=0
for pkg in ./test/integration/aggregation ./test/integration/mirror ./test/integration/offload ./test/integration/takeover ./test/integration/conformance; do
  run="${COMPAT_RUN:-${sets[${pkg}]}}"
  if ! KUBEBUILDER_ASSETS="${assets}" PATH="${assets}:${PATH}" \
    go test -count=1 -timeout 20m -v -run "${run}" "${pkg}" >>"${log}" 2>&1; then
    failed=1
  fi
  echo "test-compat: ${pkg}: $(grep -E '^(ok|FAIL|---)' "${log}" | tail -n 1)" >&2
done
# One line per test: what docs/install.md's table is written from.
grep -E '^(--- (PASS|FAIL|SKIP)|ok |FAIL)' "${log}"
exit "${failed}"
