{{/*
Helpers of couchdb-lite. Object names follow the Apache CouchDB chart's rules, so that code
written against one finds the objects of the other:
  <release>-couchdb        StatefulSet, headless Service, ConfigMap, Secret
  <release>-svc-couchdb    client Service
(with fullnameOverride F: F-couchdb and F-svc-couchdb; with nameOverride N: <release>-N and
<release>-svc-N).
*/}}

{{- define "couchdb-lite.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "couchdb-lite.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- printf "%s-%s" .Values.fullnameOverride .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "couchdb-lite.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "couchdb-lite.svcname" -}}
{{- if .Values.fullnameOverride -}}
{{- printf "%s-svc-%s" .Values.fullnameOverride .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-svc-%s" .Release.Name (include "couchdb-lite.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Pod selector: the same two labels as the Apache chart's pods carry. */}}
{{- define "couchdb-lite.selector" -}}
app: {{ include "couchdb-lite.name" . }}
release: {{ .Release.Name }}
{{- end -}}

{{- define "couchdb-lite.labels" -}}
{{ include "couchdb-lite.selector" . }}
chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
heritage: {{ .Release.Service }}
{{- end -}}

{{/* The Secret the CouchDB container reads: extraSecretName, or the one this chart creates. */}}
{{- define "couchdb-lite.secretName" -}}
{{- .Values.extraSecretName | default (include "couchdb-lite.fullname" .) -}}
{{- end -}}

{{/*
Every CouchDB cluster needs its own server uuid: rendering stops here without one, so that
nodes never start with a generated one that differs from pod to pod.
*/}}
{{- define "couchdb-lite.uuid" -}}
{{- $couchdb := .Values.couchdbConfig.couchdb | default dict -}}
{{- required "couchdbConfig.couchdb.uuid is not set: give each CouchDB cluster its own uuid (32 hex digits)" $couchdb.uuid -}}
{{- end -}}

{{/* One ini value: numbers from values files arrive as floats; whole ones are written as integers. */}}
{{- define "couchdb-lite.iniValue" -}}
{{- if and (kindIs "float64" .) (eq . (floor .)) -}}
{{- int64 . -}}
{{- else -}}
{{- . -}}
{{- end -}}
{{- end -}}

{{/* couchdbConfig as an ini file: one [section] per key, one `key = value` line per setting. */}}
{{- define "couchdb-lite.ini" -}}
{{- $_ := include "couchdb-lite.uuid" . -}}
{{- range $section, $settings := .Values.couchdbConfig -}}
[{{ $section }}]
{{ range $key, $value := $settings -}}
{{ $key }} = {{ include "couchdb-lite.iniValue" $value }}
{{ end }}
{{ end -}}
{{- end -}}

{{/* A secret value: the given one, or a random one. */}}
{{- define "couchdb-lite.secretValue" -}}
{{- . | default (randAlphaNum 24) | b64enc | quote -}}
{{- end -}}

{{/* Probe of the CouchDB container: /_up, or a TCP check when every request needs credentials. */}}
{{- define "couchdb-lite.probe" -}}
{{- if eq (toString (dig "chttpd" "require_valid_user" false .Values.couchdbConfig)) "true" -}}
tcpSocket:
  port: 5984
{{- else -}}
httpGet:
  path: /_up
  port: 5984
{{- end }}
{{- end -}}
