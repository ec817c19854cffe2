#!/usr/bin/env bash
# Every static check, then the unit tests with the race detector:
# generated code is current, protoc is the pinned major, the license header
# on hand-written Go files, the generated reference pages are current,
# the alert rules pass their promtool tests (hack/verify-monitoring.sh),
# gofmt, go vet,
# go mod tidy leaves no diff (the server, pkg/recorder, hack/tools and hack/tools/otelcol modules), golangci-lint
# (with depguard's layers: no package imports one above it; and funlen:
# no function over 80 lines but the ones .golangci.yml lists) and logcheck.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

echo "verify: generated code"
hack/verify-codegen.sh

echo "verify: license headers"
hack/verify-boilerplate.sh

echo "verify: reference pages (docs/reference)"
hack/verify-reference.sh

echo "verify: gofmt"
unformatted="$(git ls-files -co --exclude-standard '*.go' | xargs -r gofmt -l)"
if [[ -n "${unformatted}" ]]; then
  echo "gofmt needed (run gofmt -w):" >&2
  echo "${unformatted}" >&2
  exit 1
fi

echo "verify: go vet"
go vet ./...
# pkg/recorder is a module of its own (what controllers import).
go vet -C pkg/recorder ./...

echo "verify: go mod tidy"
for dir in . pkg/recorder hack/tools hack/tools/otelcol; do
  before_mod="$(cat "${dir}/go.mod")" before_sum="$(cat "${dir}/go.sum")"
  go mod tidy -C "${dir}"
  if [[ "${before_mod}" != "$(cat "${dir}/go.mod")" || "${before_sum}" != "$(cat "${dir}/go.sum")" ]]; then
    echo "go mod tidy changed ${dir}/go.mod or go.sum: commit the result" >&2
    git --no-pager diff -- "${dir}/go.mod" "${dir}/go.sum" >&2
    exit 1
  fi
done

hack/verify-lint.sh

# Last of the static checks: promtool builds once (hack/test.sh starts it
# in the background) while the others run.
echo "verify: monitoring kit (promtool test rules, metric names, runbooks)"
hack/verify-monitoring.sh

hack/test-unit.sh
