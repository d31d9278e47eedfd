# Shared by the test/openstack scripts: paths, ports, logging, process and wait helpers.
# Sourced, not run. Everything the harness starts binds 127.0.0.1 only.

HARNESS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${OVERCAST_OPENSTACK_STATE:-/var/tmp/overcast-openstack}
ETC=$STATE/etc
LOG_DIR=$STATE/log
PID_DIR=$STATE/pid
RUN_DIR=$STATE/run
CA_DIR=$STATE/ca

# The distribution's Python: the OpenStack libraries are Debian packages, and a python3
# earlier on PATH (pyenv, a virtualenv) would not see them.
PY=/usr/bin/python3

HOST_IP=127.0.0.1
REGION=RegionOne
# Every port moves by OVERCAST_OPENSTACK_PORT_OFFSET (default 0), so that a second harness
# (another state dir) can run beside the first one.
PORT_OFFSET=${OVERCAST_OPENSTACK_PORT_OFFSET:-0}
[[ $PORT_OFFSET =~ ^[0-9]+$ ]] || { echo "OVERCAST_OPENSTACK_PORT_OFFSET must be a number" >&2; exit 1; }
KEYSTONE_PORT=$((5000 + PORT_OFFSET))
PLACEMENT_PORT=$((8778 + PORT_OFFSET))
NOVA_PORT=$((8774 + PORT_OFFSET))
GLANCE_PORT=$((9292 + PORT_OFFSET))
NEUTRON_PORT=$((9696 + PORT_OFFSET))
OCTAVIA_PORT=$((9876 + PORT_OFFSET))
BARBICAN_PORT=$((9311 + PORT_OFFSET))
# Non-default ports so that a system MariaDB/RabbitMQ/epmd never collides with ours, and
# all below 32768, out of Linux's ephemeral range (ip_local_port_range 32768-60999): a
# listener there can lose its port to any client's outgoing connection (measured: RabbitMQ
# on 45672 failed with eaddrinuse right after the e2e suites had run).
MYSQL_PORT=$((13306 + PORT_OFFSET))
RABBIT_PORT=$((26672 + PORT_OFFSET))
RABBIT_DIST_PORT=$((RABBIT_PORT + 1))
EPMD_PORT=$((24369 + PORT_OFFSET))
# uwsgi worker processes of nova-api (one serialises requests; see README).
NOVA_API_PROCESSES=${OVERCAST_OPENSTACK_NOVA_API_PROCESSES:-2}

# The compute host name the ML2 "test" mechanism driver binds ports for.
COMPUTE_HOST=host-ovs-filter-active

# Services in start order; down.sh stops them in reverse.
INFRA_SERVICES=(mariadb epmd rabbitmq)
OPENSTACK_SERVICES=(keystone placement glance neutron nova-api nova-conductor nova-scheduler
  nova-compute barbican octavia-api octavia-worker)

SCRIPT_NAME=${SCRIPT_NAME:-$(basename "$0" .sh)}
SCRIPT_START=$(date +%s)

say() { printf '[%s %s] %s\n' "$SCRIPT_NAME" "$(date +%T)" "$*"; }
die() { printf '[%s %s] ERROR: %s\n' "$SCRIPT_NAME" "$(date +%T)" "$*" >&2; exit 1; }
elapsed() { echo $(( $(date +%s) - SCRIPT_START )); }

require_root() { [[ $(id -u) -eq 0 ]] || die "must run as root"; }

