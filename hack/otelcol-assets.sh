#!/usr/bin/env bash
# Builds the OpenTelemetry Collector the export's tests send to (the OTLP
# receiver and the file exporter, hack/tools/otelcol) from its Go modules,
# pinned in hack/tools/otelcol/go.mod, and caches it in
# .cache/otelcol/<version>. Prints the directory on stdout, so:
#
#   export OTELCOL_ASSETS="$(hack/otelcol-assets.sh)"
#
# Concurrent callers wait for one build (flock). Nothing is downloaded
# except Go modules through the module proxy.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="${root}/hack/tools/otelcol"
# The version is the Collector release every module is pinned at.
OTELCOL_VERSION="$(cd "${src}" && go list -m -f '{{.Version}}' go.opentelemetry.io/collector/otelcol)"
assets="${root}/.cache/otelcol/${OTELCOL_VERSION}"
mkdir -p "${assets}"

log() { echo "otelcol-assets: $*" >&2; }

exec 9>"${assets}.lock"
flock 9
# A build of other sources at the same version (main.go changed) is redone.
stamp="$(cat "${src}/go.mod" "${src}/go.sum" "${src}/main.go" | sha256sum | cut -d' ' -f1)"
if [[ ! -x "${assets}/otelcol" || "$(cat "${assets}/stamp" 2>/dev/null)" != "${stamp}" ]]; then
  log "building otelcol ${OTELCOL_VERSION} (cached afterwards)"
  (
    cd "${src}"
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${OTELCOL_VERSION}" \
      -o "${assets}/otelcol.tmp" .
  )
  mv "${assets}/otelcol.tmp" "${assets}/otelcol"
  echo "${stamp}" > "${assets}/stamp"
fi
echo "${assets}"
