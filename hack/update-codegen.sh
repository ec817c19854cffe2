#!/usr/bin/env bash
# Regenerates every zz_generated.* file, the OpenAPI definitions and the
# clients under pkg/generated. Needs nothing installed by hand: the
# generators are built from the k8s.io/code-generator version in go.mod.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
MODULE="$(go list -m)"
CODEGEN_PKG="$(go list -m -f '{{.Dir}}' k8s.io/code-generator)"
BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"
export GOBIN="${ROOT}/.cache/bin"
mkdir -p "${GOBIN}"
export PATH="${GOBIN}:${PATH}"

# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

kube::codegen::gen_helpers \
  --boilerplate "${BOILERPLATE}" \
  "${ROOT}/pkg/apis"

kube::codegen::gen_openapi \
  --output-dir "${ROOT}/pkg/generated/openapi" \
  --output-pkg "${MODULE}/pkg/generated/openapi" \
  --report-filename "${ROOT}/hack/api-rules-violations.list" \
  --update-report \
  --output-model-name-file zz_generated.model_name.go \
  --boilerplate "${BOILERPLATE}" \
  "${ROOT}/pkg/apis"
