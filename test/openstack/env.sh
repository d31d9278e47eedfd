#!/usr/bin/env bash
# The environment of the running harness OpenStack (written by up.sh):
#   source test/openstack/env.sh          # in a shell
#   eval "$(test/openstack/env.sh)"        # same, from a script
# See README.md for the variables.
_overcast_env=${OVERCAST_OPENSTACK_STATE:-/var/tmp/overcast-openstack}/openstack.env
if [[ ! -s $_overcast_env ]]; then
  echo "no $_overcast_env: run test/openstack/up.sh first" >&2
  unset _overcast_env
  return 1 2>/dev/null || exit 1
fi
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  cat "$_overcast_env"
else
  # shellcheck disable=SC1090
  . "$_overcast_env"
fi
unset _overcast_env
