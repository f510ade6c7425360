#!/usr/bin/env bash
# Allocation ticks only near the threshold (--alloc-ticks near, the default).
# A rule 'loh-size > 400MB for 1s' with a 200 ms counter interval, so that the
# ticks stop 30 intervals (6 s) after the last time the rule was near:
#   - 50 MB of LOH is far (under half of 400 MB): no ticks, for 15 samples;
#   - 250 MB more is near: the ticks start, saying why;
#   - released (a full GC frees it all): they stop;
#   - 300 MB is near again: they start again; 200 MB more fires the rule,
#     and the dump's allocation by type holds those 200 MB of byte[] in the
#     LOH, which only the ticks saw, from the first tick on.
# On .NET 8 and 9 the runtime cannot filter by event id, so the ticks'
# session gets every GC event of level 5 too (only its ticks are taken).
source "$(dirname "$0")/lib.sh"
start_app
start_dw --pid "$APP_PID" --when 'loh-size > 400MB for 1s' --counter-interval 200ms -t triage \
	--dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
app_cmd "loh 50"
wait_for "grep -q 'done loh 50' '$T/app.out'" 30 || fail "MemSpike did not allocate 50 MB"
samples() { grep -c 'System.Runtime/gc-heap-size' "$T/dw.out" || true; }
n0=$(samples)
wait_for "[ \$(samples) -ge $((n0 + 15)) ]" 60 || fail "fewer than 15 System.Runtime samples came"
[ "$(journal_count ticks)" -eq 0 ] || fail "the ticks started while far: $(grep '"event":"ticks"' "$JOURNAL")"

app_cmd "loh 250"
wait_for "[ \$(journal_count ticks) -ge 1 ]" 30 || fail "the ticks did not start near the threshold"
on=$(grep '"event":"ticks"' "$JOURNAL" | head -1)
echo "$on" | jq -e '.on == true and (.reason | test("^loh-size > 400MB for 1s: at most [0-9.]+MB, half the threshold or more$"))' \
	>/dev/null || fail "the ticks' record: $on"

app_cmd "release"
wait_for "[ \$(journal_count ticks) -ge 2 ]" 60 || fail "the ticks did not stop once far again"
off=$(grep '"event":"ticks"' "$JOURNAL" | sed -n 2p)
echo "$off" | jq -e '.on == false and (.reason | test("^no rule near its threshold for [0-9]+ s$"))' >/dev/null ||
	fail "the ticks' second record: $off"
[ "$(journal_count fire)" -eq 0 ] || fail "fired while under the threshold"

app_cmd "loh 300"
wait_for "[ \$(journal_count ticks) -ge 3 ]" 30 || fail "the ticks did not start again"
grep '"event":"ticks"' "$JOURNAL" | sed -n 3p | jq -e '.on == true' >/dev/null || fail "the third ticks record is not a start"
app_cmd "loh 200"
wait_dw 90
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC"
[ "$(journal_count fire)" -eq 1 ] || fail "expected one fire"
fired=$(grep '"event":"fire"' "$JOURNAL" | jq '.metrics["loh-size"]')
awk -v v="$fired" 'BEGIN { exit !(v > 400000000) }' || fail "fired at loh-size $fired"
core=$(find "$DUMPS" -maxdepth 1 -name '*.core')
ctx="${core%.core}.json"
[ -f "$ctx" ] || fail "no context beside the dump: $(ls -A "$DUMPS")"
loh=$(jq '[.allocations.types[] | select(.type == "System.Byte[]" and .kind == "loh") | .bytes] | add // 0' "$ctx")
awk -v v="$loh" 'BEGIN { exit !(v >= 0.99 * 200 * 1000024) }' ||
	fail "the context's allocation by type has $loh bytes of LOH byte[]: $(jq -c .allocations "$ctx")"
# The allocation by type runs from the first tick, not from the start of the
# window (300 s, longer than this test): nothing was seen before the ticks
# first started (the journal's time is to the second; 2 s of slack).
on_s=$(echo "$on" | jq '.time | sub("\\.[0-9]+Z$"; "Z") | fromdate')
fired_ms=$(jq .fired_unix_ms "$ctx")
since=$(jq .allocations.since_ms "$ctx")
awk -v s="$since" -v f="$fired_ms" -v o="$on_s" 'BEGIN { exit !(s >= -(f - o * 1000 + 2000) && s < 0) }' ||
	fail "the allocation by type runs from $since ms, the ticks started $(((fired_ms - on_s * 1000) / 1000)) s before the fire"
"$DUMPWATCH" show "$ctx" >"$T/show.txt" || fail "show failed"
grep -qE '^allocation by type \(allocation ticks from -[0-9.]+s up to ' "$T/show.txt" ||
	fail "show does not say from when: $(grep '^allocation by type' "$T/show.txt")"
echo "PASS: ticks off while far, on near ($(echo "$on" | jq -r .reason)), off again once released, on again; fired at loh-size $fired; the context holds $loh bytes of LOH byte[]"
