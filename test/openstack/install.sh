#!/usr/bin/env bash
# Install the Debian bookworm (OpenStack Zed) packages of the real-OpenStack test harness.
# Idempotent: does nothing when every package is already installed. No service is started:
# a policy-rc.d that exits 101 blocks every init script while apt runs.
set -euo pipefail

START=$(date +%s)
say() { printf '[install] %s\n' "$*"; }
done_msg() { say "$1 in $(( $(date +%s) - START ))s"; }

# nova-compute is deliberately absent: that package pulls libvirt and qemu. The harness runs
# the compute service from python3-nova with the fake virt driver.
PACKAGES=(
  keystone
  placement-api
  nova-api nova-conductor nova-scheduler
  glance-api
  neutron-server
  octavia-api octavia-worker
  barbican-api
  python3-openstackclient python3-octaviaclient
  mariadb-server rabbitmq-server python3-pymysql
  uwsgi-core uwsgi-plugin-python3
  openssl curl ca-certificates
)

if [[ $(id -u) -ne 0 ]]; then
  say "must run as root (apt-get install)"; exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if [[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" != "installed" ]]; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  done_msg "all ${#PACKAGES[@]} packages already installed; nothing to do"
  exit 0
fi
say "missing: ${missing[*]}"

# Keep services from starting during the install. If a policy-rc.d is already there (some
# images ship one), leave it alone; otherwise create ours and remove it afterwards.
POLICY=/usr/sbin/policy-rc.d
created_policy=false
if [[ ! -e $POLICY ]]; then
  printf '#!/bin/sh\n# overcast test/openstack/install.sh: no service starts while installing\nexit 101\n' >"$POLICY"
  chmod 0755 "$POLICY"
  created_policy=true
fi
cleanup() { if $created_policy; then rm -f "$POLICY"; fi; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
say "apt-get update"
apt-get update -q
say "apt-get install (about 5 min the first time)"
apt-get install -y -q --no-install-recommends \
  -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
  "${PACKAGES[@]}"

done_msg "installed ${#missing[@]} missing packages"
