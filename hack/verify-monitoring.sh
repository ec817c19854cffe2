#!/usr/bin/env bash
# Checks the monitoring kit (artifacts/components/monitoring, which the
# chart reads through links in charts/events-apiserver/files):
#   - the chart's files are links to the component's, so the two cannot drift;
#   - every events_apiserver_* metric the rules and the dashboard name is one
#     the server defines (docs/reference/metrics.md, generated from the code);
#   - every alert's runbook_url is a section of docs/monitoring.md;
#   - promtool checks the rules and runs prometheusrule_test.yaml.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
KIT=artifacts/components/monitoring
RULES="${KIT}/prometheusrule.yaml"
TMP_DIR="$(mktemp -d)"
trap 'rm -rf "${TMP_DIR}"' EXIT
failed=0

for file in prometheusrule.yaml dashboard.json; do
  link="charts/events-apiserver/files/${file}"
  if [[ ! -L "${link}" || "$(realpath "${link}")" != "$(realpath "${KIT}/${file}")" ]]; then
    echo "${link} must be a link to ${KIT}/${file} (ln -sfn ../../../${KIT}/${file} ${link})" >&2
    failed=1
  fi
done

# A histogram's series carry suffixes its definition does not.
# Recording rules' names (level:metric:operations) are not metrics.
for metric in $(grep -ohE '(^|[^:a-z0-9_])events_apiserver_[a-z0-9_]+' "${RULES}" "${KIT}/dashboard.json" | sed -E 's/^[^e]//' | sort -u); do
  base="$(sed -E 's/_(bucket|sum|count)$//' <<<"${metric}")"
  if ! grep -qF "| \`${metric}\` |" docs/reference/metrics.md && ! grep -qF "| \`${base}\` | histogram |" docs/reference/metrics.md; then
    echo "${metric}: the monitoring kit names a metric docs/reference/metrics.md does not list" >&2
    failed=1
  fi
done

for anchor in $(grep -oE 'runbook_url: .*#[a-z0-9-]+$' "${RULES}" | sed 's/.*#//'); do
  if ! grep -E '^#+ ' docs/monitoring.md | sed -E 's/^#+ //' | tr '[:upper:]' '[:lower:]' | tr -d '`' | grep -qxF "${anchor}"; then
    echo "runbook_url #${anchor}: docs/monitoring.md has no such section" >&2
    failed=1
  fi
done
alerts="$(grep -cE '^\s+- alert: ' "${RULES}")"
runbooks="$(grep -cE '^\s+runbook_url: ' "${RULES}")"
if [[ "${alerts}" != "${runbooks}" ]]; then
  echo "${RULES}: ${alerts} alerts but ${runbooks} runbook_urls" >&2
  failed=1
fi

# promtool reads rule groups: the PrometheusRule's spec, one level out.
sed -n '/^spec:$/,$p' "${RULES}" | tail -n +2 | sed 's/^  //' >"${TMP_DIR}/rules.yaml"
cp "${KIT}/prometheusrule_test.yaml" "${TMP_DIR}/"
promtool="$(hack/promtool-assets.sh)/promtool"
"${promtool}" check rules "${TMP_DIR}/rules.yaml"
"${promtool}" test rules "${TMP_DIR}/prometheusrule_test.yaml"

exit "${failed}"
