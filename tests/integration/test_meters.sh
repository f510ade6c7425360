#!/usr/bin/env bash
# Meter conditions on a real .NET process's System.Diagnostics.Metrics
# instruments (MemSpike's meter MemSpike.Orders):
# - a histogram percentile with a tag filter stays silent while another route
#   is slow and fires once the filtered route is, in the threshold's unit;
# - a counter's rate with a tag filter stays silent for another route and
#   below the threshold, and fires above it;
# - a gauge and an up-down counter in one rule fire only when both hold (one
#   named in other letter cases than the program's: rules match instruments
#   in any case, also on .NET 8, where the runtime's own instrument filter
#   would not);
#   meanwhile `dumpwatch counters --meters` follows the same process, sharing
#   the runtime's metrics session with the guard: both see the values;
# - a second tool that holds the shared session with another interval gets
#   one clear line, and a threshold whose unit the instrument's cannot be
#   converted to is said once.
source "$(dirname "$0")/lib.sh"
start_app
meter=MemSpike.Orders

# 1. p99 of request.duration on /api/orders.
start_dw --pid "$APP_PID" --when "meter $meter/request.duration[http.route=/api/orders] p99 > 500ms for 2s" \
	--dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
for _ in $(seq 12); do app_cmd "request 20 800 /api/cart"; app_cmd "request 20 50 /api/orders"; app_cmd "sleep 250"; done
app_cmd "sleep 11"
wait_for "grep -q 'done sleep 11 ' '$T/app.out'" 30 || fail "MemSpike did not finish the first requests"
wait_journal metrics-known 1 10 || fail "the meter never became known: $(tail -5 "$T/dw.out")"
grep '"event":"metrics-known"' "$JOURNAL" | jq -e '.metrics | to_entries[0].value.basis == "meter"' >/dev/null ||
	fail "metrics-known without basis meter: $(grep metrics-known "$JOURNAL")"
[ "$(journal_count fire)" -eq 0 ] || fail "fired while only /api/cart was slow"
for _ in $(seq 24); do app_cmd "request 20 800 /api/orders"; app_cmd "sleep 250"; done
wait_dw 60
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC: $(tail -5 "$T/dw.out")"
[ "$(journal_count fire)" -eq 1 ] || fail "expected one fire"
p99=$(grep '"event":"fire"' "$JOURNAL" | jq -r '.metrics | to_entries[0].value')
awk -v v="$p99" 'BEGIN { exit !(v > 700 && v <= 800) }' || fail "fired at a p99 of $p99 ms (the slowest was 800 ms)"
# The requests still queued after the fire run out before the next part.
app_cmd "sleep 13"
wait_for "grep -q 'done sleep 13 ' '$T/app.out'" 30 || fail "MemSpike did not finish the slow requests"
[ "$(count_dumps)" -eq 1 ] || fail "no dump"
# The dump's context shows the percentile's history under its condition.
ctx=$(jq -r 'select(.event == "dump") | .context' "$JOURNAL")
[ -f "$ctx" ] || fail "no context"
python3 -c 'import json, sys, jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' \
	"$ctx" "$DW_SOURCE_DIR/examples/dump-context.schema.json" || fail "context not valid against its schema"
"$DUMPWATCH" show "$ctx" >"$T/show.out" 2>&1 || fail "show failed: $(cat "$T/show.out")"
grep_q -F 'request.duration[http.route=/api/orders] p99' "$T/show.out" || fail "show does not name the condition: $(cat "$T/show.out")"
grep_q "fired for pid .*request.duration\[http.route=/api/orders\] p99=[0-9.]*ms" "$T/dw.out" || fail "no value in the fire line"

# 2. orders.placed rate on /api/orders: 50/s on /api/cart and 8/s on
# /api/orders stay below "> 20 for 2s"; 40/s on /api/orders fires.
: >"$JOURNAL"
start_dw --pid "$APP_PID" --when "meter $meter/orders.placed[route=/api/orders] rate > 20 for 2s" \
	--dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
for _ in $(seq 16); do app_cmd "order 12 /api/cart"; app_cmd "order 2 /api/orders"; app_cmd "sleep 250"; done
app_cmd "sleep 12"
wait_for "grep -q 'done sleep 12 ' '$T/app.out'" 30 || fail "MemSpike did not finish the first orders"
[ "$(journal_count fire)" -eq 0 ] || fail "the rate fired below its threshold or for another route"
for _ in $(seq 24); do app_cmd "order 10 /api/orders"; app_cmd "sleep 250"; done
wait_dw 60
[ "$(journal_count fire)" -eq 1 ] || fail "the rate did not fire at 40/s"
rate=$(grep '"event":"fire"' "$JOURNAL" | jq -r '.metrics | to_entries[0].value')
awk -v r="$rate" 'BEGIN { exit !(r > 20 && r <= 60) }' || fail "fired at a rate of $rate/s (40/s sent)"
app_cmd "sleep 14"
wait_for "grep -q 'done sleep 14 ' '$T/app.out'" 30 || fail "MemSpike did not finish the orders"

