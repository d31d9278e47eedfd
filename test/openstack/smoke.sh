#!/usr/bin/env bash
# Check the running harness OpenStack end to end as the CCM's application credential:
# server ACTIVE with an address; load balancer, listener, pool, member, health monitor
# ACTIVE; floating IP on the VIP port. Prints the times, then deletes what it created.
set -euo pipefail
SCRIPT_NAME=smoke
# shellcheck source=lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
[[ -s $STATE/openstack.env ]] || die "no $STATE/openstack.env (run test/openstack/up.sh)"
set -a
# shellcheck disable=SC1091
. "$STATE/openstack.env"
set +a
"$PY" "$HARNESS_DIR/lib/smoke.py"
say "smoke test passed in $(elapsed)s"
