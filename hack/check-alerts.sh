#!/usr/bin/env bash
# promtool check rules on the chart's alerts (templates/prometheusrule.yaml as
# rendered with every optional object on): make verify runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
helm=$(hack/helm.sh)
promtool="$(hack/prometheus.sh)/promtool"
rules=$(mktemp)
trap 'rm -f "$rules"' EXIT
# The PrometheusRule's spec is a rule file: its lines after "spec:", one
# level less indented.
"$helm" template overcast-ccm deploy/chart/overcast-ccm --namespace kube-system --kube-version 1.37.1 \
	-f deploy/chart/overcast-ccm/ci/monitoring-values.yaml --show-only templates/prometheusrule.yaml |
	awk 'on {sub(/^  /, ""); print} /^spec:/ {on=1}' >"$rules"
"$promtool" check rules "$rules"
