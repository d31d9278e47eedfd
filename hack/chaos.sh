#!/usr/bin/env bash
# make chaos: the chaos suite's long forms (issue 21), run by hand.
#   - the outage and throttling cases on each cloud's emulator (two replicas,
#     a real apiserver), each for CHAOS_OUTAGE (default 10m); the crash case,
#     CHAOS_KILLS SIGKILLs of the leader (default 200) while CHAOS_SERVICES
#     Services (default 50) churn; the secrets cases (every secret key of
#     every cloud in every malformed shape of cfgtest.Shapes, through the
#     process at -v=6 and doctor); `overcast sweep`;
#   - every fuzz target for CHAOS_FUZZTIME each (default 3m): config parsers,
#     annotation tables, retry and response parsing. A crasher is written to
#     the package's testdata/fuzz and becomes a seed of `make test`.
# The report goes to tmp/chaos/report.md: quote it in docs/reliability.md.
# CHAOS_PARTS chooses what runs (default "e2e openstack peers fuzz", about
# three hours: e2e about two, openstack 15 minutes, peers 15 with all three
# peer binaries named, fuzz 40). Every overcast-ccm
# process's log is kept in tmp/chaos/logs; CHAOS_AUDIT=1
# also keeps the apiserver's audit of every Service write in tmp/chaos/audit
# (about 80 MB per 200 kills), to trace who changed a Service and when.
set -euo pipefail
cd "$(dirname "$0")/.."
OUTAGE=${CHAOS_OUTAGE:-10m}
FUZZTIME=${CHAOS_FUZZTIME:-3m}
KILLS=${CHAOS_KILLS:-200}
SERVICES=${CHAOS_SERVICES:-50}
PARTS=${CHAOS_PARTS:-e2e openstack peers fuzz}
part() { [[ " $PARTS " == *" $1 "* ]]; }
out=tmp/chaos
rm -rf "$out/logs" "$out/audit"
mkdir -p "$out"
export OVERCAST_E2E_LOGS_DIR=$PWD/$out/logs
if [[ ${CHAOS_AUDIT:-} == 1 ]]; then
	export OVERCAST_E2E_AUDIT_DIR=$PWD/$out/audit
fi
report=$out/report.md
rows=$out/rows.md
: > "$rows"
started=$(date -u +%FT%TZ)
status=0

if part e2e; then
	echo "chaos: outage and throttling of $OUTAGE, $KILLS kills of the leader, on each emulator (log: $out/e2e.log)"
	if ! OVERCAST_CHAOS_SECRET_SHAPES=all OVERCAST_CHAOS_OUTAGE=$OUTAGE OVERCAST_CHAOS_THROTTLE=$OUTAGE OVERCAST_CHAOS_REPORT=$PWD/$rows \
		OVERCAST_CHAOS_KILLS=$KILLS OVERCAST_CHAOS_SERVICES=$SERVICES \
		OVERCAST_TEST_BINARIES="$(hack/test-binaries.sh)" OVERCAST_CCM_BINARY=$PWD/bin/overcast-ccm \
		OVERCAST_CHAOS_APISERVER_GONE=${CHAOS_APISERVER_GONE:-2m} \
		go test -count=1 -timeout 4h -run 'TestChaos|TestSweep' ./test/e2e/ > "$out/e2e.log" 2>&1; then
		status=1
		echo "chaos: the e2e cases FAILED (see $out/e2e.log)"
	fi
fi

state=${OVERCAST_OPENSTACK_STATE:-/var/tmp/overcast-openstack}
if ! part openstack; then
	:
elif [[ -f $state/openstack.env ]]; then
	echo "chaos: outage of $OUTAGE on the real OpenStack (log: $out/openstack.log)"
	if ! { bash test/openstack/up.sh && OVERCAST_CHAOS_OPENSTACK_OUTAGE=$OUTAGE OVERCAST_CHAOS_REPORT=$PWD/$rows \
		OVERCAST_TEST_BINARIES="$(hack/test-binaries.sh)" OVERCAST_CCM_BINARY=$PWD/bin/overcast-ccm \
		go test -count=1 -timeout 1h -run 'TestOutageOfTheRealOpenStack' ./test/e2e/openstack/; } > "$out/openstack.log" 2>&1; then
		status=1
		echo "chaos: the real OpenStack's outage FAILED (see $out/openstack.log)"
	fi
else
	echo "chaos: no OpenStack harness ($state): its outage case is skipped (make openstack-up first)"
fi

