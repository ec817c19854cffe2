#!/usr/bin/env bash
# Builds a release into RELEASE_DIR (default _output/release):
#
#   make release VERSION=v0.1.0 [IMAGE_REPOSITORY=ghcr.io/kube-events/events-apiserver]
#
#   events-apiserver-image-<version>.tar  the image (OCI layout + docker manifest), tagged
#                                         <repository>:<version>; push it with crane or skopeo
#   events-apiserver.yaml                 one install manifest: overlays/default (mirror mode, bundled
#                                         etcd, the archive, cert-manager) with the image pinned by digest
#   events-apiserver-<version>.tgz        the Helm chart, its image pinned by the same digest
#   release-notes.md                      the version's section of CHANGELOG.md (or its Unreleased
#                                         section) and how to install
#   kubectl-eventtree_<version>_<os>_<arch>.tar.gz, eventtree.yaml
#                                         the kubectl plugin for each platform and its krew
#                                         manifest (hack/release-plugin.sh)
#   events-apiserver-<version>.cdx.json   the SBOM of the binary's module graph (CycloneDX)
#   events-apiserver-image-<version>.cdx.json
#                                         the SBOM of the image: its digest, its files, the
#                                         binary's modules (hack/release-sbom.sh)
#   SHA256SUMS                            the checksums of the above
#
# With SIGNING_KEY (a cosign or PEM private key; COSIGN_PASSWORD for an
# encrypted one), hack/release-sign.sh signs the image archive, the manifest
# and SHA256SUMS as cosign sign-blob does: <file>.sig beside each, and
# cosign.pub, the key's public half (cosign verify-blob --key cosign.pub
# --signature <file>.sig --insecure-ignore-tlog=true <file>).
#
# The same commit and VERSION give the same image, digest and manifest
# (hack/build-image.sh is reproducible); helm stamps the chart's package with
# the time it was built; the SBOMs are reproducible too.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

