#!/usr/bin/env bash
# For clusters without cert-manager: makes a CA and a serving certificate for
# events-apiserver.events-apiserver.svc with openssl, and writes a kustomize
# overlay that installs them instead of the cert-manager resources:
#
#   hack/gen-serving-cert.sh OUT_DIR [OVERLAY]
#   kubectl apply -k OUT_DIR
#
# OVERLAY is the overlay to build on (default: artifacts/overlays/default;
# artifacts/overlays/external-etcd works too), or a release's install
# manifest (events-apiserver.yaml of make release). OUT_DIR gets ca.crt, ca.key,
# tls.crt, tls.key and kustomization.yaml, which
#   - removes the overlay's cert-manager Issuers and Certificates and the
#     APIService's cert-manager.io/inject-ca-from annotation,
#   - generates the Secret events-apiserver-serving-cert (tls.crt, tls.key, ca.crt),
#   - copies ca.crt into the APIService's spec.caBundle,
#   - when OVERLAY runs the bundled etcd (components/bundled-etcd), also makes
#     its CA (etcd/ca.crt, etcd/ca.key), the members' certificate and the
#     server's client certificate, and generates the Secrets events-etcd-member
#     and events-apiserver-etcd-client. On overlays/offload the etcd CA is the
#     cluster's: give its files as ETCD_CA_CERT and ETCD_CA_KEY (copied to
#     etcd/), and the name kube-apiserver dials as OFFLOAD_ETCD_NAME (default
#     events-etcd.cluster.example), which the members' certificate then holds.
# Keep OUT_DIR private (ca.key signs anything the aggregator will trust as this
# server). Running the script again keeps an existing CA, so the caBundle stays
# the same, and issues a new serving certificate (valid SERVING_DAYS, default
# 365; the server reloads rotated files). Needs openssl and realpath.
set -o errexit -o nounset -o pipefail

usage() { echo "usage: $0 OUT_DIR [OVERLAY]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$1"
overlay="${2:-${ROOT}/artifacts/overlays/default}"
[[ -f "${overlay}/kustomization.yaml" || -f "${overlay}" ]] || { echo "$0: ${overlay} is neither a manifest nor a directory with a kustomization.yaml" >&2; exit 2; }

NAMESPACE=events-apiserver
SERVICE=events-apiserver
CA_DAYS="${CA_DAYS:-3650}"
SERVING_DAYS="${SERVING_DAYS:-365}"

mkdir -p "${out}"
out="$(cd "${out}" && pwd)"
overlay="$(realpath "${overlay}")"

# builds_on OVERLAY NAME: whether the kustomization in the directory
# OVERLAY, or one it builds on through a relative path, includes a
# directory named NAME; for a manifest, whether it holds what NAME adds.
builds_on() {
  local dir="$1" entry
  if [[ -f "${dir}" ]]; then
    case "$2" in
      offload) grep -q -- '--events-shared-with-kube-apiserver' "${dir}" ;;
      bundled-etcd) grep -q -- '--initial-cluster-token=events-etcd' "${dir}" ;;
      victorialogs) grep -q -- '--archive-url=https://events-victorialogs' "${dir}" ;;
      *) return 1 ;;
    esac
    return
  fi
  for entry in $(sed -n 's/^[[:space:]]*-[[:space:]]*\(\.[^[:space:]#]*\)[[:space:]]*$/\1/p' "${dir}/kustomization.yaml"); do
    [[ -f "${dir}/${entry}/kustomization.yaml" ]] || continue
    [[ "$(basename "${entry}")" == "$2" ]] && return 0
    builds_on "${dir}/${entry}" "$2" && return 0
  done
  return 1
}

# overlays/offload: the etcd certificates are signed by the cluster's etcd CA,
# which the caller gives (ETCD_CA_CERT, ETCD_CA_KEY: with kubeadm
# /etc/kubernetes/pki/etcd/ca.{crt,key}); the members' certificate also
# carries the name kube-apiserver dials (OFFLOAD_ETCD_NAME).
offload=false
if [[ "$(basename "${overlay}")" == offload ]] || builds_on "${overlay}" offload; then
  if [[ -z "${ETCD_CA_CERT:-}" || -z "${ETCD_CA_KEY:-}" ]]; then
    echo "$0: overlays/offload signs its etcd certificates with the cluster's etcd CA: set ETCD_CA_CERT and ETCD_CA_KEY to its files" >&2
    exit 2
  fi
  offload=true
