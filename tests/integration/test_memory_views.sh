#!/usr/bin/env bash
# The memory views against GcLab, which allocates known amounts of each kind at
# known rates and induces GCs of each type. `dumpwatch counters` and
# `dumpwatch gc`, started before the process (they wait for it by name):
# per-kind allocation rates within 10 % of what the program measured;
# AppDomain allocated within 2 %, survived = what is held, freed within 10 %;
# every GC record complete, in order, with the generation and type the program
# asked for, a background GC as such, and the induced 1.2 s pause. Then a
# `gc-pause > 1s` rule: silent through ordinary GCs, fires on the long pause.
source "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || fail "jq missing (scripts/setup.sh installs it)"
APP="$DW_APPS_DIR/GcLab/GcLab"
[ -x "$APP" ] || fail "$APP not built"
A="mem$$"

"$DUMPWATCH" counters --name GcLab --format json >"$T/counters.jsonl" 2>"$T/counters.err" &
CP=$!
PIDS+=("$CP")
"$DUMPWATCH" gc --name 'GcL*' --format json >"$T/gc.jsonl" 2>"$T/gc.err" &
GP=$!
PIDS+=("$GP")
sleep 0.5
start_tagged "$A"
P=${APP_PIDS[$A]}
# views_said: what the two views printed on stderr, for a failure's message.
views_said() { echo "counters: $(tail -5 "$T/counters.err") / gc: $(tail -5 "$T/gc.err") / sockets of $P: $(ls /tmp/dotnet-diagnostic-"$P"-* 2>&1)"; }
wait_for "grep -q 'following pid $P' '$T/counters.err'" 10 ||
	fail "counters did not pick up GcLab (pid $P) started after it: $(views_said)"
wait_for "grep -q 'following pid $P' '$T/gc.err'" 10 || fail "gc did not pick up GcLab (pid $P) started after it: $(views_said)"

# run COMMAND SECONDS: runs it, waits for its answer, prints the answer's figures.
run() {
	tagged_cmd "$A" "$1"
	wait_tagged_done "$A" "$1" "$2"
	grep -F "done $1" "$T/$A.out" | tail -1 | sed "s/^done $1 *//"
}
figure() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# metric NAME: the newest counters line's value, after the stream settled.
metric() { mine | tail -1 | jq -r ".metrics[\"$1\"]"; }
# mine: the counters lines of our GcLab; another GcLab on the machine (a
# concurrent test run) is followed too.
mine() { jq -c "select(.pid == $P)" "$T/counters.jsonl"; }
settle() { sleep 2.2; } # ticks reach us within ~100 ms; a counters line every 1 s
within() { # within WHAT GOT WANT PERCENT: records the error, fails beyond PERCENT
	local e
	e=$(awk -v g="$2" -v w="$3" 'BEGIN { printf "%.2f", (g - w) / w * 100 }')
	echo "$1: $e % error (got $2, want $3)" >>"$T/errors"
	awk -v e="$e" -v p="$4" 'BEGIN { exit (e < -p || e > p) }' || fail "$1: $2 is not within $4 % of $3"
}
: >"$T/errors"

# --- allocation by kind: the median of the 1 s rates while the program allocates
rate_check() { # KIND METRIC MB SECONDS
	local from to got
	from=$(mine | wc -l)
	out=$(run "alloc $1 $3 $4" $(($4 + 10)))
	to=$(mine | wc -l)
	want=$(awk -v b="$(figure "$out" bytes)" -v ms="$(figure "$out" ms)" 'BEGIN { printf "%.0f", b * 1000 / ms }')
	# Lines wholly inside the phase: skip the first and the last.
	got=$(mine | sed -n "$((from + 2)),$((to - 1))p" | jq -r ".metrics[\"$2\"]" | sort -n |
		awk '{ a[NR] = $1 } END { if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }')
	[ -n "$got" ] || fail "no $2 samples during alloc $1"
	within "$2" "$got" "$want" 10
}
# --- the process's own figures from /proc: known, and the threads and descriptors
# /proc/PID shows for the same process.
settle
mine | tail -1 | jq -e '.metrics | (.rss > 1e6 and ."private-memory" > 1e5 and .swap >= 0 and .threads >= 1 and .fds >= 3)' \
	>/dev/null || fail "counters without the /proc figures: $(mine | tail -1 | jq -c '.metrics | {rss, threads, fds}')"
threads=$(awk '/^Threads:/ { print $2 }' "/proc/$P/status")
awk -v got="$(mine | tail -1 | jq -r '.metrics.threads')" -v want="$threads" 'BEGIN { exit !(got >= want - 2 && got <= want + 2) }' ||
	fail "counters' threads $(mine | tail -1 | jq -r '.metrics.threads') against /proc's $threads"
