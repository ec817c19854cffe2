#!/usr/bin/env bash
# Builds the kubectl plugin's release files into OUT (hack/release.sh calls
# it; it runs alone too):
#
#   VERSION=v0.1.0 hack/release-plugin.sh OUT
#
#   kubectl-eventtree_<version>_<os>_<arch>.tar.gz  the plugin and LICENSE, for each of
#                                                   PLUGIN_PLATFORMS (linux, darwin: amd64,
#                                                   arm64; windows/amd64)
#   eventtree.yaml                                  plugins/krew/eventtree.yaml rendered: the
#                                                   version, each archive's URL and sha256
#
# The archives are reproducible: the same commit and VERSION give the same
# bytes (a trimmed, stamped build; tar entries sorted, owned by 0, dated at
# the commit; gzip without a name or time).
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

VERSION="${VERSION:-}"
out="${1:?usage: VERSION=vX.Y.Z hack/release-plugin.sh OUT}"
if ! [[ "${VERSION}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "release-plugin: VERSION=${VERSION:-<unset>}: want a semantic version such as v0.1.0" >&2
  exit 2
fi
platforms="${PLUGIN_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64}"
mkdir -p "${out}"
out="$(cd "${out}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

ldflags="$(VERSION="${VERSION}" hack/ldflags.sh)"
mtime="@$(git log -1 --format=%ct 2>/dev/null || echo 0)"
declare -A sums
for platform in ${platforms}; do
  os="${platform%/*}" arch="${platform#*/}"
  bin="kubectl-eventtree"
  [[ "${os}" == windows ]] && bin+=".exe"
  dir="${work}/${os}_${arch}"
  mkdir -p "${dir}"
  CGO_ENABLED=0 GOOS="${os}" GOARCH="${arch}" go build -trimpath -ldflags "${ldflags}" -o "${dir}/${bin}" ./cmd/kubectl-eventtree
  cp LICENSE "${dir}/LICENSE"
  archive="kubectl-eventtree_${VERSION}_${os}_${arch}.tar.gz"
  tar --sort=name --mtime="${mtime}" --owner=0 --group=0 --numeric-owner -C "${dir}" -cf - "${bin}" LICENSE |
    gzip -n -9 > "${out}/${archive}"
  sums["${archive}"]="$(sha256sum "${out}/${archive}" | cut -d' ' -f1)"
  echo "release-plugin: ${archive}" >&2
done

# krew-release-bot's template: {{ .TagName }} is the version, and
# {{ addURIAndSha "URL" .TagName }} the archive's uri and sha256 lines.
# A platform not built is left out of the manifest.
awk -v version="${VERSION}" -v sums="$(for a in "${!sums[@]}"; do echo "${a}=${sums[${a}]}"; done)" '
  BEGIN { n = split(sums, lines, "\n"); for (i = 1; i <= n; i++) { split(lines[i], kv, "="); sum[kv[1]] = kv[2] } }
  function flush() { if (entry != "" && keep) printf "%s", entry; entry = ""; keep = 1 }
  /^#/ { next }
  /^  - selector:/ { flush(); inplatform = 1 }
  {
    line = $0
    gsub(/\{\{ \.TagName \}\}/, version, line)
    if (match(line, /\{\{ addURIAndSha "[^"]*" [^}]*\}\}/)) {
      indent = substr(line, 1, RSTART - 1)
      url = line; sub(/^.*addURIAndSha "/, "", url); sub(/".*$/, "", url)
      file = url; sub(/^.*\//, "", file)
      if (!(file in sum)) { keep = 0 }
      line = indent "uri: " url "\n" indent "sha256: " sum[file]
    }
    if (inplatform) entry = entry line "\n"; else print line
  }
  END { flush() }
' plugins/krew/eventtree.yaml > "${out}/eventtree.yaml"
if grep -q '{{' "${out}/eventtree.yaml"; then
  echo "release-plugin: a template action is left in ${out}/eventtree.yaml" >&2
  exit 1
fi
echo "release-plugin: eventtree.yaml (krew manifest)" >&2
