#!/usr/bin/env bash
# Regenerates docs/reference (flags.md, metrics.md, selectors.md) and the
# values table of charts/events-apiserver/README.md from the code and the
# values.yaml they describe, with hack/gen-reference. Arguments, for
# hack/verify-reference.sh: the directory and the README file to write to
# instead.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
go run ./hack/gen-reference -root "${ROOT}" -out "${1:-${ROOT}/docs/reference}" \
  -chart "${ROOT}/charts/events-apiserver" -chart-readme "${2:-${ROOT}/charts/events-apiserver/README.md}"
