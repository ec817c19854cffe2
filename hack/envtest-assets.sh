#!/usr/bin/env bash
# Builds the envtest assets (kube-apiserver, kubectl, etcd, and etcdctl and
# etcdutl for the backup procedure's test) from Go modules at
# pinned versions and caches them in .cache/envtest/<versions>. Prints the asset directory on stdout, so:
#
#   export KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
#
# With --etcd-only it builds only etcd (what the unit tests need).
#
# Nothing is downloaded except Go modules through the module proxy.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
STAGING_VERSION="${STAGING_VERSION:-v0.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
assets="${root}/.cache/envtest/k8s-${KUBE_VERSION}-etcd-${ETCD_VERSION}"
mkdir -p "${assets}"

log() { echo "envtest-assets: $*" >&2; }

# shellcheck source=hack/lib/kube-build.sh
source "${root}/hack/lib/kube-build.sh"

# locked NAME CMD...: runs CMD holding .cache/envtest/<versions>/.NAME.lock,
# so that two builds of the same binaries (make test builds the cluster's in
# the background while the tests ask for these) wait for each other instead
# of sharing a work directory.
locked() {
  local name="$1"
  shift
  (
    flock 9
    "$@"
  ) 9>"${assets}/.${name}.lock"
}

need_etcd() {
  if [[ ! -x "${assets}/etcd" ]]; then
    log "building etcd ${ETCD_VERSION} (about 30s)"
    build_etcd "${root}/.cache/envtest/build-etcd" "${assets}" etcd
  fi
}
need_kube() {
  if [[ ! -x "${assets}/kube-apiserver" || ! -x "${assets}/kubectl" ]]; then
    log "building kube-apiserver and kubectl ${KUBE_VERSION} (about 5 minutes on 2 cores, cached afterwards)"
    build_kube_cmds "${root}/.cache/envtest/build-kube-apiserver" "${assets}" kube-apiserver kubectl
  fi
}
need_etcdctl() {
  local tool
  for tool in etcdctl etcdutl; do
    if [[ ! -x "${assets}/${tool}" ]]; then
      log "building ${tool} ${ETCD_VERSION} (about 30s)"
      build_etcd_module "${root}/.cache/envtest/build-${tool}" "${assets}" "${tool}" "go.etcd.io/etcd/${tool}/v3"
    fi
  done
}
locked etcd need_etcd
# --etcd-only: the unit tests need no more (hack/test-unit.sh).
if [[ "${1:-}" != "--etcd-only" ]]; then
  locked kube need_kube
  locked etcdctl need_etcdctl
fi
echo "${assets}"
