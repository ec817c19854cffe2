#!/usr/bin/env bash
# Regenerates docs/reference (flags.md, metrics.md, selectors.md) from the
# code they describe, with hack/gen-reference.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
go run ./hack/gen-reference -root "${ROOT}" -out "${1:-${ROOT}/docs/reference}"
