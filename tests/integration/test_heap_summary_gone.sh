#!/usr/bin/env bash
# The heap summary after a core dump, when the target is gone by then. Two
# GcLab processes under the guard, each matched by a rule with a triage dump
# and "heap-summary": true. Dumps run through --dump-via exec, with a
# createdump that is the runtime's own followed, for the first process only,
# by its death: the wrapper kills it, waits until it has exited (its pidfd
# readable: every thread gone, its sockets closed), says so in a file and
# returns only when the test lets it. So the core is whole and the snapshot
# that would follow has no runtime to ask, every time, with no sleep racing
# the process. (No hook can do this: on-fire runs before the dump, on-dump
# after the summary, with the summary in the context it names.)
# 1. While that dump of a dead process is still open, the guard answers
#    `dumpwatch status` (the process "dumping") and idles: less than a
#    quarter of a core over 2 s (it spun a whole core on the dead process's
#    pidfd until the dump ended).
# 2. Let go: the core is published (DumpCheck reads it), the journal's dump
#    record is whole (path, bytes, via, type, context, plot) and comes before
#    the process's detach, NAME.json says outcome dump, no heap, and
#    heap_error in one line that the process exited after its dump; `show`
#    and the log say the same; no partial file is left.
# 3. The guard lives on: `status` counts one dump taken, none failed, and the
#    second process attached, which is then dumped with its heap summary in
#    its context; SIGTERM ends the guard with status 0.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root (--createdump must be root's)"
command -v jq >/dev/null || fail "jq missing (scripts/setup.sh installs it)"
APP="$DW_APPS_DIR/GcLab/GcLab"
[ -x "$APP" ] || fail "$APP not built"
A="gone$$"
B="stays$$"
start_tagged "$A"
start_tagged "$B"
P=${APP_PIDS[$A]}
Q=${APP_PIDS[$B]}

# The createdump of the runtime the processes loaded (the host's, or the one
# a self-contained build carries).
coreclr=$(grep -m1 -o '/[^ ]*/libcoreclr\.so$' "/proc/$P/maps") || fail "no libcoreclr.so in pid $P's maps"
REAL_CD="$(dirname "$coreclr")/createdump"
[ -x "$REAL_CD" ] || fail "no createdump beside $coreclr"
CD="$T/createdump"
mkfifo -m 0600 "$T/release"
cat >"$CD" <<SH
#!/bin/sh
# The runtime's createdump; then, for pid $P alone, its death, waited for,
# said in $T/killed, and a wait for a line on $T/release.
"$REAL_CD" "\$@" || exit \$?
for pid; do :; done
[ "\$pid" = "$P" ] || exit 0
exec /usr/bin/python3 -c '
import os, select, signal, sys
fd = os.pidfd_open(int(sys.argv[1]))
signal.pidfd_send_signal(fd, signal.SIGKILL)
select.select([fd], [], [])
open(sys.argv[2], "w").write("killed\n")
open(sys.argv[3]).read()
' "\$pid" "$T/killed" "$T/release"
SH
chmod 0755 "$CD"

cat >"$RULES/r.json" <<JSON
{ "rules": [
  { "name": "gone-heap", "process": { "cmdline": "*--tag $A" }, "when": "heap-size > 50MB",
    "dump": { "type": "triage", "heap-summary": true } },
  { "name": "stays-heap", "process": { "cmdline": "*--tag $B" }, "when": "heap-size > 50MB",
    "dump": { "type": "triage", "heap-summary": true } } ] }
JSON
start_guard --createdump "$CD" --dump-timeout 60s
wait_journal attach 2 15 || fail "not attached to both"

# --- 1. the first process dumped, then killed; its dump held open ---
tagged_cmd "$A" "cache 60 1048576 1000"
wait_for "[ -s '$T/killed' ]" 60 || fail "the dump of pid $P did not end with its death: $(ls -A "$DUMPS")"
"$DUMPWATCH" status --json --state-dir "$T" >"$T/status1.json" || fail "status did not answer during the dump"
jq -e --argjson p "$P" '[.processes[] | select(.pid == $p and .state == "dumping")] | length == 1' \
	"$T/status1.json" >/dev/null || fail "status during the dump: $(jq -c '[.processes[] | {pid, state}]' "$T/status1.json")"