# 3. A gauge and an up-down counter, both needed; `dumpwatch counters`
# follows the process meanwhile, in the same shared session.
: >"$JOURNAL"
app_cmd "queue 150"
start_dw --pid "$APP_PID" --when "meter $meter/Queue.Depth >= 100" --when "meter $meter/connections.active > 20" \
	--dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
# Only what is measured while a session listens is published (a gauge is
# measured at each collection): the orders and requests are made once
# counters has printed its first collection, so that they fall inside its
# session whatever the machine's load.
"$DUMPWATCH" counters --pid "$APP_PID" --meters "$meter" --format json --duration 4s >"$T/counters.json" \
	2>"$T/counters.err" &
COUNTERS=$!
PIDS+=("$COUNTERS")
wait_for "[ -s '$T/counters.json' ]" 30 || fail "counters printed nothing: $(cat "$T/counters.err")"
app_cmd "order 1 /api/orders"
app_cmd "order 1 /api/cart"
app_cmd "request 5 100 /api/orders"
wait "$COUNTERS" || fail "counters failed: $(cat "$T/counters.err")"
last=$(tail -1 "$T/counters.json")
jq -e '[.meters[] | select(.instrument == "queue.depth")][0] | .kind == "gauge" and .value == 150 and .unit == "{item}"' \
	<<<"$last" >/dev/null || fail "counters does not show queue.depth = 150: $(jq -c .meters <<<"$last")"
jq -e '[.meters[] | select(.instrument == "request.duration" and .tags == "http.route=/api/orders")][0] | .kind == "histogram" and .unit == "s"' \
	<<<"$last" >/dev/null || fail "counters does not show the histogram: $(jq -c .meters <<<"$last")"
jq -e '[.meters[] | select(.instrument == "orders.placed")] | length == 2' <<<"$last" >/dev/null ||
	fail "counters does not show both routes' orders"
# No connection yet: the up-down counter has no series until its first change.
jq -e '[.meters[] | select(.instrument == "connections.active")] | length == 0' <<<"$last" >/dev/null ||
	fail "connections.active shown before any change: $(jq -c .meters <<<"$last")"
[ "$(journal_count fire)" -eq 0 ] || fail "fired with only the queue above its threshold"
grep_q 'known .*Queue.Depth value=150' "$T/dw.out" || fail "the guard did not see the queue while counters ran: $(tail -5 "$T/dw.out")"
app_cmd "conn 25"
wait_dw 30
[ "$(journal_count fire)" -eq 1 ] || fail "the gauge and up-down counter rule did not fire"
fired=$(grep '"event":"fire"' "$JOURNAL")
jq -e '.metrics["meter MemSpike.Orders/connections.active value"] == 25 and .metrics["meter MemSpike.Orders/Queue.Depth value"] == 150' \
	<<<"$fired" >/dev/null || fail "fire values: $(jq -c .metrics <<<"$fired")"

# 4. Another tool holds the shared session at a 2 s interval: dumpwatch's
# 1 s session is refused, said in one line. A threshold in seconds on a gauge
# of items is said once.
"$DUMPWATCH" counters --pid "$APP_PID" --meters "$meter" --interval 2s --format json --duration 8s \
	>"$T/counters2.json" 2>&1 &
PIDS+=($!)
wait_for "[ -s '$T/counters2.json' ]" 10 || fail "the 2 s counters did not start"
: >"$JOURNAL"
start_dw --pid "$APP_PID" --when "meter $meter/request.duration p99 > 10s" --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
wait_for "grep -q 'MultipleSessionsConfiguredIncorrectlyError' '$T/dw.out'" 10 ||
	fail "no line about the refused shared session: $(tail -5 "$T/dw.out")"
line=$(grep 'MultipleSessionsConfiguredIncorrectlyError' "$T/dw.out")
echo "$line"
[ "$(grep -c 'MultipleSessionsConfiguredIncorrectlyError' "$T/dw.out")" -eq 1 ] || fail "said more than once"
grep_q -F 'RefreshInterval=2 (asked: 1)' <<<"$line" || fail "the line does not say the intervals: $line"
kill "$DW_PID"
wait_dw 10
sleep 8.5 # the 2 s session ends
start_dw --pid "$APP_PID" --when "meter $meter/queue.depth > 2s" --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
wait_for "grep -q 'is measured in' '$T/dw.out'" 10 || fail "no line about the unit: $(tail -5 "$T/dw.out")"
grep_q -F 'queue.depth is measured in "{item}", which is not a duration' "$T/dw.out" || fail "unit line: $(grep 'measured in' "$T/dw.out")"
sleep 2.5
[ "$(grep -c 'is measured in' "$T/dw.out")" -eq 1 ] || fail "the unit was said more than once"
if grep_q 'MultipleSessions' "$T/dw.out"; then fail "refused again once the other tool had gone"; fi
kill "$DW_PID"
wait_dw 10
app_cmd "exit"
grep -h "measured in" "$T/dw.out"
echo "PASS: p99 $p99 ms fired for /api/orders only, orders rate $rate/s fired above 20/s only, gauge + up-down fired together while counters shared the session, a refused shared session and a unit that does not convert each said once"