fi
OFFLOAD_ETCD_NAME="${OFFLOAD_ETCD_NAME:-events-etcd.cluster.example}"

umask 077

if [[ ! -s "${out}/ca.crt" || ! -s "${out}/ca.key" ]]; then
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
    -keyout "${out}/ca.key" -out "${out}/ca.crt" -days "${CA_DAYS}" \
    -subj "/CN=${SERVICE}-ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  echo "$0: new CA in ${out}/ca.crt" >&2
else
  echo "$0: reusing the CA in ${out}/ca.crt" >&2
fi

# The aggregator dials <service>.<namespace>.svc and checks that name.
ext="$(mktemp)"
csr="$(mktemp)"
trap 'rm -f "${ext}" "${csr}"' EXIT
cat > "${ext}" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:${SERVICE}.${NAMESPACE}.svc,DNS:${SERVICE}.${NAMESPACE}.svc.cluster.local
EOF
openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
  -keyout "${out}/tls.key" -out "${csr}" -subj "/CN=${SERVICE}.${NAMESPACE}.svc" 2>/dev/null
openssl x509 -req -in "${csr}" -CA "${out}/ca.crt" -CAkey "${out}/ca.key" -CAcreateserial \
  -out "${out}/tls.crt" -days "${SERVING_DAYS}" -extfile "${ext}" 2>/dev/null
rm -f "${out}/ca.srl"
openssl verify -CAfile "${out}/ca.crt" "${out}/tls.crt" >/dev/null

# The bundled etcd's CA, its members' certificate (for clients and peers, on
# every member's name) and the server's client certificate, as
# components/bundled-etcd/certificates.yaml has cert-manager make them.
etcd_secrets=""
if builds_on "${overlay}" bundled-etcd; then
  mkdir -p "${out}/etcd"
  if ${offload}; then
    cp "${ETCD_CA_CERT}" "${out}/etcd/ca.crt"
    cp "${ETCD_CA_KEY}" "${out}/etcd/ca.key"
  elif [[ ! -s "${out}/etcd/ca.crt" || ! -s "${out}/etcd/ca.key" ]]; then
    openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
      -keyout "${out}/etcd/ca.key" -out "${out}/etcd/ca.crt" -days "${CA_DAYS}" -subj "/CN=events-etcd-ca" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  fi
  peer="events-etcd-peer.${NAMESPACE}.svc"
  # etcd_cert NAME CN EXTENDED_KEY_USAGE [SUBJECT_ALT_NAMES]
  etcd_cert() {
    printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n' "$3" > "${ext}"
    [[ -z "${4:-}" ]] || echo "subjectAltName=$4" >> "${ext}"
    openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
      -keyout "${out}/etcd/$1.key" -out "${csr}" -subj "/CN=$2" 2>/dev/null
    openssl x509 -req -in "${csr}" -CA "${out}/etcd/ca.crt" -CAkey "${out}/etcd/ca.key" -CAcreateserial \
      -out "${out}/etcd/$1.crt" -days "${SERVING_DAYS}" -extfile "${ext}" 2>/dev/null
    rm -f "${out}/etcd/ca.srl"
  }
  member_names="DNS:*.${peer},DNS:*.${peer}.cluster.local,DNS:events-etcd.${NAMESPACE}.svc,DNS:events-etcd.${NAMESPACE}.svc.cluster.local,DNS:localhost,IP:127.0.0.1"
  ! ${offload} || member_names+=",DNS:${OFFLOAD_ETCD_NAME}"
  etcd_cert member events-etcd serverAuth,clientAuth "${member_names}"
  etcd_cert client events-apiserver clientAuth
  etcd_secrets="$(for secret in events-etcd-member:member events-apiserver-etcd-client:client; do cat <<EOS
