#!/usr/bin/env bash
# Fails if any process this harness started listens on an address other than the loopback.
set -euo pipefail
SCRIPT_NAME=${SCRIPT_NAME:-check-loopback}
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

declare -A OURS=()
for n in "${INFRA_SERVICES[@]}" "${OPENSTACK_SERVICES[@]}"; do
  [[ -s $PID_DIR/$n.pid ]] || continue
  group_alive "$n" || continue
  read -r pid _ <"$PID_DIR/$n.pid"
  for p in $(pgid_members "$pid"); do OURS[$p]=$n; done
done

bad=0 count=0
while read -r line; do
  [[ $line =~ pid=([0-9]+) ]] || continue
  pids=$(grep -o 'pid=[0-9]*' <<<"$line" | cut -d= -f2)
  owner=
  for p in $pids; do [[ -n ${OURS[$p]:-} ]] && owner=${OURS[$p]}; done
  [[ -n $owner ]] || continue
  local_addr=$(awk '{print $5}' <<<"$line")
  count=$((count + 1))
  case $local_addr in
    127.* | \[::ffff:127.*\]:* | \[::1\]:*) ;;
    *) say "NOT LOOPBACK: $owner listens on $local_addr"; bad=1 ;;
  esac
done < <(ss -H -lntup 2>/dev/null)

[[ $bad -eq 0 ]] || die "a harness process listens beyond the loopback (see above)"
say "$count listening sockets of ${#OURS[@]} harness processes, all on the loopback"
