#!/usr/bin/env bash
# test-failures.sh LOG: what failed in a go test log, for the end of a long
# run's output (the in-process controllers' klog lines left out): each
# "--- FAIL" with the lines that follow it, each panic with its first frames,
# and the FAIL lines of the packages. At most 120 lines.
set -euo pipefail
log=${1:?usage: test-failures.sh LOG}
grep -v -E '^[IWE][0-9]{4} [0-9:.]+ ' "$log" |
	awk '
		/^[[:space:]]*--- FAIL/ { n = 25 }
		/^panic:|^fatal error:/ { n = 40 }
		/^ok[[:space:]]/ { n = 0 }
		/^FAIL[[:space:]]/ { print; next }
		n > 0 { print; n-- }
	' | head -n 120
