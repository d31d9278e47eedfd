{{/* The release's full name: "overcast-ccm" for a release of that name. */}}
{{- define "overcast-ccm.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "overcast-ccm.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "overcast-ccm.labels" -}}
{{ include "overcast-ccm.selectorLabels" . }}
app.kubernetes.io/component: cloud-controller-manager
{{- if not .Values.plainManifests }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}
{{- end -}}

{{- define "overcast-ccm.serviceAccountName" -}}
{{- default (include "overcast-ccm.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* Checks the values once; every problem is reported together. */}}
{{- define "overcast-ccm.validate" -}}
{{- $problems := list -}}
{{- if not (include "overcast-ccm.cloud" .) -}}
{{- $clouds := list -}}
{{- range $path, $_ := .Files.Glob "clouds/*.yaml" }}{{ $clouds = append $clouds (base $path | trimSuffix ".yaml") }}{{ end -}}
{{- $problems = append $problems (printf "cloud: %q is not a cloud of this chart (%s)" .Values.cloud (join ", " $clouds)) -}}
{{- end -}}
{{- if and (not .Values.cloudConfig.existingSecret) (not .Values.cloudConfig.inline) -}}
{{- $problems = append $problems "cloudConfig: set existingSecret (a Secret holding the cloud's config file) or inline (the file itself)" -}}
{{- end -}}
{{- if and .Values.cloudConfig.existingSecret .Values.cloudConfig.inline -}}
{{- $problems = append $problems "cloudConfig: set existingSecret or inline, not both" -}}
{{- end -}}
{{- if and .Values.routes.enabled (not .Values.routes.clusterCIDR) -}}
{{- $problems = append $problems "routes.clusterCIDR: required when routes.enabled is true (--cluster-cidr)" -}}
{{- end -}}
{{- if and .Values.serviceMonitor.enabled (not .Values.metrics.service) -}}
{{- $problems = append $problems "serviceMonitor.enabled needs metrics.service: true (the ServiceMonitor scrapes that Service)" -}}
{{- end -}}
{{- if $problems -}}
{{- fail (printf "\n%s" (join "\n" $problems)) -}}
{{- end -}}
{{- end -}}

{{- define "overcast-ccm.secretName" -}}
{{- default (printf "%s-cloud-config" (include "overcast-ccm.fullname" .)) .Values.cloudConfig.existingSecret -}}
{{- end -}}

{{/* The cloud's file, clouds/<cloud>.yaml: what the chart knows of it ("" for no such cloud). */}}
{{- define "overcast-ccm.cloud" -}}
{{- if .Values.cloud }}{{ .Files.Get (printf "clouds/%s.yaml" .Values.cloud) }}{{ end -}}
{{- end -}}

{{- define "overcast-ccm.configKey" -}}
{{- if .Values.cloudConfig.key -}}{{ .Values.cloudConfig.key }}
{{- else -}}{{ (include "overcast-ccm.cloud" . | fromYaml).configKey }}
{{- end -}}
{{- end -}}

{{- define "overcast-ccm.hostNetwork" -}}
{{- if kindIs "bool" .Values.hostNetwork -}}{{ .Values.hostNetwork }}
{{- else -}}{{ (include "overcast-ccm.cloud" . | fromYaml).hostNetwork | default false }}
{{- end -}}
{{- end -}}

{{/* --controllers: the value, else the cloud's default (empty: the CCM's own set). */}}
{{- define "overcast-ccm.controllers" -}}
{{- join "," (.Values.controllers | default (include "overcast-ccm.cloud" . | fromYaml).controllers) -}}
{{- end -}}

{{/* GOMEMLIMIT: goMemLimitPercent of resources.limits.memory, in MiB. */}}
{{- define "overcast-ccm.goMemLimit" -}}
{{- $limit := "" -}}
{{- with .Values.resources.limits }}{{ $limit = toString (.memory | default "") }}{{ end -}}
{{- if and $limit .Values.goMemLimitPercent -}}
{{- $mib := 0 -}}
{{- if hasSuffix "Gi" $limit -}}{{- $mib = mul (atoi (trimSuffix "Gi" $limit)) 1024 -}}
{{- else if hasSuffix "Mi" $limit -}}{{- $mib = atoi (trimSuffix "Mi" $limit) -}}
{{- end -}}
{{- if le $mib 0 -}}
{{- fail (printf "resources.limits.memory %q: write a whole number of Mi or Gi (e.g. 512Mi): GOMEMLIMIT is derived from it" $limit) -}}
{{- end -}}
{{- printf "%dMiB" (div (mul $mib .Values.goMemLimitPercent) 100) -}}
{{- end -}}
{{- end -}}
