#!/usr/bin/env bash
# Builds Prometheus' promtool from its Go module at a pinned version and
# caches it in .cache/promtool/<version>. Prints the directory on stdout, so:
#
#   "$(hack/promtool-assets.sh)/promtool" test rules ...
#
# go install resolves the module graph from Prometheus' own go.mod, so the
# pin is this one version. The build tag remove_all_sd leaves out the
# service discovery plugins (cloud SDKs) that rule tests never use. Cold
# (empty module and build caches) it takes about 3.5 minutes of CPU,
# downloads included: 7 to 9 minutes of wall time on 2 cores shared with
# a CI run. Cached afterwards.
#
# Nothing is downloaded except Go modules through the module proxy.
set -euo pipefail

PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
assets="${root}/.cache/promtool/${PROMETHEUS_VERSION}"
mkdir -p "${assets}"

if [[ ! -x "${assets}/promtool" ]]; then
  echo "promtool-assets: building promtool (prometheus ${PROMETHEUS_VERSION}), cached afterwards" >&2
  (
    # Two builds at once (make verify in two shells) wait for each other.
    flock 9
    if [[ ! -x "${assets}/promtool" ]]; then
      bin="$(mktemp -d "${assets}/build.XXXXXX")"
      trap 'rm -rf "${bin}"' EXIT
      # Outside any module, so that neither the server's go.mod nor a
      # go.work applies.
      cd "${bin}"
      CGO_ENABLED=0 GOBIN="${bin}" GOWORK=off go install -trimpath -tags remove_all_sd \
        -ldflags "-s -w -X github.com/prometheus/common/version.Version=${PROMETHEUS_VERSION}" \
        "github.com/prometheus/prometheus/cmd/promtool@${PROMETHEUS_VERSION}"
      mv "${bin}/promtool" "${assets}/promtool"
    fi
  ) 9>"${assets}/.lock"
fi
echo "${assets}"