require_installed() {
  local p missing=()
  for p in keystone placement-api nova-api nova-conductor nova-scheduler glance-api \
    neutron-server octavia-api octavia-worker barbican-api mariadb-server rabbitmq-server uwsgi-plugin-python3 \
    python3-openstackclient python3-octaviaclient; do
    [[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" == installed ]] || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] || die "not installed: ${missing[*]} (run test/openstack/install.sh)"
}

# ---------------------------------------------------------------------------------------
# Processes. Every daemon is started with setsid, so it leads its own process group, and
# its PID file holds "PID STARTTIME" (field 22 of /proc/PID/stat). A PID is only trusted,
# and its group only signalled, while the process with that PID has that start time.

proc_starttime() { # PID -> start time in clock ticks since boot; fails if no such process
  local stat f
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  stat=${stat##*) }
  # after "pid (comm) " the fields start at field 3 (state); starttime is field 22
  read -r -a f <<<"$stat"
  echo "${f[19]}"
}

# pgid_members PGID -> the PIDs of every process in that process group
pgid_members() {
  local f line _s _p pg
  for f in /proc/[0-9]*/stat; do
    { read -r line <"$f"; } 2>/dev/null || continue
    line=${line##*) }
    # after "pid (comm) ": state ppid pgrp ...
    read -r _s _p pg _ <<<"$line"
    if [[ $pg == "$1" ]]; then f=${f#/proc/}; echo "${f%/stat}"; fi
  done
}

# daemon_pid NAME -> prints the PID of our running daemon NAME, fails if it is not running
daemon_pid() {
  local file=$PID_DIR/$1.pid pid st
  [[ -s $file ]] || return 1
  read -r pid st <"$file" || return 1
  [[ -n ${pid:-} && -n ${st:-} ]] || return 1
  [[ "$(proc_starttime "$pid" 2>/dev/null)" == "$st" ]] || return 1
  echo "$pid"
}

# group_alive NAME -> true while any process of NAME's process group is alive. Safe against
# PID reuse: the group is ours if its leader has our start time, or if the leader is gone
# and members remain (Linux does not reuse a PID while a process group of that id exists).
group_alive() {
  local file=$PID_DIR/$1.pid pid st
  [[ -s $file ]] || return 1
  read -r pid st <"$file" || return 1
  if [[ -e /proc/$pid ]]; then
    [[ "$(proc_starttime "$pid" 2>/dev/null)" == "$st" ]]
    return
  fi
  [[ -n "$(pgid_members "$pid")" ]]
}

# signal_group NAME SIGNAL -> sends SIGNAL to every process of NAME's group (if ours)
signal_group() {
  local pid st
  group_alive "$1" || return 0
  read -r pid st <"$PID_DIR/$1.pid"
  kill "-$2" -- "-$pid" 2>/dev/null || true
}

# start_daemon NAME [ENV=VALUE...] -- COMMAND... : runs COMMAND in its own session with
# stdin from /dev/null and output appended to $LOG_DIR/NAME.log; records its PID. Fd 9 (the
# harness lock, see take_lock) is closed so that no daemon holds the lock.
start_daemon() {
  local name=$1; shift
  local envs=()
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=("$1"); shift; done
  [[ ${1:-} == -- ]] && shift
  if pid=$(daemon_pid "$name"); then
    say "$name already running (pid $pid)"
    return 0
  fi
  # its leader gone but some of its processes still stopping: let them finish first
  if group_alive "$name"; then stop_daemons 15 "$name"; fi
  local log=$LOG_DIR/$name.log tmp=$PID_DIR/$name.pid.new
  rm -f "$tmp"
  printf '\n==== %s: starting %s\n' "$(date '+%F %T')" "$*" >>"$log"
  env "${envs[@]}" setsid /bin/bash -c 'echo $$ >"$0"; exec "$@"' "$tmp" "$@" \
    </dev/null >>"$log" 2>&1 9>&- &
  local i pid=
  for ((i = 0; i < 50; i++)); do
    [[ -s $tmp ]] && pid=$(<"$tmp") && break
    sleep 0.1
  done
  [[ -n $pid ]] || die "$name did not start within 5s (see $log)"
  local st
  st=$(proc_starttime "$pid") || die "$name exited at once (see $log): $(tail -n 5 "$log")"
  echo "$pid $st" >"$PID_DIR/$name.pid"
  rm -f "$tmp"
  say "started $name (pid $pid, log $log)"
}

# prune_alive TICKS: drops from the caller's alive the groups that have
# ended, waiting up to TICKS times 0.2 s for all to end.
prune_alive() {
  local i n
  for ((i = 0; i < $1; i++)); do
    local still=()
    for n in "${alive[@]}"; do group_alive "$n" && still+=("$n"); done
    alive=("${still[@]+"${still[@]}"}")
    [[ ${#alive[@]} -gt 0 ]] || break
    sleep 0.2
  done
}

# stop_daemons TIMEOUT NAME... : TERM to every group, wait up to TIMEOUT seconds, then KILL.
stop_daemons() {
  local timeout=$1; shift
  local n alive=()
  for n in "$@"; do
    if group_alive "$n"; then
      signal_group "$n" TERM
      alive+=("$n")
    else
      rm -f "$PID_DIR/$n.pid"
    fi
  done
  [[ ${#alive[@]} -gt 0 ]] || return 0
  say "sent TERM to: ${alive[*]}"
  prune_alive $((timeout * 5))
  if [[ ${#alive[@]} -gt 0 ]]; then
    say "still running after ${timeout}s, sending KILL to: ${alive[*]}"
    for n in "${alive[@]}"; do signal_group "$n" KILL; done
    prune_alive 50
    [[ ${#alive[@]} -eq 0 ]] || say "WARNING: could not stop: ${alive[*]}"
  fi
  for n in "$@"; do group_alive "$n" || rm -f "$PID_DIR/$n.pid"; done
}

# ---------------------------------------------------------------------------------------
# Waits: bounded by a count and a time; they say what they waited for when they give up.

port_open() { (exec 3<>"/dev/tcp/$HOST_IP/$1") 2>/dev/null; }

# wait_until SECONDS WHAT LOGFILE DAEMON COMMAND... : polls COMMAND every 0.5s.
wait_until() {
  local secs=$1 what=$2 log=$3 daemon=$4; shift 4
  local tries=$((secs * 2)) i deadline=$(( $(date +%s) + secs ))
  for ((i = 0; i < tries; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if [[ -n $daemon ]] && ! group_alive "$daemon"; then
      die "$daemon died while waiting for $what; last lines of $log:
$(tail -n 30 "$log" 2>/dev/null)"
    fi
    (( $(date +%s) < deadline )) || break
    sleep 0.5
  done
  die "gave up after ${secs}s ($i tries) waiting for $what; last lines of $log:
$(tail -n 30 "$log" 2>/dev/null)"
}

# http_answers URL -> true once the API at URL answers below 500 (uwsgi answers 500 while
# its application failed to load)
http_answers() {
  local code
  code=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$1" 2>/dev/null) || true
  [[ $code =~ ^[1-4][0-9][0-9]$ ]]
}

wait_http() { # NAME DAEMON URL SECONDS
  wait_until "$4" "$1 to answer at $3" "$LOG_DIR/$2.log" "$2" http_answers "$3"
}

# ---------------------------------------------------------------------------------------
# Templates: etc/*.tmpl hold @NAME@ placeholders, replaced by the values of the shell
# variables of the same name (exported by the caller). An unknown placeholder is an error.

render() { # TEMPLATE OUTPUT
  "$PY" - "$1" "$2" <<'PYEOF'
import os, re, sys
src, dst = sys.argv[1], sys.argv[2]
text = open(src).read()
missing = set()
def sub(m):
    v = os.environ.get(m.group(1))
    if v is None:
        missing.add(m.group(1))
        return m.group(0)
    return v
out = re.sub(r'@([A-Z][A-Z0-9_]*)@', sub, text)
if missing:
    sys.exit("render %s: no value for %s" % (src, ", ".join(sorted(missing))))
tmp = dst + ".tmp"
with open(tmp, "w") as f:
    f.write(out)
os.chmod(tmp, 0o600)
os.replace(tmp, dst)
PYEOF
}

# mysql client on our own socket, as the MariaDB root user (unix_socket authentication)
sql() { mariadb --defaults-file="$ETC/my.cnf" -uroot "$@"; }

# take_lock: one up/down/reset at a time (fd 9 on $STATE.lock; daemons never inherit it)
take_lock() {
  mkdir -p "$(dirname "$STATE")"
  exec 9>"$STATE.lock"
  flock -w 300 9 || die "another up/down/reset holds $STATE.lock (gave up after 300s)"
}

# load generated secrets into the environment (they are created by up.sh on first run)
load_secrets() {
  [[ -s $STATE/secrets.env ]] || return 1
  set -a
  # shellcheck disable=SC1091
  . "$STATE/secrets.env"
  set +a
}
