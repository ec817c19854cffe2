#!/usr/bin/env bash
# Fails, showing the difference, when docs/reference or the chart README's
# values table is not what hack/update-reference.sh writes from the current
# code and values.yaml.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TMP_DIR="$(mktemp -d)"
trap 'rm -rf "${TMP_DIR}"' EXIT

"${ROOT}/hack/update-reference.sh" "${TMP_DIR}/reference" "${TMP_DIR}/chart-README.md"
stale=0
diff -ru "${ROOT}/docs/reference" "${TMP_DIR}/reference" || stale=1
diff -u "${ROOT}/charts/events-apiserver/README.md" "${TMP_DIR}/chart-README.md" || stale=1
if [[ "${stale}" != 0 ]]; then
  echo "docs/reference or charts/events-apiserver/README.md is stale: run hack/update-reference.sh (make docs) and commit the result" >&2
  exit 1
fi
