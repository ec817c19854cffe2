#!/usr/bin/env bash
# Fails, showing the difference, when docs/reference is not what
# hack/update-reference.sh writes from the current code.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TMP_DIR="$(mktemp -d)"
trap 'rm -rf "${TMP_DIR}"' EXIT

"${ROOT}/hack/update-reference.sh" "${TMP_DIR}/reference"
if ! diff -ru "${ROOT}/docs/reference" "${TMP_DIR}/reference"; then
  echo "docs/reference is stale: run hack/update-reference.sh (make docs) and commit the result" >&2
  exit 1
fi
