#!/usr/bin/env bash
# While allocation ticks come only near a threshold (--alloc-ticks near, the
# default), System.Runtime's counters bound the sizes and rates every tenth
# of the shortest sustain among the conditions on them, from 100 ms up to the
# counter interval: a rule that waits 5 s is not sampled ten times a second
# (each sample costs the process its 27 counters). The attach record says the
# interval, and the samples come at it, by the runtime's own timestamps.
source "$(dirname "$0")/lib.sh"
start_app

attach_with() { # ARGS...: attaches; b = the attach record's bound_interval_ms (null when absent)
	: >"$JOURNAL"
	start_dw --pid "$APP_PID" --dump-dir "$DUMPS" --journal "$JOURNAL" "$@"
	wait_attached
	wait_for "[ \$(journal_count attach) -ge 1 ]" 15 || fail "no attach record: $*"
	b=$(grep '"event":"attach"' "$JOURNAL" | head -1 | jq .bound_interval_ms)
}
detach() {
	kill -INT "$DW_PID" 2>/dev/null || true
	wait_dw 15
}
# The gaps between System.Runtime samples, in ms, by the events' timestamps
# (-v's first column: seconds since the attach, as the runtime stamped them).
gaps() {
	grep 'System.Runtime/gc-heap-size = ' "$T/dw.out" |
		awk '{ t = $1; sub(/s$/, "", t); if (NR > 1) print (t - p) * 1000; p = t }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

attach_with --when 'loh-size > 400MB for 5s'
[ "$b" = 500 ] || fail "loh-size > 400MB for 5s: bound every $b ms, expected 500"
wait_for "[ \$(gaps | wc -l) -ge 10 ]" 60 || fail "fewer than 11 System.Runtime samples came: $(gaps | wc -l)"
m=$(gaps | median)
# Never sooner than the interval asks (a loaded host can only make them later).
awk -v m="$m" 'BEGIN { exit !(m >= 400) }' ||
	fail "the samples came every $m ms (median) for a bound every 500 ms: $(gaps | head -20 | tr '\n' ' ')"
[ "$(journal_count ticks)" -eq 0 ] || fail "the ticks started with the LOH far from 400 MB"
detach

attach_with --when 'loh-size > 400MB for 5s' --counter-interval 200ms
[ "$b" = 200 ] || fail "with --counter-interval 200ms: bound every $b ms, expected 200 (never past the interval)"
detach

attach_with --when 'loh-size > 400MB for 5s' --when 'poh-size > 1GB'
[ "$b" = 100 ] || fail "with a condition without sustain: bound every $b ms, expected 100"
wait_for "[ \$(gaps | wc -l) -ge 10 ]" 60 || fail "fewer than 11 System.Runtime samples came at 100 ms"
m_none=$(gaps | median)
detach

attach_with --when 'loh-alloc-rate > 4GB/s for 1m'
[ "$b" = 1000 ] || fail "loh-alloc-rate > 4GB/s for 1m: bound every $b ms, expected 1000 (the counter interval)"
detach

attach_with --when 'loh-size > 400MB for 5s' --alloc-ticks always
[ "$b" = null ] || fail "with --alloc-ticks always nothing is bound, yet the attach record says $b"
detach
echo "PASS: bound every 500 ms (samples every $m ms, median), 200, 100 (every $m_none ms), 1000, none"
