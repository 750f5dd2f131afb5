{{/*
Checks of values that values.schema.json cannot say clearly (JSON Schema's
"not" fails with "'not' failed", naming neither the value nor the fix) or
cannot say at all (one value against another). Each fails the render with
the value's name, what was given and what to do. Included by workload.yaml.
*/}}
{{- define "llmprobe.validate" -}}
{{- $v := .Values -}}
{{- if eq (toString $v.image.tag) "latest" }}
{{- fail "image.tag: \"latest\" moves under a running release; pin a version (the chart's appVersion when empty) or set image.digest" }}
{{- end }}
{{- $repo := toString $v.image.repository }}
{{- $last := last (splitList "/" $repo) }}
{{- if or (contains "@" $repo) (contains ":" $last) }}
{{- fail (printf "image.repository %q carries a tag or digest: give the name alone and the tag in image.tag (or image.digest); it would render %s:%s" $repo $repo (toString $v.image.tag)) }}
{{- end }}
{{- if and $v.apiKeys.existingSecret $v.apiKeys.keys }}
{{- fail (printf "apiKeys: existingSecret %q and keys are both set; keep one (existingSecret: a Secret you create; keys: one the chart creates)" $v.apiKeys.existingSecret) }}
{{- end }}
{{- if and $v.caBundle.configMap $v.caBundle.secret }}
{{- fail (printf "caBundle: configMap %q and secret %q are both set; keep one" $v.caBundle.configMap $v.caBundle.secret) }}
{{- end }}
{{- if and $v.resources.limits (hasKey $v.resources.limits "cpu") }}
{{- fail (printf "resources.limits.cpu %v: no CPU limit, on purpose: CFS throttling adds its pauses to the latencies llmprobe measures; set only resources.requests.cpu" $v.resources.limits.cpu) }}
{{- end }}
{{- if lt (int $v.service.port) 1024 }}
{{- fail (printf "service.port %v: llmprobe runs as user 65532 and listens on this port itself, which a non-root process cannot bind below 1024; keep 9741 (Prometheus scrapes the Service by its port name)" $v.service.port) }}
{{- end }}
{{- if $v.serviceMonitor.enabled }}
{{- $interval := include "llmprobe.milliseconds" $v.serviceMonitor.interval | int }}
{{- $timeout := include "llmprobe.milliseconds" $v.serviceMonitor.scrapeTimeout | int }}
{{- if gt $timeout $interval }}
{{- fail (printf "serviceMonitor.scrapeTimeout %s is longer than serviceMonitor.interval %s: Prometheus refuses the scrape config; keep the timeout at most the interval" $v.serviceMonitor.scrapeTimeout $v.serviceMonitor.interval) }}
{{- end }}
{{- end }}
{{- if and $v.alertmanagerConfig.enabled (not $v.alertmanagerConfig.receiver) }}
{{- fail "alertmanagerConfig.enabled with no alertmanagerConfig.receiver: give the receiver pages go to (e.g. webhookConfigs, slackConfigs, pagerdutyConfigs), without its name" }}
{{- end }}
{{- if and $v.alertmanagerConfig.enabled (not $v.prometheusRule.enabled) }}
{{- fail "alertmanagerConfig.enabled with prometheusRule.enabled false: the AlertmanagerConfig routes the alerts of this release's PrometheusRule; enable it, or configure Alertmanager from deploy/alertmanager/alertmanager.yml" }}
{{- end }}
{{- if and $v.probeMonitor.enabled (not $v.probeMonitor.targets) }}
{{- fail "probeMonitor.enabled with no probeMonitor.targets: list the base URLs /probe should reach" }}
{{- end }}
{{- if and $v.probeMonitor.enabled (gt (include "llmprobe.milliseconds" $v.probeMonitor.scrapeTimeout | int) (include "llmprobe.milliseconds" $v.probeMonitor.interval | int)) }}
{{- fail (printf "probeMonitor.scrapeTimeout %s is longer than probeMonitor.interval %s" $v.probeMonitor.scrapeTimeout $v.probeMonitor.interval) }}
{{- end }}
{{- if and (not $v.configOverride) $v.config }}
{{- $names := list }}
{{- range ($v.config.targets | default list) }}{{ $names = append $names .name }}{{ end }}
{{- range $i, $m := $v.serverMonitors }}
{{- if not (has $m.target $names) }}
{{- fail (printf "serverMonitors[%d].target %q is not a target of config (%s): the target label must name the llmprobe target these pods serve" $i $m.target (join ", " $names)) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and (not $v.configOverride) $v.config }}
{{- range $i, $t := ($v.config.targets | default list) }}
{{- range $j, $p := ($t.probes | default list) }}
{{- range $key := list "seed" "prompt_nonce" }}
{{- $n := get $p $key }}
{{- if and (kindIs "float64" $n) (gt $n 9007199254740992.0) }}
{{- fail (printf "config.targets[%d].probes[%d].%s: %s above 2^53 reach the chart as floats and are rounded (Helm reads numbers as float64); set this probe in configOverride (--set-file configOverride=llmprobe.yml), which passes the file verbatim" $i $j $key $key) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* llmprobe.milliseconds: a duration of the schema's form (<n>ms, <n>s, <n>m) in milliseconds. */}}
{{- define "llmprobe.milliseconds" -}}
{{- $d := toString . }}
{{- if hasSuffix "ms" $d }}{{ trimSuffix "ms" $d | int }}
{{- else if hasSuffix "s" $d }}{{ mul (trimSuffix "s" $d | int) 1000 }}
{{- else if hasSuffix "m" $d }}{{ mul (trimSuffix "m" $d | int) 60000 }}
{{- else }}0{{ end }}
{{- end }}
