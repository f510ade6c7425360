#!/usr/bin/env bash
# (c) A 300 ms LOH spike above the threshold is caught, with the default
# --alloc-ticks near: System.Runtime's counters, every 100 ms while the rule
# is far, find the LOH near the threshold inside the spike; the allocation
# ticks start and, until the next GC, that sample stands for what was
# allocated before them.
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
grep '"event":"ticks"' "$JOURNAL" | head -1 | grep_q '"on":true' || fail "no ticks record before the fire"
echo "PASS: 300 ms spike caught at loh-size=$loh"
