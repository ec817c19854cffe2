#!/usr/bin/env bash
# Prints the -ldflags that stamp a build with its version, commit and date
# (k8s.io/component-base/version, shown by --version and served on /version).
#
# VERSION, COMMIT and DATE from the environment win (the Dockerfile passes
# them as build arguments); otherwise they come from git: the nearest v* tag
# (v0.0.0 before the first), commits since, the short commit and "-dirty" for
# local changes; DATE is the commit's time, so that a build is reproducible.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

git_ok() { git rev-parse --git-dir >/dev/null 2>&1; }

commit="${COMMIT:-}"
if [[ -z "${commit}" ]] && git_ok; then
  commit="$(git rev-parse HEAD)"
fi
commit="${commit:-unknown}"

tree_state=""
if git_ok; then
  if [[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
    tree_state=clean
  else
    tree_state=dirty
  fi
fi

version="${VERSION:-}"
if [[ -z "${version}" ]]; then
  if git_ok && git describe --tags --match 'v[0-9]*' --abbrev=0 >/dev/null 2>&1; then
    version="$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null)"
    # v1.2.3-4-gabcdef0 -> v1.2.3-4+gabcdef0: semver build metadata, as Kubernetes does.
    version="$(sed -E 's/-([0-9]+)-g([0-9a-f]+)/-\1+g\2/; s/\+(g[0-9a-f]+)-dirty$/+\1.dirty/' <<<"${version}")"
  elif git_ok; then
    version="v0.0.0-$(git rev-list --count HEAD)+g$(git rev-parse --short=12 HEAD)"
    [[ "${tree_state}" == dirty ]] && version+=".dirty"
  else
    version="v0.0.0-unknown"
  fi
fi

date="${DATE:-}"
if [[ -z "${date}" ]] && git_ok; then
  date="$(TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd)"
fi
date="${date:-1970-01-01T00:00:00Z}"

pkg=k8s.io/component-base/version
flags=(
  "-X ${pkg}.gitVersion=${version}"
  "-X ${pkg}.gitCommit=${commit}"
  "-X ${pkg}.buildDate=${date}"
)
[[ -n "${tree_state}" ]] && flags+=("-X ${pkg}.gitTreeState=${tree_state}")
[[ "${1:-}" == "--env" ]] && { printf 'VERSION=%s\nCOMMIT=%s\nDATE=%s\n' "${version}" "${commit}" "${date}"; exit 0; }
echo "-s -w ${flags[*]}"
