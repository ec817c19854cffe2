#!/usr/bin/env bash
# Builds pinned Kubernetes and etcd binaries from Go modules, for
# hack/envtest-assets.sh and hack/cluster-assets.sh (sourced; set
# KUBE_VERSION, STAGING_VERSION, ETCD_VERSION first). Each build runs in a
# throwaway module under WORK and writes OUT/<binary> atomically.

# build_kube_cmds WORK OUT CMD...: builds k8s.io/kubernetes/cmd/<CMD> for
# each CMD not yet in OUT, stamped with KUBE_VERSION.
build_kube_cmds() {
  local work="$1" out="$2"
  shift 2
  rm -rf "${work}" && mkdir -p "${work}"
  (
    cd "${work}"
    printf 'module kubeassets\n\ngo 1.26\n' > go.mod
    {
      printf '//go:build tools\n\npackage kubeassets\n\nimport (\n'
      for cmd in "$@"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "${cmd}"; done
      printf ')\n'
    } > tools.go
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
    for cmd in "$@"; do
      [[ -x "${out}/${cmd}" ]] && continue
      echo "building ${cmd} ${KUBE_VERSION}" >&2
      GOFLAGS=-mod=mod go build -trimpath -ldflags "${ldflags}" -o "${out}/${cmd}.tmp" "k8s.io/kubernetes/cmd/${cmd}"
      mv "${out}/${cmd}.tmp" "${out}/${cmd}"
    done
  )
  rm -rf "${work}"
}

# build_etcd WORK OUT NAME: builds etcd ETCD_VERSION as OUT/NAME; the
# caller's CGO_ENABLED applies (0 for a static binary).
build_etcd() {
  build_etcd_module "$1" "$2" "$3" go.etcd.io/etcd/server/v3
}

# build_etcd_module WORK OUT NAME MODULE: builds the main package of
# MODULE (go.etcd.io/etcd/server/v3, etcdctl/v3, etcdutl/v3) at
# ETCD_VERSION as OUT/NAME.
build_etcd_module() {
  local work="$1" out="$2" name="$3" module="$4"
  rm -rf "${work}" && mkdir -p "${work}"
  (
    cd "${work}"
    printf 'module etcdassets\n\ngo 1.26\n' > go.mod
    printf '//go:build tools\n\npackage etcdassets\n\nimport _ "%s"\n' "${module}" > tools.go
    go mod edit -require "${module}@${ETCD_VERSION}"
    GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || true
    GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "${out}/${name}.tmp" "${module}"
    mv "${out}/${name}.tmp" "${out}/${name}"
  )
  rm -rf "${work}"
}