VERSION="${VERSION:-${1:-}}"
if ! [[ "${VERSION}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "release: VERSION=${VERSION:-<unset>}: want a semantic version such as v0.1.0 (make release VERSION=v0.1.0)" >&2
  exit 2
fi
repository="${IMAGE_REPOSITORY:-ghcr.io/kube-events/events-apiserver}"
out="${RELEASE_DIR:-_output/release}"
rm -rf "${out}"
mkdir -p "${out}"
out="$(cd "${out}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

# The image, and its digest from the builder's last line: "<archive> <ref>@<digest>".
image_archive="${out}/events-apiserver-image-${VERSION}.tar"
built="$(VERSION="${VERSION}" IMAGE="${repository}:${VERSION}" hack/build-image.sh "${image_archive}" | tail -n 1)"
digest="${built##*@}"
if ! [[ "${digest}" =~ ^sha256:[0-9a-f]{64}$ ]]; then
  echo "release: no digest in the image builder's output: ${built}" >&2
  exit 1
fi
echo "release: image ${repository}:${VERSION}@${digest}" >&2
if [[ -n "${SIGNING_KEY:-}" && ! -r "${SIGNING_KEY}" ]]; then
  echo "release: SIGNING_KEY=${SIGNING_KEY}: cannot read it" >&2
  exit 2
fi

# The SBOMs of the binary and of the image.
hack/release-sbom.sh "${image_archive}" "${repository}" "${VERSION}" \
  "${out}/events-apiserver-${VERSION}.cdx.json" "${out}/events-apiserver-image-${VERSION}.cdx.json"

# The manifest: overlays/default with the image by digest. kustomize wants
# the overlay as a relative path.
kubectl="$(hack/envtest-assets.sh)/kubectl"
mkdir -p "${work}/manifest"
cat > "${work}/manifest/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $(realpath --relative-to="${work}/manifest" "${ROOT}/artifacts/overlays/default")
images:
- name: events-apiserver
  newName: ${repository}
  digest: ${digest}
EOF
{
  cat <<EOF
# events-apiserver ${VERSION}: artifacts/overlays/default (mirror mode, the bundled etcd, the
# history archive on one VictoriaLogs node), the image ${repository}:${VERSION} pinned by digest.
# The server makes and renews its certificates itself; overlays/cert-manager has cert-manager
# do it (docs/install.md).
#
#   kubectl apply -f events-apiserver.yaml
EOF
  "${kubectl}" kustomize "${work}/manifest"
} > "${out}/events-apiserver.yaml"

# The chart, its values pinned to the same image.
cp -R charts/events-apiserver "${work}/chart"
# The monitoring files are links into artifacts/; the package holds copies.
rm -rf "${work}/chart/files"
cp -RL charts/events-apiserver/files "${work}/chart/files"
sed -i -E \
  -e "s|^  repository: events-apiserver$|  repository: ${repository}|" \
  -e "s|^  tag: latest$|  tag: ${VERSION}|" \
  -e "s|^  digest: \"\"$|  digest: ${digest}|" \
  "${work}/chart/values.yaml"
for want in "repository: ${repository}" "tag: ${VERSION}" "digest: ${digest}"; do
  grep -q "^  ${want}$" "${work}/chart/values.yaml" || { echo "release: could not set image ${want} in the chart's values" >&2; exit 1; }
done
go -C hack/tools tool helm package "${work}/chart" --version "${VERSION#v}" --app-version "${VERSION}" --destination "${work}" >&2
mv "${work}/events-apiserver-${VERSION#v}.tgz" "${out}/events-apiserver-${VERSION}.tgz"

# The kubectl plugin's archives and krew manifest.
VERSION="${VERSION}" hack/release-plugin.sh "${out}"

# The notes: the version's CHANGELOG section, or the Unreleased one.
section="$(awk -v v="${VERSION}" '
  /^## / { if (found) exit; if ($2 == v || $2 == "[" v "]") { found = 1; next } }
  found { print }' CHANGELOG.md)"
heading="${VERSION}"
if [[ -z "${section//[[:space:]]/}" ]]; then
  section="$(awk '/^## / { if (found) exit; if ($2 == "Unreleased") { found = 1; next } } found { print }' CHANGELOG.md)"
  heading="${VERSION} (CHANGELOG.md has no section for it: its Unreleased changes)"
fi
if [[ -z "${section//[[:space:]]/}" ]]; then
  echo "release: CHANGELOG.md has neither a section ## ${VERSION} nor ## Unreleased" >&2
  exit 1
fi
signed_note=""
if [[ -n "${SIGNING_KEY:-}" ]]; then
  signed_note="
The image archive, \`events-apiserver.yaml\` and \`SHA256SUMS\` are signed (\`<file>.sig\`, cosign blob
signatures, in no transparency log): \`cosign verify-blob --key cosign.pub --signature SHA256SUMS.sig
--insecure-ignore-tlog=true SHA256SUMS\`, with the project's published key."
fi
cat > "${out}/release-notes.md" <<EOF
# events-apiserver ${heading}
${section}

## Install

Image: \`${repository}:${VERSION}@${digest}\` (\`events-apiserver-image-${VERSION}.tar\`; push it
with \`crane push\` or \`skopeo copy oci-archive:...\` to a registry of your own and set the image).

With cert-manager in the cluster:

\`\`\`sh
kubectl apply -f events-apiserver.yaml
\`\`\`

or with Helm: \`helm install events-apiserver events-apiserver-${VERSION}.tgz -n events-apiserver --create-namespace\`. The
server makes and renews its certificates itself.
[docs/install.md](https://github.com/kube-events/events-apiserver/blob/${VERSION}/docs/install.md)
has the rest; \`SHA256SUMS\` holds the files' checksums. The SBOMs (CycloneDX JSON):
\`events-apiserver-${VERSION}.cdx.json\`, the binary's modules, and
\`events-apiserver-image-${VERSION}.cdx.json\`, the image's files and the binary's modules.${signed_note}

The kubectl plugin \`kubectl eventtree\` (an object's ownership tree with its events on a time
axis): \`kubectl-eventtree_${VERSION}_<os>_<arch>.tar.gz\`, and \`eventtree.yaml\` its krew
manifest (\`kubectl krew install --manifest=eventtree.yaml\`).
EOF

chmod 0644 "${out}"/*
(cd "${out}" && sha256sum events-apiserver-image-"${VERSION}".tar events-apiserver.yaml \
  events-apiserver-"${VERSION}".tgz release-notes.md kubectl-eventtree_"${VERSION}"_*.tar.gz eventtree.yaml \
  events-apiserver-"${VERSION}".cdx.json events-apiserver-image-"${VERSION}".cdx.json > SHA256SUMS)
if [[ -n "${SIGNING_KEY:-}" ]]; then
  hack/release-sign.sh "${out}" events-apiserver-image-"${VERSION}".tar events-apiserver.yaml SHA256SUMS
  chmod 0644 "${out}"/*
fi
echo "release: ${VERSION} in ${out}:" >&2
ls -l "${out}" >&2
