#!/usr/bin/env bash
# Builds the node and control-plane binaries a one-node cluster needs beyond
# hack/envtest-assets.sh's kube-apiserver, kubectl and etcd: kubelet,
# kube-scheduler, kube-controller-manager and kube-proxy at the same pinned
# Kubernetes version, CoreDNS, and a static etcd (etcd-static, for an image:
# the envtest etcd links libc), from Go modules. They are cached beside the
# envtest assets, in .cache/envtest/<versions>; the directory is printed on
# stdout, so:
#
#   assets="$(hack/cluster-assets.sh)"
#
# About 10 minutes of CPU from nothing on 2 cores (less with kube-apiserver's
# build cache warm), seconds once cached. test/e2e uses them.
#
# Nothing is downloaded except Go modules through the module proxy.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
STAGING_VERSION="${STAGING_VERSION:-v0.37.2}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.15.0}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The envtest assets first: same directory, and kube-apiserver's build cache
# makes these builds faster.
assets="$("${root}/hack/envtest-assets.sh")"

log() { echo "cluster-assets: $*" >&2; }

# shellcheck source=hack/lib/kube-build.sh
source "${root}/hack/lib/kube-build.sh"

kube_cmds=(kubelet kube-scheduler kube-controller-manager kube-proxy)

build_coredns() {
  local work="${root}/.cache/envtest/build-coredns"
  rm -rf "${work}" && mkdir -p "${work}"
  (
    cd "${work}"
    printf 'module clusterdns\n\ngo 1.26\n' > go.mod
    # CoreDNS with the plugins the test cluster's Corefile uses, as CoreDNS
    # documents for a build of one's own: its main links every plugin,
    # cloud SDKs included, and takes several times as long to build.
    cat > main.go <<'GO'
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	dnsserver.Directives = []string{"bind", "ready", "health", "errors", "cache", "kubernetes"}
	coremain.Run()
}
GO
    go mod edit -require "github.com/coredns/coredns@${COREDNS_VERSION}"
    GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || true
    log "building coredns ${COREDNS_VERSION} (bind, ready, health, errors, cache, kubernetes)"
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "${assets}/coredns.tmp" .
    mv "${assets}/coredns.tmp" "${assets}/coredns"
  )
  rm -rf "${work}"
}

# Held while building, as in hack/envtest-assets.sh: make test builds these in
# the background while the e2e suite may already ask for them.
exec 9>"${assets}/.cluster.lock"
flock 9
missing=false
for cmd in "${kube_cmds[@]}"; do [[ -x "${assets}/${cmd}" ]] || missing=true; done
if ${missing}; then
  log "building ${kube_cmds[*]} ${KUBE_VERSION} (about 10 minutes on 2 cores, cached afterwards)"
  build_kube_cmds "${root}/.cache/envtest/build-cluster" "${assets}" "${kube_cmds[@]}"
fi
if [[ ! -x "${assets}/coredns" ]]; then
  build_coredns
fi
if [[ ! -x "${assets}/etcd-static" ]]; then
  log "building a static etcd ${ETCD_VERSION}"
  CGO_ENABLED=0 build_etcd "${root}/.cache/envtest/build-etcd-static" "${assets}" etcd-static
fi
echo "${assets}"
