#!/usr/bin/env bash
# Installs the host packages test/e2e's one-node cluster needs, when one is
# missing: containerd (with ctr, to import the locally built images), runc,
# the CNI plugins (bridge, host-local, loopback, portmap in /usr/lib/cni),
# iptables (kube-proxy) and iproute2. Debian packages, through apt-get;
# needs root. Nothing else is installed. It runs on the host, before the
# suite enters its sandbox, whose network namespace has no route out.
set -o errexit -o nounset -o pipefail

need=()
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null || need+=(runc)
[[ -x /usr/lib/cni/bridge ]] || need+=(containernetworking-plugins)
command -v iptables >/dev/null || need+=(iptables)
command -v ip >/dev/null || need+=(iproute2)
command -v unshare >/dev/null || need+=(util-linux)
if ((${#need[@]} == 0)); then
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  echo "cluster-packages: missing ${need[*]}; run as root or install them" >&2
  exit 1
fi
echo "cluster-packages: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
# The package starts containerd as a system service where there is an init
# system; the tests run their own, with their own state.
if command -v systemctl >/dev/null && systemctl is-active --quiet containerd 2>/dev/null; then
  systemctl disable --now containerd >&2 || true
fi
