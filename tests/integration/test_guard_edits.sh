#!/usr/bin/env bash
# Rule files edited while the guard runs: a file dropped in -> it fires; an
# invalid edit -> rejected with file:line:column in the journal, the old rule
# still fires; the file fixed -> the new version is in force; the file deleted
# -> no more dumps. Editors' save-by-rename is what every write here does.
source "$(dirname "$0")/lib.sh"

A="edit$$"
start_tagged "$A"
P=${APP_PIDS[$A]}
start_guard
# No rules yet: nothing is attached.
sleep 0.5
[ "$(journal_count attach)" -eq 0 ] || fail "attached with no rules"

# save_rule TEXT: writes the rule file the way editors do (temp file, rename).
save_rule() {
	printf '%s\n' "$1" >"$RULES/.loh.json.tmp"
	mv "$RULES/.loh.json.tmp" "$RULES/loh.json"
}
spike() { tagged_cmd "$A" "spike 300 400"; }

save_rule "{ \"name\": \"edit-loh\", \"process\": { \"cmdline\": \"*--tag $A\" }, \"when\": \"loh-size > 200MB\",
  \"dump\": { \"type\": \"triage\" }, \"limits\": { \"max-dumps\": 0, \"cooldown\": \"1s\" } }"
wait_journal rules-loaded 1 5 loh.json || fail "dropped rule file not loaded"
wait_journal attach 1 5 "\"pid\":$P" || fail "not attached after the rule file appeared"
spike
wait_journal dump 1 30 "\"pid\":$P" || fail "the dropped-in rule did not fire"

# An invalid edit: an unknown metric. The last good version stays in force.
save_rule "{ \"name\": \"edit-loh\", \"process\": { \"cmdline\": \"*--tag $A\" }, \"when\": \"loh-sise > 200MB\",
  \"dump\": { \"type\": \"triage\" }, \"limits\": { \"max-dumps\": 0, \"cooldown\": \"1s\" } }"
wait_journal rules-rejected 1 5 || fail "invalid edit not journaled"
grep '"event":"rules-rejected"' "$JOURNAL" | grep_q -F "loh.json:1:" ||
	fail "rejection does not say file:line:column"
grep '"event":"rules-rejected"' "$JOURNAL" | grep_q -F 'did you mean \"loh-size\"' ||
	fail "rejection does not suggest the metric"
grep '"event":"rules-rejected"' "$JOURNAL" | grep_q -F '"kept_last_good":true' || fail "kept_last_good not journaled"
grep -qF 'unknown metric "loh-sise"' "$T/dw.out" || fail "rejection not logged"
sleep 1.2 # cooldown
spike
wait_journal dump 2 30 "\"pid\":$P" || fail "the last good rule did not fire after an invalid edit"

# Fixed, with a higher threshold: a 300 MB spike no longer fires, 500 MB does.
save_rule "{ \"name\": \"edit-loh\", \"process\": { \"cmdline\": \"*--tag $A\" }, \"when\": \"loh-size > 400MB\",
  \"dump\": { \"type\": \"triage\" }, \"limits\": { \"max-dumps\": 0, \"cooldown\": \"1s\" } }"
wait_journal rules-loaded 2 5 loh.json || fail "fixed file not loaded"
sleep 1.2
spike
tagged_cmd "$A" "sleep 800"
wait_tagged_done "$A" "sleep 800" 10
[ "$(journal_count_with dump "\"pid\":$P")" -eq 2 ] || fail "fired below the edited threshold"
tagged_cmd "$A" "spike 500 400"
wait_journal dump 3 30 "\"pid\":$P" || fail "edited rule did not fire"

# Deleted: the rule goes, the process is let go, no more dumps.
rm "$RULES/loh.json"
wait_journal rules-removed 1 5 || fail "deletion not journaled"
wait_journal detach 1 5 "\"pid\":$P" || fail "process not let go after its only rule was deleted"
sleep 1.2
tagged_cmd "$A" "spike 500 400"
tagged_cmd "$A" "sleep 800"
wait_tagged_done "$A" "sleep 800" 10
[ "$(journal_count_with dump "\"pid\":$P")" -eq 3 ] || fail "dumped after the rule was deleted"
[ "$(dumps_of "$P")" -eq 3 ] || fail "expected 3 dump files, found $(dumps_of "$P")"
for core in "$DUMPS"/*-"$P"-*.core; do check_dump --type triage "$core" "$P"; done

stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC after SIGTERM"
echo "PASS: dropped-in rule fires; invalid edit keeps the last good rule; fix applies; deletion stops dumps"
