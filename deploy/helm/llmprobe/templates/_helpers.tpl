{{/*
The chart's name, or nameOverride.
*/}}
{{- define "llmprobe.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The objects' name: fullnameOverride, else the release name when it holds the
chart's name ("llmprobe" stays "llmprobe"), else <release>-<name>.
*/}}
{{- define "llmprobe.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Labels of the prober's pods, Service and the objects selecting them; the
selector labels are the stable subset.
*/}}
{{- define "llmprobe.selectorLabels" -}}
app.kubernetes.io/name: {{ include "llmprobe.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: prober
{{- end }}

{{/*
Labels every object carries; component is the caller's.
*/}}
{{- define "llmprobe.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "llmprobe.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: llmprobe
{{- end }}

{{- define "llmprobe.labels" -}}
{{ include "llmprobe.commonLabels" . }}
app.kubernetes.io/component: prober
{{- end }}

{{/*
The ServiceAccount the pods run as.
*/}}
{{- define "llmprobe.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "llmprobe.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The Secret of API key files: apiKeys.existingSecret, else the one the chart
creates from apiKeys.keys; empty when there is none.
*/}}
{{- define "llmprobe.apiKeysSecret" -}}
{{- if .Values.apiKeys.existingSecret }}
{{- .Values.apiKeys.existingSecret }}
{{- else if .Values.apiKeys.keys }}
{{- printf "%s-api-keys" (include "llmprobe.fullname" .) }}
{{- end }}
{{- end }}

{{/*
llmprobe.yml: configOverride verbatim, else config (global, targets) as YAML.
*/}}
{{- define "llmprobe.config" -}}
{{- if .Values.configOverride }}
{{- .Values.configOverride }}
{{- else }}
{{- toYaml .Values.config }}
{{- end }}
{{- end }}

{{/*
The image reference: repository:tag (tag defaults to appVersion), or
repository@digest.
*/}}
{{- define "llmprobe.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}
