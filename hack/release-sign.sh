#!/usr/bin/env bash
# Signs a release's files with SIGNING_KEY, as cosign sign-blob does
# (hack/release.sh runs it when SIGNING_KEY is set):
#
#   SIGNING_KEY=cosign.key [COSIGN_PASSWORD=...] hack/release-sign.sh DIR FILE...
#
# For each FILE (relative to DIR) it writes FILE.sig, the base64 of an ASN.1
# DER ECDSA signature over the file's SHA-256, and DIR/cosign.pub, the key's
# public half. Either of these verifies a file:
#
#   cosign verify-blob --key cosign.pub --signature FILE.sig --insecure-ignore-tlog=true FILE
#   openssl dgst -sha256 -verify cosign.pub -signature <(base64 -d FILE.sig) FILE
#
# SIGNING_KEY is a PEM private key: cosign generate-key-pair's encrypted key
# (its password in COSIGN_PASSWORD, as cosign reads it), or an unencrypted
# PKCS#8 or SEC 1 key (openssl ecparam -name prime256v1 -genkey). The
# signatures are not uploaded to a transparency log, hence cosign's
# --insecure-ignore-tlog (cosign v3.1.3 verifies them so, and signs the same
# bytes from a key of cosign generate-key-pair). The
# signer is hack/tools/releasetool (github.com/sigstore/sigstore's signature
# package, pinned in hack/tools/go.mod), built into .cache/tools/bin.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if [[ -z "${SIGNING_KEY:-}" || $# -lt 2 ]]; then
  echo "usage: SIGNING_KEY=KEY hack/release-sign.sh DIR FILE..." >&2
  exit 2
fi
key="$(realpath "${SIGNING_KEY}")"
dir="$1"
shift
bin="${ROOT}/.cache/tools/bin"
go build -C "${ROOT}/hack/tools" -o "${bin}/releasetool" ./releasetool
cd "${dir}"
"${bin}/releasetool" sign --key "${key}" --public-key cosign.pub "$@"
"${bin}/releasetool" verify --key cosign.pub "$@" >&2
