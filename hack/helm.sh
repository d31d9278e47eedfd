#!/usr/bin/env bash
# Prints the path of a helm binary of the pinned version, building it from the Go
# module proxy into the cache on first use (about 3 minutes on 2 cores), like
# hack/test-binaries.sh does for the control plane.
#
#   hack/helm.sh                   build if needed, print the binary's path
#   OVERCAST_CACHE=/some/dir ...   choose the cache root (default ~/.cache/overcast)
set -euo pipefail
version=v3.22.0
root=${OVERCAST_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/overcast}
dir="$root/helm-$version"
if [[ -x "$dir/helm" ]]; then
	echo "$dir/helm"
	exit 0
fi
mkdir -p "$root"
# One big build at a time on this machine (shared with hack/test-binaries.sh).
exec 9>"$root/.build.lock"
flock 9
if [[ ! -x "$dir/helm" ]]; then
	echo "building helm $version (first time on a machine: about 3 minutes)..." >&2
	tmp="$dir.tmp.$$"
	rm -rf "$tmp"
	GOBIN="$tmp" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$version" "helm.sh/helm/v3/cmd/helm@$version"
	rm -rf "$dir"
	mv "$tmp" "$dir"
fi
echo "$dir/helm"