# The peers, both ways: every test that runs an unmodified peer binary,
# for each peer named (OVERCAST_PEER_CLOUDSTACK, OVERCAST_PEER_OCI,
# OVERCAST_PEER_OPENSTACK; docs/<cloud>.md says how to build each); the
# OpenStack ones on the real OpenStack when its harness is there.
peer_rows=""
if part peers; then
	for peer in CLOUDSTACK OCI OPENSTACK; do
		var=OVERCAST_PEER_$peer
		if [[ -z ${!var:-} ]]; then
			peer_rows+="| ${peer,,} | - | skipped: $var names no binary |"$'\n'
			continue
		fi
		pkg=./test/e2e/
		case $peer in
		CLOUDSTACK) tests='^TestCloudStack.*(ThePeer|Shared)' ;;
		OCI) tests='^TestOCI.*(ThePeer|Peer)' ;;
		OPENSTACK) tests='^TestOpenStack(TakesOver|GoesBack)' pkg=./test/e2e/openstack/ ;;
		esac
		if [[ $peer == OPENSTACK && ! -f $state/openstack.env ]]; then
			peer_rows+="| ${peer,,} | - | skipped: no OpenStack harness |"$'\n'
			continue
		fi
		log=$out/peers-${peer,,}.log
		echo "chaos: the unmodified ${peer,,} peer, both ways (log: $log)"
		[[ $peer == OPENSTACK ]] && bash test/openstack/up.sh > /dev/null 2>&1
		if OVERCAST_TEST_BINARIES="$(hack/test-binaries.sh)" OVERCAST_CCM_BINARY=$PWD/bin/overcast-ccm \
			go test -count=1 -v -timeout 1h -run "$tests" "$pkg" > "$log" 2>&1; then
			peer_rows+="| ${peer,,} | $(grep -c '^--- PASS' "$log") | ok |"$'\n'
		else
			status=1
			peer_rows+="| ${peer,,} | $(grep -c '^--- PASS' "$log") | FAILED (see $log) |"$'\n'
		fi
	done
fi

fuzz_rows=""
part fuzz && while read -r pkg target; do
	echo "chaos: fuzzing $target in $pkg for $FUZZTIME"
	log=$out/fuzz-$(basename "$pkg")-$target.log
	if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" > "$log" 2>&1; then
		execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
		fuzz_rows+="| $pkg | $target | $FUZZTIME | ${execs:-?} | ok |"$'\n'
	else
		status=1
		fuzz_rows+="| $pkg | $target | $FUZZTIME | - | FAILED (crasher in testdata/fuzz) |"$'\n'
	fi
done < <(grep -rl --include='*_test.go' '^func Fuzz' internal | sort | while read -r f; do
	for t in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | cut -d' ' -f2); do echo "./$(dirname "$f") $t"; done
done)

{
	echo "Run of \`make chaos CHAOS_PARTS='$PARTS' CHAOS_OUTAGE=$OUTAGE CHAOS_KILLS=$KILLS CHAOS_SERVICES=$SERVICES CHAOS_FUZZTIME=$FUZZTIME\`, started $started, $(git describe --tags --always --dirty)."
	echo
	echo "| case | cloud | outage | calls/min during | Nodes deleted | shutdown taints | addresses moved | most Warnings per Service | converged after recovery |"
	echo "|---|---|---|---|---|---|---|---|---|"
	grep '^| outage ' "$rows" || true
	echo
	echo "| case | cloud | apiserver gone for | replica exits | Nodes deleted | shutdown taints | converged after its return |"
	echo "|---|---|---|---|---|---|---|"
	grep '^| apiserver gone ' "$rows" || true
	echo
	echo "| case | cloud | upgraded from | cloud writes after the upgrade | load balancers adopted |"
	echo "|---|---|---|---|---|"
	grep '^| upgrade ' "$rows" || true
	echo
	echo "| case | cloud | the other's objects either sweep would remove | the other's objects untouched by a delete | the other's address kept |"
	echo "|---|---|---|---|---|"
	grep '^| isolation ' "$rows" || true
	echo
	echo "| case | cloud | 429 on half the calls for | calls/min | 429 answers | soonest repeat of a call answered 429 | repeats within 0.9 s | 3 new Services and a change converged after |"
	echo "|---|---|---|---|---|---|---|---|"
	grep '^| throttling ' "$rows" || true
	echo
	echo "| case | cloud | SIGKILLs of the leader | replicas that exited by themselves | churned Services | churn steps | kept | failover median | failover max | extra objects (emulator) | leftovers (sweep) | shared addresses | objects left after all deleted | converged after last kill |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	grep '^| crash ' "$rows" || true
	echo
	echo "| case | cloud | hits of the credential's secret | searched (logs at -v=6, Events, Services, /metrics, doctor) |"
	echo "|---|---|---|---|"
	grep '^| secrets | ' "$rows" || true
	echo
	echo "| case | cloud | secret keys | runs (overcast-ccm at -v=6 and doctor, every malformed shape) | hits of a secret |"
	echo "|---|---|---|---|---|"
	grep '^| secrets per key ' "$rows" || true
	echo
	echo "| peer | tests passed (migration, the way back, two clusters) | result |"
	echo "|---|---|---|"
	printf '%s' "$peer_rows"
	echo
	echo "| package | fuzz target | time | executions | result |"
	echo "|---|---|---|---|---|"
	printf '%s' "$fuzz_rows"
} > "$report"
cat "$report"
exit $status