# CPU time (utime + stime, in clock ticks) of the guard over 2 s.
ticks() { awk '{ print $14 + $15 }' "/proc/$DW_PID/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks)
sleep 2
t1=$(ticks)
echo "the guard used $((t1 - t0)) ticks of $((2 * hz)) while the dump of the dead pid $P was open"
[ $((t1 - t0)) -lt $((hz / 2)) ] || fail "the guard spun while the dump of the dead pid $P was open: $((t1 - t0)) ticks in 2 s"
timeout 10 sh -c "echo go >'$T/release'" || fail "the createdump wrapper was not waiting"

# --- 2. the dump published, with why it has no heap summary ---
wait_journal dump 1 60 "\"pid\":$P" || fail "no dump of pid $P"
wait_journal detach 1 15 "\"pid\":$P" || fail "pid $P not detached"
C=$(find "$DUMPS" -maxdepth 1 -name "*-$P-*.core")
[ "$(echo "$C" | grep -c .)" -eq 1 ] || fail "expected one core of pid $P: $(ls -A "$DUMPS")"
check_dump --type triage --name GcLab "$C" "$P"
[ "$(count_partials)" -eq 0 ] || fail "a partial file was left: $(ls -A "$DUMPS")"
J=${C%.core}.json
[ -f "$J" ] && [ -f "${C%.core}.svg" ] || fail "no context files beside $C: $(ls -A "$DUMPS")"
rec=$(grep '"event":"dump"' "$JOURNAL" | grep -F "\"pid\":$P")
echo "journal: $rec"
echo "$rec" | jq -e --arg c "$C" --arg j "$J" '.path == $c and .bytes > 0 and .via == "exec" and .type == "triage"
	and .rule == "gone-heap" and .context == $j and (.plot | endswith(".svg")) and (.context_ms >= 0)' >/dev/null ||
	fail "the dump record is not whole: $rec"
[ "$(grep -F "\"pid\":$P" "$JOURNAL" | jq -r .event | grep -E '^(dump|detach)$' | paste -sd' ')" = "dump detach" ] ||
	fail "records of pid $P: $(grep -F "\"pid\":$P" "$JOURNAL" | jq -r .event | paste -sd' ')"
jq -e '.outcome == "dump" and .error == null and .heap == null and .dump.bytes > 0' "$J" >/dev/null ||
	fail "the context: $(jq -c '{outcome, error, heap: (.heap | type), dump}' "$J")"
WHY=$(jq -r '.heap_error' "$J")
echo "heap_error: $WHY"
[ "$WHY" = "the process exited after its dump, before its heap summary could be taken" ] ||
	fail "heap_error: $(jq -c .heap_error "$J")"
"$DUMPWATCH" show "$J" >"$T/show.txt" || fail "show failed: $(cat "$T/show.txt")"
grep_q -Fx "heap summary: missing: $WHY" "$T/show.txt" || fail "show: $(cat "$T/show.txt")"
grep_q -F "heap summary of pid $P (GcLab) for $C: $WHY" "$T/dw.out" || fail "the reason is not in the log"

# --- 3. the guard lives on ---
kill -0 "$DW_PID" || fail "the guard died"
"$DUMPWATCH" status --json --state-dir "$T" >"$T/status2.json" || fail "status did not answer"
jq -e --argjson p "$P" --argjson q "$Q" '.dumps_taken == 1 and .dumps_failed == 0
	and ([.processes[] | select(.pid == $q and .state == "attached")] | length) == 1
	and ([.processes[] | select(.pid == $p)] | length) == 0' "$T/status2.json" >/dev/null ||
	fail "status: $(jq -c '{dumps_taken, dumps_failed, processes: [.processes[] | {pid, state}]}' "$T/status2.json")"
tagged_cmd "$B" "cache 60 1048576 1000"
wait_journal dump 1 60 "\"pid\":$Q" || fail "no dump of pid $Q"
D=$(find "$DUMPS" -maxdepth 1 -name "*-$Q-*.core")
[ -n "$D" ] && kill -0 "$Q" || fail "no core of pid $Q, or it died: $(ls -A "$DUMPS")"
jq -e '.heap.objects > 1000 and .heap_error == null' "${D%.core}.json" >/dev/null ||
	fail "no heap summary of pid $Q: $(jq -c '{heap: (.heap | type), heap_error}' "${D%.core}.json")"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC after SIGTERM"
jq -c . "$JOURNAL" >/dev/null || fail "the journal does not parse"
echo "PASS: the target gone before its heap summary: the guard idle and answering while the dump was open, the core published and whole, its journal record whole, heap_error in one line; the other process dumped with its summary"
