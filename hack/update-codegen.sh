#!/usr/bin/env bash
# Regenerates ALL generated code:
#   - zz_generated.{deepcopy,conversion,defaults}.go   (gen_helpers)
#   - generated.proto + generated.pb.go for pkg/apis/core/v1,
#     pkg/apis/events/v1beta1 and pkg/apis/events/v1 (go-to-protobuf)
#   - pkg/generated/openapi and zz_generated.model_name.go (openapi-gen)
#   - pkg/generated/{clientset,listers,informers} (client-, lister-, informer-gen)
#
# Needs nothing installed by hand. The generators (and goimports) are built
# into .cache/bin from the versions pinned by the tool directives in go.mod.
# protoc comes from Debian's protobuf-compiler: installed with apt-get when
# missing and we are root, otherwise the script stops and says so. Any protoc
# 3.x works: it only parses the .proto files, protoc-gen-gogo writes the Go.
#
# Time on the 2-core dev machine (measured): ~2.5 min cold (empty Go build
# cache, protoc installed by apt-get), ~16 s warm. Set CODEGEN_GOBIN to reuse
# another tool dir (hack/verify-codegen.sh does).
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
MODULE="$(go list -m)"
BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"
export GOBIN="${CODEGEN_GOBIN:-${ROOT}/.cache/bin}"
mkdir -p "${GOBIN}"
export PATH="${GOBIN}:${PATH}"

# Versioned API packages that have protobuf and clients, importees first
# (the events groups embed core/v1's ObjectReference and EventSource).
PROTO_PACKAGES=(
  "${MODULE}/pkg/apis/core/v1"
  "${MODULE}/pkg/apis/events/v1beta1"
  "${MODULE}/pkg/apis/events/v1"
)
# apimachinery packages our types reference. The "-" prefix makes
# go-to-protobuf read them (to resolve message names and imports) without
# writing anything into the read-only module cache. Same set kubernetes uses.
APIMACHINERY_PACKAGES=(
  -k8s.io/apimachinery/pkg/util/intstr
  -k8s.io/apimachinery/pkg/api/resource
  -k8s.io/apimachinery/pkg/runtime/schema
  -k8s.io/apimachinery/pkg/runtime
  -k8s.io/apimachinery/pkg/apis/meta/v1
)

log() { echo "+++ [update-codegen] $*" >&2; }

# The protoc major version the generated code is made with.
PROTOC_MAJOR=3

# ensure_protoc makes sure protoc is on PATH, installing Debian's
# protobuf-compiler when we can (root + apt-get), failing clearly otherwise.
ensure_protoc() {
  if ! command -v protoc >/dev/null 2>&1 && [[ "$(id -u)" == "0" ]] && command -v apt-get >/dev/null 2>&1; then
    log "protoc not found; installing Debian package protobuf-compiler"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -qq --no-install-recommends protobuf-compiler >/dev/null; then
      # The package lists may be missing or stale on a fresh machine.
      apt-get update -qq
      apt-get install -y -qq --no-install-recommends protobuf-compiler >/dev/null
    fi
  fi
  if ! command -v protoc >/dev/null 2>&1; then
    echo "ERROR: protoc not found. Install it (Debian/Ubuntu: apt-get install protobuf-compiler," >&2
    echo "       or any protoc 3.x on PATH) and re-run ${BASH_SOURCE[0]}." >&2
    exit 1
  fi
  # Pinned major: protoc only parses the .proto files (protoc-gen-gogo writes
  # the Go), and any 3.x (Debian ships 3.21) gives the same output.
  local version
  version="$(protoc --version)"
  if [[ "${version}" != "libprotoc ${PROTOC_MAJOR}."* ]]; then
    echo "ERROR: ${version} found; the generated code is made with libprotoc ${PROTOC_MAJOR}.x (Debian: protobuf-compiler)." >&2
    exit 1
  fi
  log "using ${version}"
}

# module_dir prints the module cache directory of a module in our build list,
# downloading it first if needed.
module_dir() {
  local dir
  dir="$(go list -m -f '{{.Dir}}' "$1")"
  if [[ -z "${dir}" ]]; then
    go mod download "$1"
    dir="$(go list -m -f '{{.Dir}}' "$1")"
  fi
  echo "${dir}"
}

TMP_DIR="$(mktemp -d)"
trap 'rm -rf "${TMP_DIR}"' EXIT # only symlinks and scratch files: rm does not follow them

log "building tools into ${GOBIN}"
go install \
  golang.org/x/tools/cmd/goimports \
  k8s.io/code-generator/cmd/go-to-protobuf \
  k8s.io/code-generator/cmd/go-to-protobuf/protoc-gen-gogo
ensure_protoc

CODEGEN_PKG="$(module_dir k8s.io/code-generator)"
APIMACHINERY_DIR="$(module_dir k8s.io/apimachinery)"
GOGO_DIR="$(module_dir github.com/gogo/protobuf)"

# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

log "deepcopy, conversion, defaults"
kube::codegen::gen_helpers \
  --boilerplate "${BOILERPLATE}" \
  "${ROOT}/pkg/apis"

# gen_protobuf runs go-to-protobuf. It wants one GOPATH-like --output-dir
# holding every package by import path (protoc resolves imports and writes
# generated.pb.go there), so build one from symlinks in a temp dir.
gen_protobuf() {
  local gopath="${TMP_DIR}/gopath"
  mkdir -p "${gopath}/$(dirname "${MODULE}")" "${gopath}/k8s.io" "${gopath}/github.com/gogo"
  ln -s "${ROOT}" "${gopath}/${MODULE}"
  ln -s "${APIMACHINERY_DIR}" "${gopath}/k8s.io/apimachinery"
  ln -s "${GOGO_DIR}" "${gopath}/github.com/gogo/protobuf" # github.com/gogo/protobuf/gogoproto/gogo.proto

  go-to-protobuf \
    --go-header-file "${BOILERPLATE}" \
    --output-dir "${gopath}" \
    --proto-import "${GOGO_DIR}/protobuf" `# google/protobuf/descriptor.proto` \
    --apimachinery-packages "$(IFS=,; echo "${APIMACHINERY_PACKAGES[*]}")" \
    --packages "$(IFS=,; echo "${PROTO_PACKAGES[*]}")" \
    --drop-gogo-go
}
log "protobuf for ${#PROTO_PACKAGES[@]} packages"
gen_protobuf

log "openapi"
kube::codegen::gen_openapi \
  --output-dir "${ROOT}/pkg/generated/openapi" \
  --output-pkg "${MODULE}/pkg/generated/openapi" \
  --report-filename "${ROOT}/hack/api-rules-violations.list" \
  --update-report \
  --output-model-name-file zz_generated.model_name.go \
  --boilerplate "${BOILERPLATE}" \
  "${ROOT}/pkg/apis"

# Clients for core/v1 (empty +groupName: client-gen names it "core" and uses
# /api), events.k8s.io/v1beta1 and v1. JSON on the wire by default.
log "clientset, listers, informers"
# gen_client greps these for stale files; on a first run they do not exist.
mkdir -p "${ROOT}/pkg/generated/"{clientset,listers,informers}
kube::codegen::gen_client \
  --with-watch \
  --output-dir "${ROOT}/pkg/generated" \
  --output-pkg "${MODULE}/pkg/generated" \
  --boilerplate "${BOILERPLATE}" \
  "${ROOT}/pkg/apis"
