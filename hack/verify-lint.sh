#!/usr/bin/env bash
# golangci-lint (.golangci.yml) and logcheck (structured, contextual klog
# calls, the Kubernetes logging convention), both pinned in hack/tools/go.mod
# and built once into .cache/tools/bin (a few minutes cold; the Go build
# cache makes later builds a relink).
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

BIN="${ROOT}/.cache/tools/bin"
mkdir -p "${BIN}"
echo "lint: building golangci-lint and logcheck (hack/tools/go.mod)"
go build -C hack/tools -o "${BIN}/" \
  github.com/golangci/golangci-lint/v2/cmd/golangci-lint \
  sigs.k8s.io/logtools/logcheck

echo "lint: golangci-lint"
GOLANGCI_LINT_CACHE="${ROOT}/.cache/golangci-lint" "${BIN}/golangci-lint" run --allow-parallel-runners ./...
# pkg/recorder is a module of its own; the same configuration applies.
(cd pkg/recorder && GOLANGCI_LINT_CACHE="${ROOT}/.cache/golangci-lint" "${BIN}/golangci-lint" run --allow-parallel-runners --config "${ROOT}/.golangci.yml" ./...)

echo "lint: logcheck (structured and contextual logging)"
# Generated code is not ours to fix.
packages="$(go list ./... | grep -v '/pkg/generated/')"
# shellcheck disable=SC2086
"${BIN}/logcheck" -check-contextual -check-value -config hack/logcheck.conf ${packages}
