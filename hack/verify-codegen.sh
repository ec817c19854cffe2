#!/usr/bin/env bash
# Fails when any generated file is stale: runs hack/update-codegen.sh on a
# copy of the work tree and lists every file the run would add, change or
# remove. The work tree itself is never touched, so it works on a dirty tree
# and in CI (CI=true, no stdin) alike.
#
# Time on the 2-core dev machine (measured on a fresh clone, CI=true): ~2.5 min
# cold (empty Go build cache: builds every generator; installs
# protobuf-compiler through apt-get when protoc is missing, see
# update-codegen.sh), ~18 s warm.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TMP_DIR="$(mktemp -d)"
trap 'rm -rf "${TMP_DIR}"' EXIT

# Snapshot the tree twice: "before" stays as is, "after" is regenerated.
# Build outputs, caches and git metadata are neither inputs nor outputs.
snapshot() {
  mkdir -p "$1"
  tar -C "${ROOT}" \
    --exclude=./.git --exclude=./.cache --exclude=./_output --exclude=./bin \
    -cf - . | tar -C "$1" -xf -
}
snapshot "${TMP_DIR}/before"
cp -a "${TMP_DIR}/before" "${TMP_DIR}/after"

# Reuse the generator binaries of the real tree: same go.mod, same versions.
mkdir -p "${ROOT}/.cache/bin"
if ! CODEGEN_GOBIN="${ROOT}/.cache/bin" "${TMP_DIR}/after/hack/update-codegen.sh" >"${TMP_DIR}/update.log" 2>&1; then
  cat "${TMP_DIR}/update.log" >&2
  echo "ERROR: hack/update-codegen.sh failed (output above)" >&2
  exit 1
fi

stale="$(diff -r -q "${TMP_DIR}/before" "${TMP_DIR}/after" || true)"
if [[ -n "${stale}" ]]; then
  echo "ERROR: generated code is out of date. Stale files:" >&2
  # "Files A and B differ" / "Only in DIR: NAME" -> repo-relative paths.
  sed -E \
    -e "s#^Files ${TMP_DIR}/before/(.*) and .* differ\$#  changed: \\1#" \
    -e "s#^Only in ${TMP_DIR}/before/?(.*): (.*)\$#  removed by update: \\1/\\2#" \
    -e "s#^Only in ${TMP_DIR}/after/?(.*): (.*)\$#  added by update:   \\1/\\2#" \
    <<<"${stale}" >&2
  echo "Run hack/update-codegen.sh and commit the result." >&2
  exit 1
fi
echo "Generated code is up to date."
