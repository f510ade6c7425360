#!/usr/bin/env bash
# A diagnostics socket planted by another user under the name a runtime would
# use, for a process that is not .NET: dumpwatch checks who listens
# (SO_PEERCRED), refuses it with one line, and sends it nothing. The guard
# logs the refusal, keeps running and still guards a real process.
source "$(dirname "$0")/lib.sh"

sleep 300 &
VICTIM=$!
PIDS+=("$VICTIM")
start=$(awk '{print $22}' "/proc/$VICTIM/stat")
sock="/tmp/dotnet-diagnostic-$VICTIM-$start-socket"
: >"$T/planter.log"
chmod 0666 "$T/planter.log"
cat >"$T/planter.py" <<PY
import os, socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("$sock")
s.listen(16)
open("$T/planter.log", "a").write("ready\n")
while True:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        data = c.recv(4096)
    except OSError:
        data = b""
    with open("$T/planter.log", "a") as f:
        f.write("connection %d bytes\n" % len(data))
    c.close()
PY
chmod 0644 "$T/planter.py"
setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 "$T/planter.py" &
PLANTER=$!
PIDS+=("$PLANTER")
wait_for "grep -q ready '$T/planter.log'" 10 || fail "planter did not start"
[ "$(stat -c %U "$sock")" = nobody ] || fail "planted socket not owned by nobody"
trap 'rm -f "$sock"; cleanup' EXIT

# Watch mode: refused, one line, nothing sent.
set +e
out=$(timeout 20 "$DUMPWATCH" --pid "$VICTIM" --when 'gc-heap-size > 1MB' 2>&1)
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "watching a planted socket succeeded: $out"
echo "$out" | grep -q "refusing $sock: it is served by pid $PLANTER uid $(id -u nobody), not by process $VICTIM" ||
	fail "no refusal naming the planter: $out"
[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "expected one line, got: $out"
if grep -v "^ready" "$T/planter.log" | grep -qv "^connection 0 bytes"; then fail "bytes reached the planter: $(cat "$T/planter.log")"; fi

# `ps` does not list it as a .NET process, and says why on stderr.
"$DUMPWATCH" ps >"$T/ps.out" 2>"$T/ps.err" || true
grep -q "^$VICTIM " "$T/ps.out" && fail "ps lists the planted socket's pid: $(cat "$T/ps.out")"
grep -q "pid $VICTIM: .*refusing $sock" "$T/ps.err" || fail "ps gave no warning: $(cat "$T/ps.err")"

# `counters --name` looks at every .NET process: the planted one is refused
# once, not asked again at every scan.
"$DUMPWATCH" counters --name 'nothing-matches*' --duration 2s --format json >/dev/null 2>"$T/views.err" || true
[ "$(grep -c "pid $VICTIM: .*refusing $sock" "$T/views.err")" -eq 1 ] ||
	fail "counters --name: expected one refusal line: $(cat "$T/views.err")"

# Guard mode: a rule that matches every process; the planted one is refused
# and logged, the real one is attached and dumped.
start_tagged "real$$"
cat >"$RULES/all.json" <<JSON
{ "rules": [ { "name": "any-loh", "process": { "cmdline": "*" },
               "when": "loh-size > 200MB", "dump": { "type": "triage" } } ] }
JSON
start_guard
wait_journal attach 1 15 "\"pid\":${APP_PIDS[real$$]}" || fail "real process not attached"
wait_for "grep -q 'pid $VICTIM: .*refusing $sock' '$T/dw.out'" 10 || fail "guard did not log the refusal"
[ "$(journal_count_with attach "\"pid\":$VICTIM")" -eq 0 ] || fail "guard attached to the planted socket"
tagged_cmd "real$$" "loh 300"
wait_journal dump 1 30 "\"pid\":${APP_PIDS[real$$]}" || fail "real process not dumped"
if grep -v "^ready" "$T/planter.log" | grep -qv "^connection 0 bytes"; then fail "bytes reached the planter: $(cat "$T/planter.log")"; fi
kill -0 "$DW_PID" || fail "guard died"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC"
echo "PASS: planted socket refused ($(grep -c "^connection" "$T/planter.log") connections, 0 bytes), real process still dumped"
