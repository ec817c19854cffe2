#!/usr/bin/env bash
# Writes a release's SBOMs (CycloneDX JSON), for hack/release.sh:
#
#   hack/release-sbom.sh IMAGE_ARCHIVE REPOSITORY VERSION BINARY_SBOM IMAGE_SBOM
#
# BINARY_SBOM is the module graph of the image's entrypoint, which
# cyclonedx-gomod (pinned in hack/tools/go.mod, built into .cache/tools/bin)
# reads from the binary's build information: the main module, every module
# linked in with its version and go.sum hash, the Go toolchain. IMAGE_SBOM
# is the image's (hack/tools/releasetool image-sbom): the image by its
# digest, each file of its layers with its SHA-256, and the binary's module
# graph nested in the entrypoint's file. Both are reproducible: the same
# image gives the same SBOMs.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if [[ $# -ne 5 ]]; then
  echo "usage: hack/release-sbom.sh IMAGE_ARCHIVE REPOSITORY VERSION BINARY_SBOM IMAGE_SBOM" >&2
  exit 2
fi
image="$(realpath "$1")" repository="$2" version="$3" binary_sbom="$(realpath -m "$4")" image_sbom="$(realpath -m "$5")"

bin="${ROOT}/.cache/tools/bin"
go build -C "${ROOT}/hack/tools" -o "${bin}/" github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod ./releasetool

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
# The entrypoint as the image holds it.
"${bin}/releasetool" extract --image "${image}" --output "${work}/entrypoint"
"${bin}/cyclonedx-gomod" bin -json -noserial -notimestamp -version "${version}" -output "${binary_sbom}" "${work}/entrypoint"
"${bin}/releasetool" image-sbom --image "${image}" --binary-sbom "${binary_sbom}" \
  --repository "${repository}" --version "${version}" --output "${image_sbom}"
