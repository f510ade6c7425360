#!/usr/bin/env bash
# Limits in the guard: max-dumps 2 over repeated spikes -> exactly two dumps and
# a "limit" record; the daemon restarted -> the limit still holds for that
# process (no new dump inside the window); SIGHUP reloads without resetting it.
# What the guard holds is read through `dumpwatch status` each time.
source "$(dirname "$0")/lib.sh"

# fires_of PID RULE: the rule's fires and fires in its window for PID, as the
# running guard reports them ("2 2").
fires_of() {
	"$DUMPWATCH" status --json --state-dir "$T" | jq -r --argjson p "$1" --arg r "$2" \
		'.processes[] | select(.pid == $p) | .rules[] | select(.name == $r) | "\(.fires) \(.fires_in_window) \(.max_dumps)"'
}

A="limit$$"
start_tagged "$A"
P=${APP_PIDS[$A]}
cat >"$RULES/limit.json" <<JSON
{ "name": "two-only", "process": { "cmdline": "*--tag $A" }, "when": "loh-size > 200MB",
  "dump": { "type": "triage" }, "limits": { "max-dumps": 2, "window": "1h", "cooldown": "1s" } }
JSON
start_guard
wait_journal attach 1 15 "\"pid\":$P" || fail "not attached"
for i in 1 2 3 4; do
	tagged_cmd "$A" "spike 300 400"
	tagged_cmd "$A" "sleep 1200"
	wait_tagged_done "$A" "sleep 1200" 20
	[ "$i" -gt 2 ] || wait_journal dump "$i" 30 "\"pid\":$P" || fail "dump $i not taken"
done
[ "$(dumps_of "$P")" -eq 2 ] || fail "expected exactly two dumps, found $(dumps_of "$P")"
for core in "$DUMPS"/*-"$P"-*.core; do check_dump --type triage "$core" "$P"; done
wait_journal limit 1 5 "\"pid\":$P" || fail "limit not journaled"
[ "$(fires_of "$P" two-only)" = "2 2 2" ] || fail "status: expected 2 fires of 2 in the window, got '$(fires_of "$P" two-only)'"
"$DUMPWATCH" status --state-dir "$T" >"$T/status.txt" || fail "status failed"
grep_q -F "rule two-only: " "$T/status.txt" || fail "status text lacks the rule: $(cat "$T/status.txt")"
grep_q -E "^$P +MemSpike +attached" "$T/status.txt" || fail "status text lacks the process: $(cat "$T/status.txt")"

# SIGHUP: a full reload; the unchanged rule keeps its count.
kill -HUP "$DW_PID"
wait_journal reload 1 5 || fail "SIGHUP not journaled"
tagged_cmd "$A" "spike 300 400"
tagged_cmd "$A" "sleep 1200"
wait_tagged_done "$A" "sleep 1200" 20
[ "$(dumps_of "$P")" -eq 2 ] || fail "SIGHUP reset the limit"
[ "$(fires_of "$P" two-only)" = "2 2 2" ] || fail "status after SIGHUP: '$(fires_of "$P" two-only)'"

# Restart: the state file carries the limit over.
stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC after SIGTERM"
[ -s "$T/state.json" ] || fail "no state file beside the journal"
"$DUMPWATCH" status --state-dir "$T" >/dev/null 2>&1 && fail "status answered with no guard running"
start_guard
grep '"event":"start"' "$JOURNAL" | tail -1 | grep_q -F '"restored_limits":1' || fail "limit state not restored"
wait_journal attach 2 15 "\"pid\":$P" || fail "not attached after restart"
[ "$(fires_of "$P" two-only)" = "2 2 2" ] || fail "status after restart: '$(fires_of "$P" two-only)'"
tagged_cmd "$A" "spike 300 400"
tagged_cmd "$A" "sleep 1200"
wait_tagged_done "$A" "sleep 1200" 20
wait_journal limit 2 5 "\"pid\":$P" || fail "limit not journaled after restart"
[ "$(dumps_of "$P")" -eq 2 ] || fail "the restarted daemon dumped again inside the window"
[ "$(journal_count dump)" -eq 2 ] || fail "expected two dump records in all"

# The same rule for a new process starts from zero.
B="fresh$$"
sed -i "s/--tag $A/--tag $B/" "$RULES/limit.json"
start_tagged "$B"
wait_journal attach 1 15 "\"pid\":${APP_PIDS[$B]}" || fail "new process not attached"
tagged_cmd "$B" "spike 300 400"
wait_journal dump 1 30 "\"pid\":${APP_PIDS[$B]}" || fail "new process not dumped"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC"
echo "PASS: max-dumps 2 -> two dumps; limit survives SIGHUP and a restart"
