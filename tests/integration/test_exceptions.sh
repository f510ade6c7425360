#!/usr/bin/env bash
# Exception triggers on a real .NET process: an "exception TYPE message
# 'PATTERN' >= N in WINDOW" rule stays silent through exceptions of another
# type, another message, or too few of them, and fires at the N-th match; the
# fire record, the log line and the dump's context carry the exception's type
# and message, which the program chose: an escape sequence and a newline in
# it reach neither the terminal nor the log as they are. Then an
# exception-rate rule stays silent at 20 exceptions per second and fires at
# 300.
source "$(dirname "$0")/lib.sh"
start_app
start_dw --pid "$APP_PID" --when "exception TimeoutException* message '*pool*' >= 3 in 1m" \
	--dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
app_cmd "throw 5 invalid the pool is dry"
app_cmd "throw 2 timeout waiting for the pool"
app_cmd "throw 3 timeout waiting for the database"
app_cmd "throw 2 pool the pool is exhausted"
app_cmd "sleep 1500"
wait_for "grep -q 'done sleep 1500' '$T/app.out'" 20 || fail "MemSpike did not finish throwing"
[ "$(journal_count fire)" -eq 0 ] || fail "fired before the third matching exception"
# The third: its message carries an escape sequence and a line of its own.
app_cmd 'throw 1 timeout pool gone\e[31m red\nFAKE LINE: rule x fired'
wait_dw 60
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC"
[ "$(journal_count fire)" -eq 1 ] || fail "expected one fire"
fire=$(grep '"event":"fire"' "$JOURNAL")
[ "$(jq -r '.exception.type' <<<"$fire")" = System.TimeoutException ] || fail "fire record type: $fire"
[ "$(jq -r '.exception.message' <<<"$fire")" = $'pool gone\e[31m red\nFAKE LINE: rule x fired' ] ||
	fail "fire record message: $(jq -c .exception <<<"$fire")"
[ "$(jq -r '.metrics | to_entries[0].value' <<<"$fire")" = 3 ] || fail "fired at a count other than 3: $fire"
# The log line shows the message escaped, on one line.
grep_q -F 'fired for pid' "$T/dw.out" || fail "no fire line"
grep_q -F 'pool gone\x1b[31m red\nFAKE LINE' "$T/dw.out" || fail "the log line does not show the message escaped"
if grep_q -P '\x1b' "$T/dw.out"; then fail "an escape character reached the log"; fi
if grep_q '^FAKE LINE' "$T/dw.out"; then fail "the message started a line of its own in the log"; fi
ctx=$(jq -r 'select(.event == "dump") | .context' "$JOURNAL")
[ -f "$ctx" ] || fail "no context"
jq -e '.rule.conditions[0].exception | .type == "System.TimeoutException" and (.message | startswith("pool gone\u001b")) and .t_ms <= 0' \
	"$ctx" >/dev/null || fail "context without the exception: $(jq -c '.rule.conditions' "$ctx")"
python3 -c 'import json, sys, jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' \
	"$ctx" "$DW_SOURCE_DIR/examples/dump-context.schema.json" || fail "context not valid against its schema"
echo "exception fired $(jq -r '.exception.thrown_before_fire_ms' <<<"$fire") ms after it was thrown"
"$DUMPWATCH" show "$ctx" >"$T/show.out" 2>&1 || fail "show failed: $(cat "$T/show.out")"
if grep_q -P '\x1b' "$T/show.out"; then fail "show printed an escape character"; fi
grep_q -F "last: System.TimeoutException: \"pool gone" "$T/show.out" || fail "show does not name the exception: $(cat "$T/show.out")"

# exception-rate: 20 per second for 3 s is below 100/s; 300 per second fires.
: >"$JOURNAL"
start_dw --pid "$APP_PID" --when 'exception-rate > 100/s for 1s' --dump-type triage --dump-dir "$DUMPS" \
	--journal "$JOURNAL"
wait_attached
app_cmd "throwfor 3000 20 io slow disk"
wait_for "grep -q 'done throwfor 3000 20' '$T/app.out'" 20 || fail "MemSpike did not finish the slow throws"
[ "$(journal_count fire)" -eq 0 ] || fail "exception-rate fired at 20/s"
app_cmd "throwfor 4000 300 io fast disk"
wait_dw 60
[ "$(journal_count fire)" -eq 1 ] || fail "exception-rate > 100/s did not fire at 300/s"
rate=$(grep '"event":"fire"' "$JOURNAL" | jq -r '.metrics["exception-rate"]')
awk -v r="$rate" 'BEGIN { exit !(r > 100 && r < 600) }' || fail "fired at an exception-rate of $rate"
app_cmd "exit"
echo "PASS: exception rule silent on other types, messages and counts, fired at the 3rd match with its type and escaped message; exception-rate silent at 20/s, fired at $rate/s"
