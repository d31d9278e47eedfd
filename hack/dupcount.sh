#!/usr/bin/env bash
# The repetition count of the tree as the house counts it: `duplicates` over a
# copy of the files git tracks (and the untracked ones it does not ignore),
# with Go import blocks blanked (the tool reads their quoted specs as code).
#
#   hack/dupcount.sh [--production] [extra duplicates flags, e.g. --most 200]
#
# --production leaves the tests out (files named *_test.go and the test/ tree).
set -euo pipefail
cd "$(dirname "$0")/.."
production=false
if [ "${1:-}" = --production ]; then
	production=true
	shift
fi
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
git ls-files -co --exclude-standard | while read -r f; do
	[ -f "$f" ] || continue
	if $production; then
		case "$f" in *_test.go | test/*) continue ;; esac
	fi
	mkdir -p "$copy/$(dirname "$f")"
	case "$f" in
	*.go) awk '/^import \($/ { inblock = 1; print ""; next }
		inblock { print ""; if ($0 == ")") inblock = 0; next }
		/^import / { print ""; next }
		{ print }' "$f" >"$copy/$f" ;;
	*) cp "$f" "$copy/$f" ;;
	esac
done
cd "$copy" && duplicates --seconds 120 "$@"
