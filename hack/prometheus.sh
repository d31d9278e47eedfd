#!/usr/bin/env bash
# Prints the directory holding promtool and prometheus of Debian's pinned
# package, unpacked into the cache on first use (apt-get download and dpkg-deb:
# nothing is installed, no service started), like hack/helm.sh does for helm.
#
#   hack/prometheus.sh             fetch if needed, print the directory
#   OVERCAST_CACHE=/some/dir ...   choose the cache root (default ~/.cache/overcast)
set -euo pipefail
version=2.42.0+ds-5+deb12u1
root=${OVERCAST_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/overcast}
dir="$root/prometheus-$version"
if [[ -x "$dir/promtool" && -x "$dir/prometheus" ]]; then
	echo "$dir"
	exit 0
fi
mkdir -p "$root"
exec 9>"$root/.prometheus.lock"
flock 9
if [[ ! -x "$dir/promtool" || ! -x "$dir/prometheus" ]]; then
	tmp=$(mktemp -d "$root/prometheus.tmp.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	chmod 755 "$tmp" # apt's _apt user writes the download
	echo "fetching Debian's prometheus $version (first time on a machine)..." >&2
	if ! (cd "$tmp" && apt-get download -q "prometheus=$version" >&2); then
		apt-get update -q >&2
		(cd "$tmp" && apt-get download -q "prometheus=$version" >&2)
	fi
	dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"
	mkdir -p "$tmp/out"
	cp "$tmp/x/usr/bin/promtool" "$tmp/x/usr/bin/prometheus" "$tmp/out/"
	rm -rf "$dir"
	mv "$tmp/out" "$dir"
fi
echo "$dir"
