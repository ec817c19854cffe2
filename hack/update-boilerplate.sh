#!/usr/bin/env bash
# Adds the license header of hack/boilerplate.go.txt to every hand-written Go
# file that does not start with it, after its build constraints if it has
# any. Files that have it are left alone, so running it again changes
# nothing. A file that already carries another copyright notice is named and
# left for a person to decide, not given a second one.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/boilerplate.sh
source "${ROOT}/hack/boilerplate.sh"

foreign=()
while IFS= read -r file; do
  path="${ROOT}/${file}"
  boilerplate::has_header "${path}" && continue
  if head -n 20 "${path}" | grep -q -i 'copyright'; then
    foreign+=("${file}")
    continue
  fi
  skip="$(boilerplate::constraint_lines "${path}")"
  tmp="$(mktemp "${path}.XXXXXX")"
  {
    head -n "${skip}" "${path}"
    cat "${BOILERPLATE}"
    tail -n "+$((skip + 1))" "${path}"
  } >"${tmp}"
  chmod --reference="${path}" "${tmp}"
  mv "${tmp}" "${path}"
  echo "added the header to ${file}"
done < <(boilerplate::files)

if ((${#foreign[@]} > 0)); then
  echo "left alone, they carry another copyright notice:" >&2
  printf '  %s\n' "${foreign[@]}" >&2
  exit 1
fi
