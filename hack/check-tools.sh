#!/usr/bin/env bash
# Checks that every package the Kubernetes test binaries (hack/tools) and our own
# binaries both link comes from the same module version in the two modules, so
# that hack/test-binaries.sh finds it already compiled by `make build` (about
# 1,350 packages, several minutes on a fresh machine). make verify runs it.
# When it fails: raise the named module in the module that has the older version
# (cd hack/tools && go get MODULE@VERSION && go mod tidy), or lower it.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0 # as both are built
# The version whose source is compiled: a replacement's if there is one.
format='{{.ImportPath}} {{with .Module}}{{with or .Replace .}}{{.Path}}@{{.Version}}{{end}}{{end}}'
ours=$(go list -deps -f "$format" ./cmd/overcast-ccm ./cmd/overcast | sort -u)
tools=$(cd hack/tools && go list -deps -f "$format" k8s.io/kubernetes/cmd/kube-apiserver go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kubectl | sort -u)
both=$(join <(echo "$ours") <(echo "$tools"))
differ=$(awk '$2 != $3 {print $2 " (ours) and " $3 " (hack/tools)"}' <<<"$both" | sort -u)
shared=$(wc -l <<<"$both")
if [[ -n $differ ]]; then
	echo "hack/tools and the main module link these modules at different versions, so the"
	echo "Kubernetes test binaries compile their packages again:"
	echo "$differ" | sed 's/^/  /'
	exit 1
fi
echo "hack/tools: the $shared packages it shares with bin/ come from the same module versions"
