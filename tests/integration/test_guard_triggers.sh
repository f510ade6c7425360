#!/usr/bin/env bash
# The new triggers under the guard (--rules-dir): two MemSpike processes told
# apart by command line, one guarded by an exception rule, the other by a
# private-memory rule polled every 20 ms. Each is dumped for its own rule
# only; the fire records carry the exception and the polled value; status
# shows both rules' metrics.
source "$(dirname "$0")/lib.sh"

A="throws$$" B="leaks$$"
start_tagged "$A"
start_tagged "$B"
cat >"$RULES/triggers.json" <<JSON
{
  "rules": [
    { "name": "invalid-ops", "process": { "cmdline": "*--tag $A" },
      "when": "exception InvalidOperation* message '*state*' >= 2 in 30s", "dump": { "type": "triage" } },
    { "name": "native-leak", "process": { "cmdline": "*--tag $B" },
      "when": "private-memory > 250MB", "dump": { "type": "triage" } }
  ]
}
JSON
start_guard --proc-interval 20ms --state-dir "$T/state"
wait_journal attach 1 15 "\"pid\":${APP_PIDS[$A]}" || fail "$A not attached"
wait_journal attach 1 15 "\"pid\":${APP_PIDS[$B]}" || fail "$B not attached"
wait_journal metrics-known 1 10 "\"pid\":${APP_PIDS[$B]}" || fail "private-memory of $B never known"
"$DUMPWATCH" status --json --state-dir "$T/state" >"$T/status.json" 2>"$T/status.err" ||
	fail "status failed: $(cat "$T/status.err")"
jq -e '[.. | strings] | map(select(contains("private-memory"))) | length > 0' "$T/status.json" \
	>/dev/null || fail "status does not show private-memory: $(head -c 1500 "$T/status.json")"

tagged_cmd "$A" "throw 1 invalid bad state"
tagged_cmd "$B" "native 300"
wait_journal dump 1 30 "\"pid\":${APP_PIDS[$B]}" || fail "$B not dumped for its native growth"
wait_tagged_done "$A" "throw 1 invalid bad state" 10
sleep 0.5
[ "$(dumps_of "${APP_PIDS[$A]}")" -eq 0 ] || fail "$A dumped after one exception"
tagged_cmd "$A" "throw 1 invalid still bad state"
wait_journal dump 1 30 "\"pid\":${APP_PIDS[$A]}" || fail "$A not dumped at the second exception"
grep '"event":"fire"' "$JOURNAL" | grep -F "\"pid\":${APP_PIDS[$A]}" | jq -e '.rule == "invalid-ops" and
	.exception.type == "System.InvalidOperationException" and .exception.message == "still bad state"' >/dev/null ||
	fail "the fire record of $A lacks its exception"
grep '"event":"fire"' "$JOURNAL" | grep -F "\"pid\":${APP_PIDS[$B]}" | jq -e '.rule == "native-leak" and
	.metrics["private-memory"] > 250e6' >/dev/null || fail "the fire record of $B lacks its value"
[ "$(dumps_of "${APP_PIDS[$A]}")" -eq 1 ] && [ "$(dumps_of "${APP_PIDS[$B]}")" -eq 1 ] || fail "expected one dump each"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "guard exit status $DW_RC"
echo "PASS: the guard dumps one process for its exceptions and another for its native memory, each for its own rule"
