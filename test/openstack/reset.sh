#!/usr/bin/env bash
# Return the harness OpenStack to its base state between test runs (a few seconds):
# deletes load balancers (cascade), servers, floating IPs, test ports, networks, routers
# and security groups; keeps the base networks, router, image, flavors and credentials.
# See lib/reset.py for the exact list.
set -euo pipefail
SCRIPT_NAME=reset
# shellcheck source=lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

[[ -s $STATE/base.json && -e $STATE/configured ]] || die "no configured harness in $STATE (run test/openstack/up.sh)"
take_lock
load_secrets || die "no $STATE/secrets.env"
for d in keystone neutron nova-api octavia-api; do
  group_alive "$d" || die "$d is not running (run test/openstack/up.sh)"
done
export STATE KEYSTONE_PORT REGION ADMIN_PASS CCM_PASS
"$PY" "$HARNESS_DIR/lib/reset.py"
say "reset done in $(elapsed)s"
