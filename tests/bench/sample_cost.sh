#!/usr/bin/env bash
# What one sample of System.Runtime's counters costs the process that
# computes and sends it (docs/benchmarks.md, "What watching costs a
# service"). ShopApi runs idle on CPU 0, one process for the whole run, so
# that its CPU time is little else than the runtime's work for the session.
# Each round measures three windows, in an order that alternates from round
# to round:
#   none  nothing attached
#   1s    dumpwatch with a rule on a System.Runtime counter, every second
#   100ms the same rule every 100 ms (how often the default --alloc-ticks
#         near bounds a size or a rate between GCs for a condition without
#         sustain; a tenth of the sustain otherwise)
# The cost of a sample is the difference between the last two over the
# samples a second they differ by (9): both sessions are alike but for
# their interval, so what the session costs besides its samples cancels out.
# The figure is what service_cost.sh's derived overhead takes a sample for
# (DW_SAMPLE_COST_US).
#   usage: tests/bench/sample_cost.sh [BUILD_DIR] [ROUNDS] [WINDOW_S]
#          (6 rounds of 20 s windows)
# Figures only, never pass/fail.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
rounds=${2:-6}
win=${3:-20}
source "$here/tests/bench/lib.sh"
dw="$build/dumpwatch"
app="$build/apps/ShopApi/ShopApi"
[ -x "$app" ] || { echo "sample_cost: $app not built (scripts/build-apps.sh)" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "sample_cost: needs 2 CPUs (the service on one, dumpwatch on the other)" >&2; exit 1; }
bench_init dw-sample-cost
hz=$(getconf CLK_TCK)
rule='System.Runtime/cpu-usage > 99.9% for 1h'

bench_shopapi "$app"

# window MODE: the service's CPU in that mode over win seconds, in ms a second
window() {
	local mode=$1 w c0 c1 t0 t1 samples
	w=
	rm -f "$t/journal" "$t/w.out"
	if [ "$mode" != none ]; then
		taskset -c 1 "$dw" --pid "$sp" --when "$rule" --counter-interval "$mode" --dump-dir "$t" \
			--journal "$t/journal" >"$t/w.out" 2>&1 &
		w=$!
		pids+=("$w")
		for _ in $(seq 200); do grep -q 'watching pid' "$t/w.out" && break; sleep 0.05; done
		grep -q 'watching pid' "$t/w.out" || { echo "sample_cost: dumpwatch did not attach: $(cat "$t/w.out")" >&2; exit 1; }
		sleep 2 # the session's start
	fi
	c0=$(cpu_ticks "$sp")
	t0=$(date +%s.%N)
	sleep "$win"
	c1=$(cpu_ticks "$sp")
	t1=$(date +%s.%N)
	samples=
	if [ -n "$w" ]; then
		kill -TERM "$w" 2>/dev/null || true
		wait "$w" 2>/dev/null || true
		samples=$(grep '"event":"stop"' "$t/journal" | tail -1 | jq -r .events)
	fi
	awk -v a="$c0" -v b="$c1" -v s="$t0" -v e="$t1" -v hz="$hz" -v n="${samples:-0}" \
		'BEGIN { printf "%.4f %d\n", (b - a) / hz * 1000 / (e - s), n }'
	sleep 1
}

echo "ShopApi pid $sp idle on CPU 0, settling 10 s; $rounds rounds of 3 windows of $win s"
sleep 10
for i in $(seq "$rounds"); do
	order=(none 1s 100ms)
	((i % 2)) || order=(100ms 1s none)
	for mode in "${order[@]}"; do
		read -r ms events < <(window "$mode")
		echo "$i $mode $ms $events" >>"$t/rounds"
	done
done

# per round: the 100 ms window less the 1 s one, over 9 samples a second
awk '{ v[$1, $2] = $3; e[$1, $2] = $4; r[$1] = 1 }
	END { for (i in r) printf "%s %.6f %.6f %.6f %d\n", i, v[i, "none"], v[i, "1s"], v[i, "100ms"] - v[i, "1s"], e[i, "100ms"] }' \
	"$t/rounds" >"$t/diffs"
echo
echo "ShopApi idle, its CPU in ms a second (median of $rounds rounds):"
for mode in none 1s 100ms; do
	printf "  %-6s %.3f\n" "$mode" "$(awk -v m="$mode" '$2 == m { print $3 }' "$t/rounds" | median)"
done
awk '{ x = ($4) / 9 * 1000; s += x; q += x * x; n++ } END {
	m = s / n; sd = n > 1 ? sqrt((q - n * m * m) / (n - 1)) : 0
	df = n - 1; tq = df <= 1 ? 12.71 : df == 2 ? 4.303 : df == 3 ? 3.182 : df == 4 ? 2.776 : df == 5 ? 2.571 : df <= 7 ? 2.4 : df <= 10 ? 2.26 : 2.09
	printf "one sample of System.Runtime'"'"'s counters: %.0f us of the process'"'"'s CPU (mean of %d rounds, 95 %% interval %.0f ... %.0f)\n",
		m, n, m - tq * sd / sqrt(n), m + tq * sd / sqrt(n) }' "$t/diffs"
echo "events a window at 100 ms (the journal's stop record): $(awk '{ print $5 }' "$t/diffs" | median) (median)"
