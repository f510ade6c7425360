#!/usr/bin/env bash
# One guard through a series of faults, with the real runtime; after each the
# daemon is alive, a healthy process it guards is still dumped at the end, and
# the journal is complete (every attach has its detach) and parses:
# - a target killed with SIGKILL mid-session, and another mid-dump;
# - 24 processes starting and exiting while watched;
# - 300 rewrites of a rule file in a burst (renames and in-place writes), the
#   last version in effect afterwards;
# - 200 SIGHUPs in a burst;
# - the rules directory removed and recreated.
source "$(dirname "$0")/lib.sh"

start_tagged "healthy$$"
cat >"$RULES/base.json" <<JSON
{ "rules": [
  { "name": "healthy-loh", "process": { "cmdline": "*--tag healthy$$" }, "when": "loh-size > 100MB",
    "dump": { "type": "triage" } },
  { "name": "victim-loh", "process": { "cmdline": "*--tag victim*" }, "when": "loh-size > 100MB",
    "dump": { "type": "full" } },
  { "name": "churn-loh", "process": { "cmdline": "*--tag churn*" }, "when": "loh-size > 5GB",
    "dump": { "type": "triage" } } ] }
JSON
start_guard
wait_journal attach 1 15 "\"pid\":${APP_PIDS[healthy$$]}" || fail "healthy not attached"
alive() { kill -0 "$DW_PID" 2>/dev/null || fail "the daemon died ($1)"; }

# 1. Killed mid-session.
start_tagged "victim1$$"
V1=${APP_PIDS[victim1$$]}
wait_journal attach 1 15 "\"pid\":$V1" || fail "victim1 not attached"
kill -9 "$V1"
wait_journal detach 1 10 "\"pid\":$V1" || fail "victim1's death not journaled"
alive "killed mid-session"

# 2. Killed mid-dump: a full dump of a process holding 1.5 GB takes seconds.
start_tagged "victim2$$"
V2=${APP_PIDS[victim2$$]}
wait_journal attach 1 15 "\"pid\":$V2" || fail "victim2 not attached"
tagged_cmd "victim2$$" "loh 1500"
wait_journal fire 1 30 "\"pid\":$V2" || fail "victim2's rule did not fire"
sleep 0.3
kill -9 "$V2"
wait_for "[ \$(journal_count_with dump-failed '\"pid\":$V2') -ge 1 ] || [ \$(journal_count_with dump '\"pid\":$V2') -ge 1 ]" 60 ||
	fail "victim2's dump has no outcome"
wait_journal detach 1 10 "\"pid\":$V2" || fail "victim2's death not journaled"
[ "$(count_partials)" -eq 0 ] || fail "partial left after a target died mid-dump"
outcome=$(grep -E '"event":"dump(-failed)?"' "$JOURNAL" | grep -F "\"pid\":$V2" | jq -r '.event + ": " + (.error // .path)')
alive "killed mid-dump"

# 3. Churn: 24 short-lived processes, 4 at a time.
CHURN=()
for i in $(seq 1 24); do
	(echo "sleep $((200 + RANDOM % 600))"; echo exit) | "$APP" --tag "churn$i" >/dev/null 2>&1 &
	PIDS+=("$!")
	CHURN+=("$!")
	if ((i % 4 == 0)); then sleep 0.5; fi
done
# Every churn process that was attached is detached (a process that lives
# 200 ms may exit before its attach completes on a loaded machine: then it
# has neither record).
churn_open() {
	local n=0 p
	for p in "${CHURN[@]}"; do
		[ "$(journal_count_with attach "\"pid\":$p,")" -eq "$(journal_count_with detach "\"pid\":$p,")" ] || n=$((n + 1))
	done
	echo "$n"
}
churn_attached() {
	local n=0 p
	for p in "${CHURN[@]}"; do
		[ "$(journal_count_with attach "\"pid\":$p,")" -ge 1 ] && n=$((n + 1))
	done
	echo "$n"
}
churn_alive() {
	local p
	for p in "${CHURN[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done
	return 1
}
wait_for "! churn_alive" 60 || fail "churn processes did not exit"
wait_for "[ \$(churn_open) -eq 0 ]" 30 || fail "churn: $(churn_open) of $(churn_attached) attached processes have no detach"
[ "$(churn_attached)" -ge 1 ] || fail "churn: none attached"
echo "churn: $(churn_attached) of 24 attached, each detached"
alive "churn"

# 4. 300 rewrites in a burst: renamed into place and written in place.
for i in $(seq 1 300); do
	body="{ \"name\": \"burst\", \"process\": { \"cmdline\": \"*--tag healthy$$\" }, \"when\": \"loh-size > ${i}00MB\", \"dump\": { \"type\": \"triage\" } }"
	if ((i % 2)); then
		echo "$body" >"$RULES/.burst.tmp" && mv "$RULES/.burst.tmp" "$RULES/burst.json"
	else
		echo "$body" >"$RULES/burst.json"
	fi
done
# The last version: loh-size > 30000MB. Replace it with one that fires.
sleep 1
cat >"$RULES/burst.json" <<JSON
{ "name": "burst-final", "process": { "cmdline": "*--tag healthy$$" }, "when": "loh-size > 150MB",
  "dump": { "type": "triage" } }
JSON
wait_for "grep -q '\"burst-final\"' '$JOURNAL'" 10 || fail "the last rewrite was not loaded"
alive "rewrites"

# 5. 200 SIGHUPs.
for i in $(seq 1 200); do kill -HUP "$DW_PID"; done
sleep 1
alive "SIGHUP storm"

# 6. The rules directory removed and recreated.
mv "$RULES" "$T/rules.old"
sleep 1
alive "rules directory removed"
mv "$T/rules.old" "$RULES"
sleep 1

# The healthy process is still guarded, by the rules as they are now.
tagged_cmd "healthy$$" "loh 200"
wait_journal dump 1 30 "\"pid\":${APP_PIDS[healthy$$]}" || fail "healthy process not dumped"
wait_journal dump 2 30 "\"pid\":${APP_PIDS[healthy$$]}" || fail "burst-final did not dump too"
grep '"event":"dump"' "$JOURNAL" | grep -F "\"pid\":${APP_PIDS[healthy$$]}" | grep_q '"rule":"burst-final"' ||
	fail "burst-final not in effect"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC"
jq -c . "$JOURNAL" >/dev/null || fail "journal does not parse"
attaches=$(grep -c '"event":"attach"' "$JOURNAL")
detaches=$(grep -c '"event":"detach"' "$JOURNAL")
[ "$attaches" -eq "$detaches" ] || fail "$attaches attach records but $detaches detach records"
[ "$(count_partials)" -eq 0 ] || fail "partial files left"
echo "victim killed mid-dump: $outcome"
echo "PASS: killed mid-session and mid-dump, 24 churned processes, 300 rewrites, 200 SIGHUPs, rules dir removed and recreated; $attaches attach/detach pairs; healthy still dumped"
