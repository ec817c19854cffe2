#!/usr/bin/env bash
# Builds VictoriaLogs' one program, victoria-logs, from its Go module at a
# pinned version and caches it in .cache/victorialogs/<version>. Prints the
# directory on stdout, so:
#
#   export VICTORIALOGS_ASSETS="$(hack/victorialogs-assets.sh)"
#
# The same binary is every role: single-node without -storageNode (also a
# cluster's vlstorage), vlinsert with -storageNode=... -select.disable and
# vlselect with -storageNode=... -insert.disable. Cold, it takes about two
# minutes on 2 cores (its modules downloaded); cached afterwards.
#
# Nothing is downloaded except Go modules through the module proxy.
set -euo pipefail

VICTORIALOGS_VERSION="${VICTORIALOGS_VERSION:-v1.52.1}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
assets="${root}/.cache/victorialogs/${VICTORIALOGS_VERSION}"
mkdir -p "${assets}"

log() { echo "victorialogs-assets: $*" >&2; }

if [[ ! -x "${assets}/victoria-logs" ]]; then
  log "building victoria-logs ${VICTORIALOGS_VERSION} (about two minutes, cached afterwards)"
  work="${root}/.cache/victorialogs/build-${VICTORIALOGS_VERSION}"
  rm -rf "${work}" && mkdir -p "${work}"
  (
    cd "${work}"
    printf 'module victorialogsassets\n\ngo 1.26.5\n' > go.mod
    printf '//go:build tools\n\npackage victorialogsassets\n\nimport _ "github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs"\n' > tools.go
    go mod edit -require "github.com/VictoriaMetrics/VictoriaLogs@${VICTORIALOGS_VERSION}"
    GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || true
    # Pure Go (zstd included), as the server is built.
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
      -ldflags "-s -w -X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version=victoria-logs-${VICTORIALOGS_VERSION}" \
      -o "${assets}/victoria-logs.tmp" github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs
    mv "${assets}/victoria-logs.tmp" "${assets}/victoria-logs"
  )
  rm -rf "${work}"
fi
echo "${assets}"
