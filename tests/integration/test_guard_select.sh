#!/usr/bin/env bash
# The guard picks processes by their rules: two MemSpike processes told apart
# by command line, a rule matching only one of them -> only that one is dumped;
# a process started after the daemon, matching another rule -> attached and
# dumped too.
source "$(dirname "$0")/lib.sh"

A="alpha$$" B="beta$$" C="gamma$$"
start_tagged "$A"
start_tagged "$B"
cat >"$RULES/loh.json" <<JSON
{
  "rules": [
    { "name": "alpha-loh", "process": { "cmdline": "*--tag $A" },
      "when": "loh-size > 200MB", "dump": { "type": "triage" } },
    { "name": "gamma-loh", "process": { "name": "MemSpike", "cmdline": "*--tag $C" },
      "when": [ { "metric": "loh-size", "above": "200MB" } ], "dump": { "type": "triage" } }
  ]
}
JSON
start_guard
wait_journal attach 1 15 "\"pid\":${APP_PIDS[$A]}" || fail "alpha not attached"
[ "$(journal_count_with attach "\"pid\":${APP_PIDS[$B]}")" -eq 0 ] || fail "beta attached although no rule matches it"

tagged_cmd "$A" "loh 300"
tagged_cmd "$B" "loh 300"
wait_journal dump 1 30 "\"pid\":${APP_PIDS[$A]}" || fail "alpha not dumped"
wait_tagged_done "$B" "loh 300" 10
sleep 1 # beta's spike has been held a second: nothing may come of it
[ "$(dumps_of "${APP_PIDS[$A]}")" -eq 1 ] || fail "expected one dump of alpha, found $(dumps_of "${APP_PIDS[$A]}")"
[ "$(dumps_of "${APP_PIDS[$B]}")" -eq 0 ] || fail "beta was dumped"
core=$(find "$DUMPS" -name "*-${APP_PIDS[$A]}-alpha-loh-*.core")
"$DW_CORECHECK" "$core" "${APP_PIDS[$A]}" >/dev/null || fail "bad core $core"
check_dump --type triage "$core" "${APP_PIDS[$A]}"

# A process started after the daemon is found through its diagnostics socket.
start_tagged "$C"
wait_journal attach 1 5 "\"pid\":${APP_PIDS[$C]}" || fail "gamma (started later) not attached within 5 s"
grep "\"event\":\"attach\"" "$JOURNAL" | grep -F "\"pid\":${APP_PIDS[$C]}" | grep_q '"rules":\["gamma-loh"\]' ||
	fail "gamma attached for the wrong rules"
tagged_cmd "$C" "loh 300"
wait_journal dump 1 30 "\"pid\":${APP_PIDS[$C]}" || fail "gamma not dumped"
check_dump --type triage "$(find "$DUMPS" -name "*-${APP_PIDS[$C]}-gamma-loh-*.core")" "${APP_PIDS[$C]}"

# Exits are noticed.
tagged_cmd "$B" "exit"
tagged_cmd "$C" "exit"
wait_journal detach 1 10 "\"pid\":${APP_PIDS[$C]}" || fail "gamma's exit not journaled"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC after SIGTERM"
[ "$(journal_count stop)" -eq 1 ] || fail "no stop record"
[ "$(count_partials)" -eq 0 ] || fail "partial files left"
echo "PASS: only the matching process dumped; a later process guarded"
