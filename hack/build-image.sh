#!/usr/bin/env bash
# Builds the events-apiserver container image without a container engine:
# a static binary stamped with hack/ldflags.sh, assembled by
# hack/tools/imagebuild (go-containerregistry, pinned in hack/tools/go.mod)
# into one archive that is an OCI layout with a Docker manifest.json beside
# it (docker load, podman load, skopeo oci-archive:, crane push all read it).
#
#   hack/build-image.sh [ARCHIVE]     default _output/events-apiserver-image.tar
#
# IMAGE (default events-apiserver:<version>, with + replaced by -) names it;
# GOARCH picks the architecture. The Dockerfile builds the same image.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

output="${1:-_output/events-apiserver-image.tar}"
mkdir -p "$(dirname "${output}")" _output/image
eval "$(hack/ldflags.sh --env)"
arch="${GOARCH:-$(go env GOARCH)}"
image="${IMAGE:-events-apiserver:${VERSION//+/-}}"

echo "image: building ${arch} binary ${VERSION}" >&2
CGO_ENABLED=0 GOOS=linux GOARCH="${arch}" go build -trimpath \
  -ldflags "$(hack/ldflags.sh)" -o _output/image/events-apiserver ./cmd/events-apiserver

echo "image: assembling ${image}" >&2
go run -C hack/tools ./imagebuild \
  --binary "${ROOT}/_output/image/events-apiserver" \
  --output "$(cd "$(dirname "${output}")" && pwd)/$(basename "${output}")" \
  --tag "${image}" --version "${VERSION}" --revision "${COMMIT}" --created "${DATE}" \
  --os linux --arch "${arch}"
