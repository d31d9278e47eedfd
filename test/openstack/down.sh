#!/usr/bin/env bash
# Stop every service this harness started: by the PIDs in $STATE/pid (each daemon leads
# its own process group), TERM first, KILL after a bounded wait. Data is kept: up.sh
# starts the same cloud again.
set -euo pipefail
SCRIPT_NAME=${SCRIPT_NAME:-down}
# shellcheck source=lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

LOCK=1
for arg in "$@"; do
  case $arg in
    --no-lock) LOCK=0 ;; # used by up.sh, which already holds the lock
    -h | --help) sed -n '2,4p' "$0"; exit 0 ;;
    *) die "unknown argument $arg" ;;
  esac
done
require_root
if [[ ! -d $PID_DIR ]]; then
  say "nothing to stop: no $PID_DIR"
  exit 0
fi
if [[ $LOCK == 1 ]]; then
  take_lock
fi

# OpenStack services first (in parallel), then the message bus, then the database.
reverse=()
for ((i = ${#OPENSTACK_SERVICES[@]} - 1; i >= 0; i--)); do reverse+=("${OPENSTACK_SERVICES[$i]}"); done
stop_daemons 30 "${reverse[@]}"
stop_daemons 30 rabbitmq
stop_daemons 10 epmd
stop_daemons 60 mariadb

left=()
for n in "${INFRA_SERVICES[@]}" "${OPENSTACK_SERVICES[@]}"; do
  group_alive "$n" && left+=("$n")
done
[[ ${#left[@]} -eq 0 ]] || die "still running: ${left[*]}"
say "all harness services stopped in $(elapsed)s (data kept in $STATE)"
