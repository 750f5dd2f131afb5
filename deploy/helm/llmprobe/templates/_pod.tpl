{{/*
The prober's pod template, shared by the Deployment and the StatefulSet. The
security settings are the kustomize base's and are not values: non-root
65532, seccomp RuntimeDefault, read-only root, no privilege, all
capabilities dropped, no service account token.
*/}}
{{- define "llmprobe.podTemplate" -}}
{{- $secret := include "llmprobe.apiKeysSecret" . -}}
metadata:
  labels:
    {{- include "llmprobe.selectorLabels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    # A changed llmprobe.yml rolls the pods (kustomize's hashed name does the same).
    checksum/config: {{ include "llmprobe.config" . | sha256sum }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "llmprobe.serviceAccountName" . }}
  # No token unless Kubernetes discovery reads the API server (rbac.discovery).
  automountServiceAccountToken: {{ .Values.rbac.discovery.create }}
  # Longer than --shutdown-timeout (10s): in-flight probes end cleanly.
  terminationGracePeriodSeconds: 30
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    fsGroup: 65532
    seccompProfile:
      type: RuntimeDefault
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: llmprobe
      image: {{ include "llmprobe.image" . | quote }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args:
        - serve
        - --config.file=/etc/llmprobe/config/llmprobe.yml
        - --web.listen-address=:{{ .Values.service.port }}
        - --sweeps.dir=/var/lib/llmprobe/sweeps
        - --sweeps.retention.size={{ .Values.persistence.retentionSize }}
        {{- if gt (int .Values.shards) 1 }}
        - --shard=$(POD_INDEX)/{{ int .Values.shards }}
        {{- end }}
        {{- with .Values.extraArgs }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- if or (gt (int .Values.shards) 1) .Values.env }}
      env:
        {{- if gt (int .Values.shards) 1 }}
        # The pod's ordinal (Kubernetes >= 1.28).
        - name: POD_INDEX
          valueFrom:
            fieldRef:
              fieldPath: metadata.labels['apps.kubernetes.io/pod-index']
        {{- end }}
        {{- with .Values.env }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- end }}
      ports:
        - name: http
          containerPort: {{ .Values.service.port }}
          protocol: TCP
      livenessProbe:
        httpGet:
          path: /-/healthy
          port: http
        periodSeconds: 10
        timeoutSeconds: 5
        failureThreshold: 3
      readinessProbe:
        httpGet:
          path: /-/ready
          port: http
        periodSeconds: 5
        timeoutSeconds: 5
        failureThreshold: 3
      # No CPU limit by default (the schema refuses one): CFS throttling
      # would add its pauses to the latencies llmprobe measures.
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      securityContext:
        allowPrivilegeEscalation: false
        privileged: false
        readOnlyRootFilesystem: true
        runAsNonRoot: true
        capabilities:
          drop:
            - ALL
      volumeMounts:
        - name: config
          mountPath: /etc/llmprobe/config
          readOnly: true
        {{- if $secret }}
        - name: api-keys
          mountPath: /etc/llmprobe/keys
          readOnly: true
        {{- end }}
        - name: tmp
          mountPath: /tmp
        # Sweep run directories (persistence in values.yaml).
        - name: state
          mountPath: /var/lib/llmprobe
        {{- if or .Values.caBundle.configMap .Values.caBundle.secret }}
        - name: ca-bundle
          mountPath: /etc/llmprobe/ca
          readOnly: true
        {{- end }}
        {{- with .Values.extraVolumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
  volumes:
    - name: config
      configMap:
        name: {{ include "llmprobe.fullname" . }}-config
    {{- if $secret }}
    # API keys, one file per key: api_key_file: /etc/llmprobe/keys/<key>.
    # Required: a pod waits for a missing Secret with an event naming it.
    - name: api-keys
      secret:
        secretName: {{ $secret }}
        defaultMode: 0440
    {{- end }}
    - name: tmp
      emptyDir:
        sizeLimit: 64Mi
    {{- if not .Values.persistence.enabled }}
    - name: state
      emptyDir:
        sizeLimit: {{ .Values.persistence.emptyDirSizeLimit }}
    {{- else if le (int .Values.shards) 1 }}
    - name: state
      persistentVolumeClaim:
        claimName: {{ include "llmprobe.fullname" . }}-state
    {{- end }}
    {{- with .Values.caBundle }}
    {{- if .configMap }}
    # http_config.tls_config.ca_file: /etc/llmprobe/ca/{{ .key }}
    - name: ca-bundle
      configMap:
        name: {{ .configMap }}
        items:
          - key: {{ .key }}
            path: {{ .key }}
    {{- else if .secret }}
    # http_config.tls_config.ca_file: /etc/llmprobe/ca/{{ .key }}
    - name: ca-bundle
      secret:
        secretName: {{ .secret }}
        items:
          - key: {{ .key }}
            path: {{ .key }}
    {{- end }}
    {{- end }}
    {{- with .Values.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}
