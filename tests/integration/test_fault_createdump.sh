#!/usr/bin/env bash
# createdump missing, failing and hanging, with the real runtime: a process
# whose runtime (a private copy) has its createdump replaced, guarded beside a
# healthy one. Each failure is journaled with its reason, leaves no partial
# file, and the hanging one is killed at --dump-timeout; afterwards the daemon
# is alive, the healthy process is still dumped, and the journal parses.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }

copy_runtime "$T/dotnet"
CD="$RUNTIME_DIR/createdump"
mv "$CD" "$T/createdump.real"
start_tagged "broken$$" env DOTNET_ROOT="$T/dotnet"
grep -q "$RUNTIME_DIR/libcoreclr.so" "/proc/${APP_PIDS[broken$$]}/maps" || fail "the copied runtime was not loaded"
start_tagged "good$$"
cat >"$RULES/r.json" <<JSON
{ "rules": [
  { "name": "broken-loh", "process": { "cmdline": "*--tag broken$$" }, "when": "loh-size > 100MB",
    "dump": { "type": "triage" }, "limits": { "max-dumps": 10, "cooldown": "4s" } },
  { "name": "good-loh", "process": { "cmdline": "*--tag good$$" }, "when": "loh-size > 100MB",
    "dump": { "type": "triage" } } ] }
JSON
start_guard --dump-timeout 3s
B=${APP_PIDS[broken$$]}
wait_journal attach 2 15 || fail "not attached to both"

# spike_broken N: one LOH spike of the broken process; waits for the N-th
# failure record.
spike_broken() {
	tagged_cmd "broken$$" "loh 150"
	wait_journal dump-failed "$1" "${2:-20}" "\"pid\":$B" || fail "failure $1 not journaled"
	tagged_cmd "broken$$" "release"
	sleep 4.5 # the cooldown passes with the heap released: no second fire
	[ "$(journal_count_with dump-failed "\"pid\":$B")" -eq "$1" ] || fail "expected $1 failure(s): $(cat "$JOURNAL")"
	[ "$(count_partials)" -eq 0 ] || fail "partial file left after failure $1"
	kill -0 "$DW_PID" || fail "the daemon died after failure $1"
}

# 1. Failing: exits 1 at once.
printf '#!/bin/sh\nexit 1\n' >"$CD"
chmod 0755 "$CD"
spike_broken 1
failure() { grep '"event":"dump-failed"' "$JOURNAL" | sed -n "$1p"; }
failure 1 | grep_q '"error":"the runtime refused the command' || fail "no reason for failure 1: $(failure 1)"

# 2. Hanging: the runtime's createdump is killed after 3 s.
printf '#!/bin/sh\nwhile :; do sleep 1; done\n' >"$CD"
spike_broken 2 30
failure 2 | grep_q 'did not finish within 3s (--dump-timeout): killed it' || fail "hang not reported: $(failure 2)"
pgrep -P "$B" -x createdump >/dev/null && fail "the hanging createdump is still running"

# 3. The exec path (the operator's --createdump, root's), hanging: our own
# child, killed too.
stop_guard
EXEC_CD="$T/createdump-exec"
printf '#!/bin/sh\nwhile :; do sleep 1; done\n' >"$EXEC_CD"
chmod 0755 "$EXEC_CD"
start_guard --dump-timeout 2s --createdump "$EXEC_CD"
wait_journal attach 4 15 || fail "not attached again"
spike_broken 3 30
failure 3 | grep_q 'did not finish within 2s' || fail "exec hang not reported: $(failure 3)"
pgrep -f "^/bin/sh $EXEC_CD" >/dev/null && fail "exec createdump still running"

# 4. The exec path, failing with a message on stderr, as createdump does: its
# last line ends the reason, escaped like anything a process says (createdump
# names the target by its comm), and none of it reaches dumpwatch's own output.
printf '#!/bin/sh\nprintf "[createdump] cannot dump \\033[31mx\\n" >&2\nexit 1\n' >"$EXEC_CD"
spike_broken 4
failure 4 | grep_q -F 'createdump failed with exit status 1 (is the process gone, or is ptrace not allowed?): [createdump] cannot dump \u001b[31mx"' ||
	fail "createdump's message not in the reason: $(failure 4)"
grep -q $'\e' "$T/dw.out" && fail "createdump's output reached dumpwatch's: $(grep $'\e' "$T/dw.out" | cat -v)"

# 5. The exec path, its createdump removed while the daemon runs.
rm "$EXEC_CD"
spike_broken 5
failure 5 | grep_q "\"error\":\"createdump $EXEC_CD: No such file or directory\"" || fail "missing not reported: $(failure 5)"

# 6. Repaired: dumped.
cp -a "$T/createdump.real" "$EXEC_CD"
cp -a "$T/createdump.real" "$CD"
tagged_cmd "broken$$" "loh 150"
wait_journal dump 1 30 "\"pid\":$B" || fail "repaired createdump: no dump"
tagged_cmd "broken$$" "release"
sleep 4.5

# 7. The runtime path, missing. (The runtime of .NET 10.0.12 then also loses
# its diagnostics socket: the child it forked for createdump exits through
# the runtime's shutdown.)
stop_guard
start_guard
wait_journal attach 6 15 || fail "not attached a third time"
rm "$CD"
spike_broken 6
failure 6 | grep_q 'Problem launching createdump' || fail "runtime missing createdump not reported: $(failure 6)"

# The healthy process was never affected.
tagged_cmd "good$$" "loh 150"
wait_journal dump 1 30 "\"pid\":${APP_PIDS[good$$]}" || fail "healthy process not dumped"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC"
[ "$(count_partials)" -eq 0 ] || fail "partial files left"
jq -c . "$JOURNAL" >/dev/null || fail "journal does not parse"
echo "PASS: createdump failing / hanging / missing (runtime and exec paths) journaled with reasons (createdump's own, escaped), hangs killed, no partials; daemon alive; healthy process dumped"