rate_check large loh-alloc-rate 400 5
rate_check small soh-alloc-rate 200 5
rate_check pinned poh-alloc-rate 100 5

# --- AppDomain: allocated, survived, freed
run "gc 2" 10 >/dev/null
settle
a0=$(metric appdomain-allocated)
f0=$(metric appdomain-freed)
out=$(run "alloc small 100 2" 15)
run "gc 2" 10 >/dev/null
settle
a1=$(metric appdomain-allocated)
f1=$(metric appdomain-freed)
within appdomain-allocated "$((a1 - a0))" "$(figure "$out" bytes)" 2
within appdomain-freed "$((f1 - f0))" "$(figure "$out" bytes)" 10
out=$(run "hold large 150" 15)
run "gc 2" 10 >/dev/null
settle
s1=$(metric appdomain-survived)
((s1 >= 150000000 && s1 <= 160000000)) || fail "appdomain-survived $s1 after holding 150 MB and a full GC"
echo "appdomain-survived $s1 holding 150 MB" >>"$T/errors"
run release 10 >/dev/null

# --- GC records
g0=$(figure "$(run 'gc 0' 10)" gc_index)
g1=$(figure "$(run 'gc 1' 10)" gc_index)
g2=$(figure "$(run 'gc 2' 10)" gc_index)
bg=$(figure "$(run 'bgc 100 100' 60)" bgc_index)
st=$(figure "$(run 'stall 1200' 15)" gc_index)
settle
rec() { jq -c "select(.pid == $P and .index == $1)" "$T/gc.jsonl"; }
check_rec() { # INDEX GENERATION TYPE
	local r
	r=$(rec "$1")
	[ "$(echo "$r" | wc -l)" -eq 1 ] && [ -n "$r" ] || fail "GC $1: $(echo "$r" | wc -l) records"
	[ "$(echo "$r" | jq -r '"\(.generation) \(.type) \(.complete)"')" = "$2 $3 true" ] || fail "GC $1: $r"
}
check_rec "$g0" 0 blocking
check_rec "$g1" 1 blocking
check_rec "$g2" 2 blocking
check_rec "$bg" 2 background
[ "$(rec "$bg" | jq -r '.pauses')" -ge 2 ] || fail "background GC with fewer than 2 pauses: $(rec "$bg")"
rec "$st" | jq -e '.pause_ms > 1000 and .pause_ms < 2000' >/dev/null || fail "the 1.2 s stall: $(rec "$st")"
# Every GC once, all complete; all but background GCs in index order.
jq -r "select(.pid == $P) | .index" "$T/gc.jsonl" | sort -n >"$T/idx"
first=$(head -1 "$T/idx") last=$(tail -1 "$T/idx")
[ "$(wc -l <"$T/idx")" -eq $((last - first + 1)) ] && [ -z "$(uniq -d "$T/idx")" ] ||
	fail "GC records are not every index from $first to $last once"
[ "$(jq -r "select(.pid == $P and .complete != true) | .index" "$T/gc.jsonl" | wc -l)" -eq 0 ] ||
	fail "incomplete records: $(jq -c "select(.complete != true)" "$T/gc.jsonl" | head -3)"
jq -r "select(.pid == $P and .type != \"background\") | .index" "$T/gc.jsonl" >"$T/order"
sort -n -c "$T/order" || fail "blocking GCs out of order"
echo "GC records: $(wc -l <"$T/idx") ($first..$last), all complete" >>"$T/errors"

# --- a gc-pause rule fires on the long pause only
start_dw --pid "$P" --when 'gc-pause > 1s' --dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL" --max-dumps 1
wait_attached
run "gc 2" 10 >/dev/null
run "bgc 100 100" 60 >/dev/null
run "alloc small 100 1" 15 >/dev/null
run "stall 200" 10 >/dev/null
sleep 1
[ "$(journal_count fire)" -eq 0 ] || fail "gc-pause > 1s fired on ordinary GCs"
run "stall 1500" 15 >/dev/null
wait_dw 30
[ "$DW_RC" -eq 0 ] || fail "dumpwatch exit status $DW_RC"
grep '"event":"fire"' "$JOURNAL" | jq -e '.metrics["gc-pause"] > 1000' >/dev/null || fail "fire without the long pause"
[ "$(count_dumps)" -eq 1 ] || fail "expected one dump, found $(count_dumps)"
check_dump --type triage "$(find "$DUMPS" -maxdepth 1 -name '*.core')" "$P"

kill -TERM "$CP" "$GP"
for p in "$CP" "$GP"; do
	set +e
	wait "$p"
	rc=$?
	set -e
	[ "$rc" -eq 0 ] || fail "a view exited with $rc on SIGTERM"
done
cat "$T/errors"
echo "PASS: rates, AppDomain figures and GC records match what GcLab did; gc-pause rule fires on the long pause only"
