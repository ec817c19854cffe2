#!/usr/bin/env bash
# Static checks: generated code is current, gofmt and go vet are clean.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

echo "verify: generated code"
hack/verify-codegen.sh

echo "verify: gofmt"
unformatted="$(git ls-files -co --exclude-standard '*.go' | xargs -r gofmt -l)"
if [[ -n "${unformatted}" ]]; then
  echo "gofmt needed (run gofmt -w):" >&2
  echo "${unformatted}" >&2
  exit 1
fi

echo "verify: go vet"
go vet ./...
