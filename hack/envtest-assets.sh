#!/usr/bin/env bash
# Builds the envtest assets (kube-apiserver, kubectl, etcd) from Go modules at
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

build_kube_apiserver() {
  local work="${root}/.cache/envtest/build-kube-apiserver"
  rm -rf "${work}" && mkdir -p "${work}"
  (
    cd "${work}"
    cat > go.mod <<MOD
module envtestassets

go 1.26
MOD
    cat > tools.go <<'GO'
//go:build tools

package envtestassets

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
    # k8s.io/kubernetes requires its staging modules at v0.0.0 with replace
    # directives to ./staging; point each at its published version instead.
    go mod edit -require "k8s.io/kubernetes@${KUBE_VERSION}"
    go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" >/dev/null
    local kmod
    kmod="$(go env GOMODCACHE)/k8s.io/kubernetes@${KUBE_VERSION}/go.mod"
    grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging' "${kmod}" | awk '{print $1}' | sort -u | while read -r m; do
      go mod edit -replace "${m}=${m}@${STAGING_VERSION}"
    done
    GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || true
    # Without these the binaries report v0.0.0-master, which kubectl cannot parse.
    local v="k8s.io/component-base/version"
    local ldflags="-s -w -X ${v}.gitVersion=${KUBE_VERSION} -X ${v}.gitMajor=1 -X ${v}.gitMinor=$(echo "${KUBE_VERSION}" | cut -d. -f2) -X ${v}.gitTreeState=clean"
    for cmd in kube-apiserver kubectl; do
      GOFLAGS=-mod=mod go build -trimpath -ldflags "${ldflags}" -o "${assets}/${cmd}.tmp" "k8s.io/kubernetes/cmd/${cmd}"
      mv "${assets}/${cmd}.tmp" "${assets}/${cmd}"
    done
  )
  rm -rf "${work}"
}

build_etcd() {
  local work="${root}/.cache/envtest/build-etcd"
  rm -rf "${work}" && mkdir -p "${work}"
  (
    cd "${work}"
    printf 'module envtestetcd\n\ngo 1.26\n' > go.mod
    printf '//go:build tools\n\npackage envtestetcd\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
    go mod edit -require "go.etcd.io/etcd/server/v3@${ETCD_VERSION}"
    GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || true
    GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "${assets}/etcd.tmp" go.etcd.io/etcd/server/v3
    mv "${assets}/etcd.tmp" "${assets}/etcd"
  )
  rm -rf "${work}"
}

need_etcd() {
  if [[ ! -x "${assets}/etcd" ]]; then
    log "building etcd ${ETCD_VERSION} (about 30s)"
    build_etcd
  fi
}
need_kube() {
  if [[ ! -x "${assets}/kube-apiserver" || ! -x "${assets}/kubectl" ]]; then
    log "building kube-apiserver and kubectl ${KUBE_VERSION} (about 5 minutes on 2 cores, cached afterwards)"
    build_kube_apiserver
  fi
}
locked etcd need_etcd
# --etcd-only: the unit tests need no more (hack/test-unit.sh).
if [[ "${1:-}" != "--etcd-only" ]]; then
  locked kube need_kube
fi
echo "${assets}"
