#!/usr/bin/env bash
# The /proc metrics on a real .NET process: memory grown outside the GC heap
# (native allocations: no GC event, the stream stays quiet) fires a
# private-memory and rss rule polled every 10 ms, and stays silent below the
# threshold; threads and fds rules fire when the program starts threads and
# opens files. The fire records carry the values, the metrics-known records
# say they come from /proc, and the dump's context holds their history.
source "$(dirname "$0")/lib.sh"

# Bad intervals are refused with one line.
for bad in 5ms 2m abc; do
	set +e
	"$DUMPWATCH" --pid 1 --when 'rss > 1GB' --proc-interval "$bad" >"$T/bad.out" 2>&1
	rc=$?
	set -e
	[ "$rc" -eq 1 ] || fail "--proc-interval $bad: exit $rc, expected 1 (usage)"
	grep_q -- "--proc-interval takes a duration from 10ms to 1m" "$T/bad.out" || fail "--proc-interval $bad: $(cat "$T/bad.out")"
done

for bad in 10ms 1500us 2h; do
	set +e
	"$DUMPWATCH" --pid 1 --when 'rss > 1GB' --counter-interval "$bad" >"$T/bad.out" 2>&1
	rc=$?
	set -e
	[ "$rc" -eq 1 ] && grep_q -- "--counter-interval takes a duration in milliseconds from 50ms to 1h" "$T/bad.out" ||
		fail "--counter-interval $bad: exit $rc, $(cat "$T/bad.out")"
done

start_app
app_cmd "sleep 300"
start_dw --pid "$APP_PID" --when 'private-memory > 250MB' --when 'rss > 250MB' --proc-interval 10ms \
	--dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
wait_journal metrics-known 1 10 || fail "the /proc metrics never became known"
grep '"event":"metrics-known"' "$JOURNAL" | grep_q '"private-memory":{"value":[0-9.e+]*,"basis":"proc"}' ||
	fail "private-memory not known from /proc"
# 150 MB outside the GC heap: below the threshold, nothing fires.
app_cmd "native 150"
app_cmd "sleep 1000"
wait_for "grep -q 'done sleep 1000' '$T/app.out'" 15 || fail "MemSpike did not finish its native allocation"
[ "$(journal_count fire)" -eq 0 ] || fail "fired below the threshold"
# 150 MB more: 300 MB written outside the GC heap.
app_cmd "native 150"
wait_dw 60
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC after the dump"
[ "$(journal_count fire)" -eq 1 ] || fail "expected one fire"
fire=$(grep '"event":"fire"' "$JOURNAL")
pm=$(jq -r '.metrics["private-memory"]' <<<"$fire")
rss=$(jq -r '.metrics.rss' <<<"$fire")
awk -v v="$pm" 'BEGIN { exit !(v > 250e6 && v < 400e6) }' || fail "fired with private-memory $pm"
awk -v v="$rss" 'BEGIN { exit !(v > 250e6) }' || fail "fired with rss $rss"
[ "$(journal_count dump)" -eq 1 ] || fail "no dump record"
ctx=$(jq -r 'select(.event == "dump") | .context' "$JOURNAL")
[ -f "$ctx" ] || fail "no context file"
# The history of private-memory rose from under 250 MB to over it.
jq -e '[.history.series[] | select(.metric == "private-memory") | .points[] | .[1]] | (min < 250e6 and max > 250e6)' \
	"$ctx" >/dev/null || fail "the private-memory history does not cross 250 MB: $(jq -c '.history.series | map(.metric)' "$ctx")"
echo "private-memory fired at $pm bytes, rss $rss; delay from the poll to the decision: $(jq -r '.detect_delay_ms' <<<"$fire") ms"

# threads: MemSpike starts 40 sleeping threads.
: >"$JOURNAL"
start_dw --pid "$APP_PID" --when 'threads > 40' --dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
wait_journal metrics-known 1 10 || fail "threads never became known"
[ "$(journal_count fire)" -eq 0 ] || fail "threads fired before the threads started"
app_cmd "threads 40"
wait_dw 60
[ "$(journal_count fire)" -eq 1 ] || fail "threads > 40 did not fire"

# fds: MemSpike opens 150 more descriptors.
: >"$JOURNAL"
start_dw --pid "$APP_PID" --when 'fds > 150' --dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
wait_journal metrics-known 1 10 || fail "fds never became known"
known=$(grep '"event":"metrics-known"' "$JOURNAL" | jq -r '.metrics.fds.value')
[ "$(journal_count fire)" -eq 0 ] || fail "fds fired before the files were opened ($known open)"
app_cmd "files 150"
wait_dw 60
[ "$(journal_count fire)" -eq 1 ] || fail "fds > 150 did not fire (it had $known open)"
app_cmd "exit"
echo "PASS: private-memory and rss (native growth, quiet stream), threads and fds rules fire from /proc polls; silent below"
