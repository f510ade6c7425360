#!/usr/bin/env bash
# A diagnostics socket planted by another user under the name a runtime would
# use, for a process that is not .NET: the socket belongs to another uid than
# the process's, so dumpwatch skips it before connecting (it never reaches
# the listener, whose peer check, SO_PEERCRED, would refuse it anyway) and
# says so in one line. The guard logs it once, keeps running and still
# guards a real process.
source "$(dirname "$0")/lib.sh"

sleep 300 &
VICTIM=$!
PIDS+=("$VICTIM")
start=$(awk '{print $22}' "/proc/$VICTIM/stat")
sock="/tmp/dotnet-diagnostic-$VICTIM-$start-socket"
: >"$T/planter.log"
chmod 0666 "$T/planter.log"
# It logs who connects: other tests' daemons on this machine may, ours must not.
install -m 0644 "$DW_SOURCE_DIR/tests/tools/planter.py" "$T/planter.py"
setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 "$T/planter.py" "$T/planter.log" "live:$sock" &
PLANTER=$!
PIDS+=("$PLANTER")
wait_for "grep -q ready '$T/planter.log'" 10 || fail "planter did not start"
[ "$(stat -c %U "$sock")" = nobody ] || fail "planted socket not owned by nobody"
trap 'rm -f "$sock"; cleanup' EXIT

OURS=()
# run_ours OUT ERR CMD...: runs CMD (bounded), remembering its pid; sets RC.
run_ours() {
	local out=$1 err=$2
	shift 2
	"$@" >"$out" 2>"$err" &
	OURS+=("$!")
	PIDS+=("$!")
	local deadline=$((SECONDS + 20))
	while kill -0 "${OURS[-1]}" 2>/dev/null; do
		((SECONDS < deadline)) || fail "$* still running after 20 s"
		sleep 0.1
	done
	set +e
	wait "${OURS[-1]}"
	RC=$?
	set -e
}
no_connection_from_us() {
	for p in "${OURS[@]}"; do
		if grep -q "^connection from $p " "$T/planter.log"; then
			fail "$1 connected to the planted socket: $(cat "$T/planter.log")"
		fi
	done
}

# Watch mode: not a candidate, one line, no connection.
ignoring="ignoring $sock: that socket belongs to uid $(id -u nobody), not to uid 0 of process $VICTIM"
run_ours "$T/watch.out" "$T/watch.out" "$DUMPWATCH" --pid "$VICTIM" --when 'gc-heap-size > 1MB'
out=$(cat "$T/watch.out")
[ "$RC" -eq 2 ] || fail "watching a planted socket: exit $RC: $out"
echo "$out" | grep_q -F "$ignoring" || fail "no line naming the planted socket: $out"
[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "expected one line, got: $out"
no_connection_from_us "--pid"

# `ps` does not list it as a .NET process, and says why on stderr.
run_ours "$T/ps.out" "$T/ps.err" "$DUMPWATCH" ps
grep -q "^$VICTIM " "$T/ps.out" && fail "ps lists the planted socket's pid: $(cat "$T/ps.out")"
grep -qF "pid $VICTIM: $ignoring" "$T/ps.err" || fail "ps gave no warning: $(cat "$T/ps.err")"

# `counters --name` looks at every .NET process: the planted one is said
# once, not at every scan.
run_ours /dev/null "$T/views.err" "$DUMPWATCH" counters --name 'nothing-matches*' --duration 2s --format json
[ "$(grep -cF "pid $VICTIM: $ignoring" "$T/views.err")" -eq 1 ] ||
	fail "counters --name: expected one line about the planted socket: $(cat "$T/views.err")"
no_connection_from_us "ps or counters"

# Guard mode: a rule that matches every process; the planted one is skipped
# and logged once, the real one is attached and dumped.
start_tagged "real$$"
cat >"$RULES/all.json" <<JSON
{ "rules": [ { "name": "any-loh", "process": { "cmdline": "*" },
               "when": "loh-size > 200MB", "dump": { "type": "triage" } } ] }
JSON
start_guard
OURS+=("$DW_PID")
wait_journal attach 1 15 "\"pid\":${APP_PIDS[real$$]}" || fail "real process not attached"
wait_for "grep -qF 'pid $VICTIM: $ignoring' '$T/dw.out'" 10 || fail "guard did not log the planted socket"
[ "$(journal_count_with attach "\"pid\":$VICTIM")" -eq 0 ] || fail "guard attached to the planted socket"
tagged_cmd "real$$" "loh 300"
wait_journal dump 1 30 "\"pid\":${APP_PIDS[real$$]}" || fail "real process not dumped"
no_connection_from_us "the guard"
[ "$(grep -cF "pid $VICTIM: $ignoring" "$T/dw.out")" -eq 1 ] || fail "guard: expected the planted socket logged once"
kill -0 "$DW_PID" || fail "guard died"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC"
echo "PASS: planted socket skipped (no connection from dumpwatch), said once by each command, real process still dumped"
