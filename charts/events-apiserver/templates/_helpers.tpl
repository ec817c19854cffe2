{{/* Labels every object carries, as the overlays' `labels:`. */}}
{{- define "events-apiserver.partOf" -}}
app.kubernetes.io/part-of: events-apiserver
{{- end }}

{{/* The namespace of every namespaced object: namespaceOverride, or the release's. */}}
{{- define "events-apiserver.namespace" -}}
{{ default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{/* The server's selector labels. */}}
{{- define "events-apiserver.selector" -}}
app.kubernetes.io/component: apiserver
app.kubernetes.io/name: events-apiserver
{{- end }}

{{/* The bundled etcd's selector labels. */}}
{{- define "events-apiserver.etcdSelector" -}}
app.kubernetes.io/component: etcd
app.kubernetes.io/name: events-etcd
{{- end }}

{{/* The etcd client URLs the server dials. */}}
{{- define "events-apiserver.etcdServers" -}}
{{- if .Values.etcd.bundled -}}
https://events-etcd-0.events-etcd-peer.{{ include "events-apiserver.namespace" $ }}.svc:2379,https://events-etcd-1.events-etcd-peer.{{ include "events-apiserver.namespace" $ }}.svc:2379,https://events-etcd-2.events-etcd-peer.{{ include "events-apiserver.namespace" $ }}.svc:2379
{{- else -}}
{{ .Values.etcd.servers }}
{{- end }}
{{- end }}

{{/* true in the modes where kube-apiserver keeps its events in the bundled etcd. */}}
{{- define "events-apiserver.offload" -}}
{{- if has .Values.mode (list "offload" "takeover") }}true{{ end }}
{{- end }}

{{/* A pod spec's scheduling fields from a values block with nodeSelector, tolerations, affinity and priorityClassName; nothing for the empty defaults. */}}
{{- define "events-apiserver.scheduling" -}}
{{- with .priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The event policy file of eventPolicy, as --event-policy-config reads it. */}}
{{- define "events-apiserver.eventPolicy" -}}
apiVersion: eventpolicy.config.events.k8s.io/v1alpha1
kind: EventPolicy
{{ toYaml .Values.eventPolicy }}
{{- end }}

{{/* The name of the event policy's ConfigMap, with a hash of its content so that a change rolls the pods. */}}
{{- define "events-apiserver.eventPolicyConfigMap" -}}
events-apiserver-event-policy-{{ include "events-apiserver.eventPolicy" . | sha256sum | trunc 10 }}
{{- end }}

{{/* Fails on combinations the overlays do not offer. */}}
{{- define "events-apiserver.validate" -}}
{{- if not (has .Values.mode (list "mirror" "offload" "takeover")) }}
{{- fail (printf "mode %q: want mirror, offload or takeover" .Values.mode) }}
{{- end }}
{{- if and (include "events-apiserver.offload" .) (not .Values.etcd.bundled) }}
{{- fail (printf "mode %s needs etcd.bundled: kube-apiserver keeps its events in the bundled etcd" .Values.mode) }}
{{- end }}
{{- if and (include "events-apiserver.offload" .) .Values.certificates.certManager }}
{{- fail (printf "mode %s takes the members' certificate from hack/gen-offload-etcd-cert.sh and the rest from the server: certificates.certManager must be false" .Values.mode) }}
{{- end }}
{{- if and .Values.history.enabled (not (regexMatch "^[0-9]+h$" (toString .Values.history.retention))) }}
{{- fail (printf "history.retention %q: want whole hours, e.g. 720h, which both the server and VictoriaLogs read" (toString .Values.history.retention)) }}
{{- end }}
{{- if and .Values.history.enabled (lt (trimSuffix "h" (toString .Values.history.retention) | atoi) 24) }}
{{- fail (printf "history.retention %s: want at least 24h" .Values.history.retention) }}
{{- end }}
{{- if not (has .Values.etcd.whenUnsatisfiable (list "DoNotSchedule" "ScheduleAnyway")) }}
{{- fail (printf "etcd.whenUnsatisfiable %q: want DoNotSchedule or ScheduleAnyway" .Values.etcd.whenUnsatisfiable) }}
{{- end }}
{{- if and .Values.history.enabled (not (has .Values.history.layout (list "single" "cluster"))) }}
{{- fail (printf "history.layout %q: want single or cluster" .Values.history.layout) }}
{{- end }}
{{- end }}

{{/* The selector labels of the archive's address: the single node or the cluster's front nodes. */}}
{{- define "events-apiserver.archiveSelector" -}}
app.kubernetes.io/component: archive
app.kubernetes.io/name: events-victorialogs
{{- end }}

{{/* The selector labels of the cluster's storage nodes. */}}
{{- define "events-apiserver.archiveStorageSelector" -}}
app.kubernetes.io/component: archive-storage
app.kubernetes.io/name: events-vlstorage
{{- end }}

{{/* The selector labels of the archive's StatefulSet: the single node or the storage nodes. */}}
{{- define "events-apiserver.archiveNodeSelector" -}}
{{- if eq .Values.history.layout "cluster" -}}
{{ include "events-apiserver.archiveStorageSelector" . }}
{{- else -}}
{{ include "events-apiserver.archiveSelector" . }}
{{- end }}
{{- end }}

{{/* The port and probes of every victoria-logs container; /health asks for no credentials. */}}
{{- define "events-apiserver.victorialogsProbes" -}}
ports:
- name: https
  containerPort: 9428
  protocol: TCP
livenessProbe:
  httpGet:
    scheme: HTTPS
    port: https
    path: /health
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 6
readinessProbe:
  httpGet:
    scheme: HTTPS
    port: https
    path: /health
  periodSeconds: 5
  timeoutSeconds: 5
{{- end }}

{{/* The flags of every victoria-logs container: https, and the password of the user events-apiserver on every path but the health checks. */}}
{{- define "events-apiserver.victorialogsServing" -}}
- -tls
- -tlsCertFile=/etc/victorialogs/tls/tls.crt
- -tlsKeyFile=/etc/victorialogs/tls/tls.key
- -httpAuth.username=events-apiserver
- -httpAuth.password=file:///etc/victorialogs/auth/password
{{- if .Values.podMonitors.enabled }}
- -metricsAuthKey=file:///etc/victorialogs/metrics/authKey
{{- end }}
{{- end }}

{{/* The serving certificate and the password of every victoria-logs container. */}}
{{- define "events-apiserver.victorialogsSecretMounts" -}}
- name: tls
  mountPath: /etc/victorialogs/tls
  readOnly: true
- name: auth
  mountPath: /etc/victorialogs/auth
  readOnly: true
{{- if .Values.podMonitors.enabled }}
- name: metrics
  mountPath: /etc/victorialogs/metrics
  readOnly: true
{{- end }}
{{- end }}

{{- define "events-apiserver.victorialogsSecretVolumes" -}}
- name: tls
  secret:
    secretName: events-victorialogs-tls
- name: auth
  secret:
    secretName: events-victorialogs-auth
    items:
    - key: tls.key
      path: password
{{- if .Values.podMonitors.enabled }}
- name: metrics
  secret:
    secretName: events-victorialogs-metrics
{{- end }}
{{- end }}

{{/* The securityContext of every victoria-logs container. */}}
{{- define "events-apiserver.victorialogsContainerSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  runAsNonRoot: true
  capabilities:
    drop: ["ALL"]
  seccompProfile:
    type: RuntimeDefault
{{- end }}

{{/* Every VictoriaLogs pod of the archive: the single node, or the cluster's front and storage nodes. */}}
{{- define "events-apiserver.archivePodsExpression" -}}
matchExpressions:
- key: app.kubernetes.io/name
  operator: In
  values: [events-victorialogs, events-vlstorage]
{{- end }}
