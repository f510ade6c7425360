#!/usr/bin/env bash
# The cost of polling /proc for rss, private-memory, swap, threads and fds
# (docs/benchmarks.md, "Process memory from /proc"):
# - bench_proc_poll: CPU and wall time of one poll of a real .NET process;
# - dumpwatch's own CPU over HOLD seconds watching one idle MemSpike with a
#   stream-only rule (loh-size), and with a private-memory + fds rule polled
#   every 100 ms and every 10 ms (from /proc/PID/schedstat, in ns).
# Figures only, never pass/fail.
#   usage: tests/bench/proc.sh [BUILD_DIR] [HOLD]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
hold=${2:-20}
app="$build/apps/MemSpike/MemSpike"
source "$here/tests/bench/lib.sh"
bench_init dw-proc
bench_app "$app"
"$build/bench_proc_poll" "$ap" 20000
echo
# CPU time in ns: dumpwatch's one thread from schedstat; MemSpike's threads
# together from stat (utime + stime, in clock ticks).
cpu_ns() { awk '{ print $1 }' "/proc/$1/schedstat"; }
proc_ns() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) * 1e9 / hz }' "/proc/$1/stat"; }
for setup in "loh-size > 100GB|100ms|stream only (loh-size)" \
	"private-memory > 100GB|100ms|private-memory + fds every 100 ms" \
	"private-memory > 100GB|10ms|private-memory + fds every 10 ms"; do
	IFS='|' read -r when interval label <<<"$setup"
	extra=()
	[[ $when == private* ]] && extra=(--when 'fds > 100000')
	"$build/dumpwatch" --pid "$ap" --when "$when" "${extra[@]}" --proc-interval "$interval" --dump-dir "$t" \
		>"$t/dw.out" 2>&1 &
	dp=$!
	pids+=("$dp")
	for _ in $(seq 100); do grep -q 'watching pid' "$t/dw.out" && break; sleep 0.1; done
	sleep 1
	c0=$(cpu_ns "$dp")
	a0=$(proc_ns "$ap")
	sleep "$hold"
	c1=$(cpu_ns "$dp")
	a1=$(proc_ns "$ap")
	kill -TERM "$dp"
	wait "$dp" 2>/dev/null || true
	awk -v l="$label" -v c=$((c1 - c0)) -v a="$(awk -v x="$a0" -v y="$a1" 'BEGIN { print y - x }')" -v h="$hold" 'BEGIN {
		printf "%-36s dumpwatch %.3f %% of a core (%.1f ms over %d s); MemSpike %.3f %%\n", l ":", c / h / 1e7, c / 1e6, h, a / h / 1e7 }'
done
bench_app_end
