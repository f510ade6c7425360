#!/usr/bin/env bash
# The target's slowdown under dumpwatch, per subscription level: MemSpike
# allocates N small arrays in a loop (`work N`, the worst case for GC
# events: a gen0 GC every few ms) and reports the elapsed time; it runs
# alone, then watched by dumpwatch with one rule whose metric needs:
#   gc          gc-pause (runtime GC keyword, level 4)
#   ticks       alloc-rate (GC keyword, level 5: allocation ticks)
#   counters    System.Runtime/cpu-usage (EventCounters every 1 s)
#   exceptions  exception (the Exception keyword, level 2)
#   proc        private-memory, polled every 10 ms (plus GC level 4)
#   meters      a meter's gauge (System.Diagnostics.Metrics, every 1 s)
#   gc-all, ticks-all  gc and ticks with --all-events: every event of the
#               keyword and level, not only those dumpwatch reads (on .NET
#               10 the difference is CollectTracing5's event filter)
# RUNS runs of each, in rotation so that drift hits them all alike; each run
# is a fresh process that does the work three times, and counts its fastest
# round. For repeatable figures MemSpike runs with its JIT fully optimizing
# from the start (DOTNET_TieredCompilation=0), a non-concurrent GC and a fixed
# 32 MB gen0 budget: otherwise one process runs 30 % slower than the next,
# alone. Prints the median time, the spread (min-max) and the slowdown of the
# medians against running alone. Figures only, never pass/fail.
# Each watched run also reports the events and bytes the stream carried.
#   usage: tests/bench/overhead.sh [BUILD_DIR] [RUNS] [N]
#   LEVELS="alone gc gc-all" picks the levels (default: all of them).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
runs=${2:-7}
n=${3:-200000000}
dw="$build/dumpwatch"
app="$build/apps/MemSpike/MemSpike"
source "$here/tests/bench/lib.sh"
bench_init dw-overhead

read -r -a levels <<<"${LEVELS:-alone gc gc-all ticks ticks-all counters exceptions proc meters}"
declare -A when=(
	[gc]='gc-pause > 100s'
	[gc-all]='gc-pause > 100s'
	[ticks]='alloc-rate > 1000GB/s'
	[ticks-all]='alloc-rate > 1000GB/s'
	[counters]='System.Runtime/cpu-usage > 99%'
	[exceptions]='exception NoSuchException'
	[proc]='private-memory > 1TB'
	[meters]='meter MemSpike.Orders/queue.depth > 1000000'
)
declare -A extra=([gc-all]=--all-events [ticks-all]=--all-events)
one() { # level -> elapsed ms on stdout
	local level=$1 ap dp=
	rm -f "$t/dw.out"
	bench_app "$app" DOTNET_TieredCompilation=0 DOTNET_gcConcurrent=0 DOTNET_GCgen0size=0x2000000
	if [ "$level" != alone ]; then
		# shellcheck disable=SC2086 # extra is one word or none
		"$dw" --pid "$ap" --when "${when[$level]}" ${extra[$level]:-} --proc-interval 10ms --dump-dir "$t" \
			--journal "$t/journal" >"$t/dw.out" 2>&1 &
		dp=$!
		pids+=("$dp")
		for _ in $(seq 100); do grep -q 'watching pid' "$t/dw.out" && break; sleep 0.05; done
		grep -q 'watching pid' "$t/dw.out" || { echo "overhead: dumpwatch did not attach ($level):" >&2; cat "$t/dw.out" >&2; exit 1; }
		sleep 1.2 # the counters' first interval, the GC state
	else
		sleep 0.3
	fi
	echo "work $n" >&3
	echo "work $n" >&3
	echo "work $n" >&3
	until [ "$(grep -c '^work ' "$t/app.out")" -ge 3 ]; do sleep 0.05; done
	sed -n 's/^work n=[0-9]* ms=\([0-9.]*\).*/\1/p' "$t/app.out" | sort -g | head -1
	bench_app_end
	[ -z "$dp" ] || { kill -TERM "$dp" 2>/dev/null || true; wait "$dp" 2>/dev/null || true; }
	[ -z "$dp" ] || grep '"event":"stop"' "$t/journal" | tail -1 | jq -r '"\(.events) \(.stream_bytes)"' >>"$t/stream.$level"
	rm -f "$t/journal"
}
for i in $(seq "$runs"); do
	for level in "${levels[@]}"; do
		echo "$level $(one "$level")" >>"$t/results"
	done
done
base=$(awk '$1 == "alone" { print $2 }' "$t/results" | median)
echo "MemSpike allocating $n 16-byte arrays (the fastest of 3 rounds), $runs runs each (ms):"
for level in "${levels[@]}"; do
	vals=$(awk -v l="$level" '$1 == l { print $2 }' "$t/results")
	m=$(median <<<"$vals")
	lo=$(sort -g <<<"$vals" | head -1)
	hi=$(sort -g <<<"$vals" | tail -1)
	ev=""
	if [ -s "$t/stream.$level" ]; then
		ev=$(awk '{ e += $1; b += $2; n++ } END { printf "%.0f events, %.0f KB", e / n, b / n / 1e3 }' "$t/stream.$level")
	fi
	awk -v l="$level" -v m="$m" -v lo="$lo" -v hi="$hi" -v b="$base" -v w="${when[$level]:-}${extra[$level]:+ ${extra[$level]}}" -v ev="$ev" 'BEGIN {
		printf "%-11s median %7.1f ms (min %7.1f, max %7.1f)  %+6.1f %%  %s%s\n", l, m, lo, hi, (m / b - 1) * 100, w, ev ? "  [" ev " per run]" : "" }'
done
