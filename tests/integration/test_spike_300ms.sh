#!/usr/bin/env bash
# (c) A 300 ms LOH spike above the threshold is caught, with the default
# --alloc-ticks near: System.Runtime's counters, every 100 ms while the rule
# is far, find the LOH near the threshold inside the spike; the allocation
# ticks start and, until the next GC, that sample stands for what was
# allocated before them. (A GC inside the spike may report the LOH's size
# first; the rule then fires on it.)
source "$(dirname "$0")/lib.sh"
start_app
start_dw --pid "$APP_PID" --when 'loh-size > 200MB' --dump-dir "$DUMPS" --dump-type triage --journal "$JOURNAL"
wait_attached
app_cmd "sleep 500"
app_cmd "spike 300 300"
wait_dw 60
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC"
[ "$(journal_count fire)" -eq 1 ] || fail "the spike was not caught"
[ "$(count_dumps)" -eq 1 ] || fail "expected one dump"
check_dump --type triage "$(find "$DUMPS" -maxdepth 1 -name '*.core')" "$APP_PID"
loh=$(grep '"event":"fire"' "$JOURNAL" | sed -n 's/.*"loh-size":\([0-9.e+]*\).*/\1/p')
awk -v v="$loh" 'BEGIN { exit !(v > 200000000) }' || fail "fire record shows loh-size $loh"
# Caught either way: the ticks started on a counter sample inside the spike,
# or a GC the LOH's allocations triggered reported its size first (seen
# under the sanitizers' slower start).
if ! grep '"event":"ticks"' "$JOURNAL" | head -1 | grep_q '"on":true'; then
	grep -qE 'gc #[0-9]+ gen[0-9] end: .* loh=((2[0-9]{2}|[3-9][0-9]{2}|[0-9]{4,})(\.[0-9]+)?MB|[0-9.]+GB)' "$T/dw.out" ||
		fail "no ticks record before the fire, and no GC saw the LOH over 200 MB"
fi
echo "PASS: 300 ms spike caught at loh-size=$loh"
