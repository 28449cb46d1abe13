{{/* The name of every object: the release's, with "jetgate" unless it has it. */}}
{{- define "jetgate.fullname" -}}
{{- if contains "jetgate" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-jetgate" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "jetgate.selectorLabels" -}}
app.kubernetes.io/name: jetgate
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "jetgate.labels" -}}
{{ include "jetgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The Secret holding the token key file, under key token.key. */}}
{{- define "jetgate.tokenKeySecret" -}}
{{- .Values.tokenKey.existingSecret | default (printf "%s-token-key" (include "jetgate.fullname" .)) -}}
{{- end -}}

{{/* The Secret holding the NATS URL, under key url: the user's, or the one
the chart makes, whose name no Secret of the user's may take. */}}
{{- define "jetgate.natsURLSecret" -}}
{{- .Values.nats.urlSecret | default (printf "%s-nats-url" (include "jetgate.fullname" .)) -}}
{{- end -}}

{{/* The Secrets the chart itself renders, one name a line. */}}
{{- define "jetgate.ownSecrets" -}}
{{- if not .Values.nats.urlSecret }}{{ include "jetgate.natsURLSecret" . }}{{ "\n" }}{{ end -}}
{{- if not .Values.tokenKey.existingSecret }}{{ include "jetgate.tokenKeySecret" . }}{{ "\n" }}{{ end -}}
{{- end -}}

{{/* Whether the listeners serve TLS (config.listen.tls.cert). */}}
{{- define "jetgate.tls" -}}
{{- $listen := .Values.config.listen | default dict -}}
{{- $tls := $listen.tls | default dict -}}
{{- if $tls.cert }}true{{ end -}}
{{- end -}}

{{/* Refuse to render what jetgate would refuse to start with for want of
    authentication or consumers; `jetgate check-config` checks the rest. */}}
{{- define "jetgate.check" -}}
{{- $auth := .Values.config.auth | default dict -}}
{{- if not (or $auth.api_keys $auth.jwt $auth.mtls $auth.allow_unauthenticated) -}}
{{- fail "config.auth: jetgate listens beyond loopback in a pod, so it needs authentication: set config.auth.api_keys, jwt or mtls (README \"Running in production\"), or config.auth.allow_unauthenticated: true to serve anyone who can reach the Service" -}}
{{- end -}}
{{- $tls := (.Values.config.listen | default dict).tls | default dict -}}
{{- if and $auth.mtls (not $tls.client_ca) -}}
{{- fail "config.auth.mtls: callers are known by their client certificates, so jetgate needs the CA that issues them: set config.listen.tls.client_ca (and cert and key; README \"Running in production\")" -}}
{{- end -}}
{{- $onDemand := .Values.config.on_demand | default dict -}}
{{- $admin := .Values.config.admin | default dict -}}
{{- if not (or .Values.config.consumers $onDemand.match $admin.streams) -}}
{{- fail "config.consumers: no consumer is configured: list some, serve existing ones with config.on_demand.match, or let callers create them with config.admin.streams (README \"Configuration\")" -}}
{{- end -}}
{{- $own := splitList "\n" (include "jetgate.ownSecrets" .) -}}
{{- $theirs := dict "nats.credsSecret" .Values.nats.credsSecret "nats.tls.secret" .Values.nats.tls.secret "nats.urlSecret" .Values.nats.urlSecret "tokenKey.existingSecret" .Values.tokenKey.existingSecret -}}
{{- range $path, $name := $theirs -}}
{{- if and $name (has $name $own) -}}
{{- fail (printf "%s: %q is the name of a Secret this chart makes itself (%s): give your Secret another name" $path $name (without $own "" | join ", ")) -}}
{{- end -}}
{{- end -}}
{{- if and (not .Values.nats.urlSecret) (not .Values.nats.url) -}}
{{- fail "nats.url: give the NATS server URL(s), or nats.urlSecret: jetgate's embedded server is for one process, not a Deployment" -}}
{{- end -}}
{{- $shutdown := 20 -}}{{/* jetgate's own: 10s for callers to finish, then the replica's close (3.75s for what is in flight, 5s for its last naks, 1.25s to leave the roster) */}}
{{- if le (int .Values.terminationGracePeriodSeconds) (add (int .Values.preStopSleepSeconds) $shutdown) -}}
{{- fail (printf "terminationGracePeriodSeconds: %d leaves jetgate too little of its %ds shutdown after preStopSleepSeconds %d: make it more than %d" (int .Values.terminationGracePeriodSeconds) $shutdown (int .Values.preStopSleepSeconds) (add (int .Values.preStopSleepSeconds) $shutdown)) -}}
{{- end -}}
{{- end -}}
