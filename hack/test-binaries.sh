#!/usr/bin/env bash
# Builds kube-apiserver, etcd and kubectl from the Go module proxy (hack/tools) into a
# cache directory outside the repository, keyed by hack/tools/go.sum, and prints that
# directory. A second call with the same go.sum costs nothing; a fresh machine builds
# from nothing (on 2 cores about 5 minutes once `make build` has compiled what
# they share, most of it kube-apiserver).
#
#   hack/test-binaries.sh            build if needed, print the directory
#   OVERCAST_CACHE=/some/dir ...     choose the cache root (default ~/.cache/overcast)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tools="$here/tools"
key=$(cat "$tools/go.mod" "$tools/go.sum" | sha256sum | cut -c1-16)
root=${OVERCAST_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/overcast}
dir="$root/k8s-bin-$key"

if [[ -x "$dir/kube-apiserver" && -x "$dir/etcd" && -x "$dir/kubectl" && -f "$dir/.complete" ]]; then
	echo "$dir"
	exit 0
fi

# One build at a time on this machine: a second caller waits for the first.
mkdir -p "$root"
exec 9>"$root/.build.lock"
flock 9
if [[ -f "$dir/.complete" ]]; then
	echo "$dir"
	exit 0
fi

tmp="$dir.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
ver=v1.37.1
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$ver -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"
cd "$tools"
# Built as `make build` builds (static, -trimpath): with the module versions
# hack/check-tools.sh keeps equal to the main module's, every package both link
# (client-go, apiserver, api, grpc, ...: about 1,350) is compiled once, whichever
# build comes first.
export CGO_ENABLED=0
start=$(date +%s)
echo "building kube-apiserver $ver (first time on a machine: a few minutes)..." >&2
go build -trimpath -ldflags "$ldflags" -o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
echo "building etcd..." >&2
go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3
echo "building kubectl..." >&2
go build -trimpath -ldflags "$ldflags" -o "$tmp/kubectl" k8s.io/kubernetes/cmd/kubectl
touch "$tmp/.complete"
rm -rf "$dir"
mv "$tmp" "$dir"
echo "test binaries built in $(( $(date +%s) - start ))s" >&2
echo "$dir"
