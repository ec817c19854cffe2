#!/usr/bin/env bash
# Fails, naming them, when hand-written Go files do not start with the
# license header of hack/boilerplate.go.txt; hack/update-boilerplate.sh adds it.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/boilerplate.sh
source "${ROOT}/hack/boilerplate.sh"

missing=()
while IFS= read -r file; do
  boilerplate::has_header "${ROOT}/${file}" || missing+=("${file}")
done < <(boilerplate::files)

if ((${#missing[@]} > 0)); then
  echo "${#missing[@]} Go files do not start with the header of hack/boilerplate.go.txt (run hack/update-boilerplate.sh):" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