- name: ${secret%%:*}
  namespace: ${NAMESPACE}
  type: kubernetes.io/tls
  files:
  - tls.crt=etcd/${secret#*:}.crt
  - tls.key=etcd/${secret#*:}.key
  - ca.crt=etcd/ca.crt
  options:
    disableNameSuffixHash: true
EOS
done)"
fi

# The archive's CA, VictoriaLogs' serving certificate (the archive's address,
# and each single node's or storage node's name on its headless Service) and
# the password the server and VictoriaLogs share, as
# components/victorialogs/certificates.yaml has cert-manager make them.
archive_secrets=""
if builds_on "${overlay}" victorialogs || builds_on "${overlay}" victorialogs-cluster; then
  mkdir -p "${out}/victorialogs"
  vl="${out}/victorialogs"
  if [[ ! -s "${vl}/ca.crt" || ! -s "${vl}/ca.key" ]]; then
    openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
      -keyout "${vl}/ca.key" -out "${vl}/ca.crt" -days "${CA_DAYS}" -subj "/CN=events-victorialogs-ca" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  fi
  names=""
  for host in "events-victorialogs.${NAMESPACE}.svc" "*.events-victorialogs.${NAMESPACE}.svc" "*.events-vlstorage.${NAMESPACE}.svc"; do
    names+="${names:+,}DNS:${host},DNS:${host}.cluster.local"
  done
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=%s\n' "${names}" > "${ext}"
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
    -keyout "${vl}/tls.key" -out "${csr}" -subj "/CN=events-victorialogs.${NAMESPACE}.svc" 2>/dev/null
  openssl x509 -req -in "${csr}" -CA "${vl}/ca.crt" -CAkey "${vl}/ca.key" -CAcreateserial \
    -out "${vl}/tls.crt" -days "${SERVING_DAYS}" -extfile "${ext}" 2>/dev/null
  rm -f "${vl}/ca.srl"
  if [[ ! -s "${vl}/password" ]]; then
    openssl rand -hex 32 > "${vl}/password"
  fi
  archive_secrets="$(cat <<EOS
- name: events-victorialogs-tls
  namespace: ${NAMESPACE}
  type: kubernetes.io/tls
  files:
  - tls.crt=victorialogs/tls.crt
  - tls.key=victorialogs/tls.key
  - ca.crt=victorialogs/ca.crt
  options:
    disableNameSuffixHash: true
- name: events-victorialogs-auth
  namespace: ${NAMESPACE}
  files:
  - tls.key=victorialogs/password
  options:
    disableNameSuffixHash: true
EOS
)"
fi

if [[ -f "${overlay}" ]]; then
  # kustomize reads files below the kustomization only: a copy of the manifest.
  base="$(basename "${overlay}")"
  [[ "${overlay}" == "${out}/${base}" ]] || cp "${overlay}" "${out}/${base}"
else
  base="$(realpath --relative-to="${out}" "${overlay}")"
fi
cat > "${out}/kustomization.yaml" <<EOF
# Generated by hack/gen-serving-cert.sh: ${base} with a serving certificate
# made by openssl instead of cert-manager.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ${base}
patches:
# Every cert-manager object goes, the bundled etcd's too.
- target:
    group: cert-manager.io
    kind: Certificate
  patch: |-
    \$patch: delete
    apiVersion: cert-manager.io/v1
    kind: Certificate
    metadata:
      name: any
- target:
    group: cert-manager.io
    kind: Issuer
  patch: |-
    \$patch: delete
    apiVersion: cert-manager.io/v1
    kind: Issuer
    metadata:
      name: any
- target: # every APIService of the server
    group: apiregistration.k8s.io
    kind: APIService
  patch: |-
    - op: remove
      path: /metadata/annotations/cert-manager.io~1inject-ca-from
secretGenerator:
- name: ${SERVICE}-serving-cert
  namespace: ${NAMESPACE}
  type: kubernetes.io/tls
  files:
  - tls.crt
  - tls.key
  - ca.crt
  options:
    # The Deployment mounts this name; the server reloads rotated files.
    disableNameSuffixHash: true
${etcd_secrets}
${archive_secrets}
replacements:
- source:
    kind: Secret
    name: ${SERVICE}-serving-cert
    namespace: ${NAMESPACE}
    fieldPath: data.[ca.crt]
  targets:
  - select: # every APIService of the server
      group: apiregistration.k8s.io
      kind: APIService
    fieldPaths:
    - spec.caBundle
    options:
      create: true
EOF

cat <<EOF
Wrote ${out}/kustomization.yaml (on ${base}), ca.crt, ca.key, tls.crt, tls.key${etcd_secrets:+, etcd/ (the bundled etcd: ca.crt, ca.key, member and client certificates)}${archive_secrets:+, victorialogs/ (the archive: ca.crt, ca.key, serving certificate, password)}.
Install with:
  kubectl apply -k ${out}
EOF
