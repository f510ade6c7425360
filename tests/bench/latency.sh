#!/usr/bin/env bash
# Detection latency: from the moment MemSpike's large-object allocations cross
# 200 MB (it prints the wall time right after the crossing allocation) to
# dumpwatch's decision to dump (journal "fired_unix_us"), over RUNS runs.
# Also prints dumpwatch's own share (read of the bytes -> decision) and the
# event-to-decision delay it measured itself. Not a test: figures only.
# MODE idle: the program is quiet before the spike, so the runtime's streaming
# thread is asleep waiting for events; busy: it allocates 20 MB/s of garbage
# throughout, so the thread is in its steady flush-then-sleep-100-ms cycle.
# METRIC loh-size (default) watches the stream; private-memory polls /proc
# every PROC_INTERVAL (default 100ms) instead: the rule's threshold is the
# program's private memory before the spike plus 200 MB, and MemSpike prints
# the time right after the allocation that took it there (pmark, checked
# after every MB). Both write every page they allocate.
# DW_ARGS in the environment adds options to dumpwatch's command line;
# WRITE=off leaves the arrays' pages unwritten (a faster burst).
#   usage: tests/bench/latency.sh [BUILD_DIR] [RUNS] [idle|busy] [loh-size|private-memory] [PROC_INTERVAL]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
runs=${2:-10}
mode=${3:-idle}
metric=${4:-loh-size}
interval=${5:-100ms}
read -r -a dw_args <<<"${DW_ARGS:-}" # more options, e.g. DW_ARGS="--counter-interval 50ms"
dw="$build/dumpwatch"
app="$build/apps/MemSpike/MemSpike"
source "$here/tests/bench/lib.sh"
bench_init dw-lat

for i in $(seq "$runs"); do
	rm -f "$t/j.jsonl" "$t"/*.core
	bench_app "$app"
	[ "${WRITE:-on}" = on ] && echo "write on" >&3
	if [ "$metric" = private-memory ]; then
		# Private memory (kB) now, and the threshold 200 MB above it.
		base=$(awk '/^(RssAnon|VmSwap):/ { kb += $2 } END { print kb * 1024 }' "/proc/$ap/status")
		mark=$(((base + 200000000) / 1000000))
		when="private-memory > ${mark}MB"
	else
		when='loh-size > 200MB'
	fi
	"$dw" --pid "$ap" --when "$when" --proc-interval "$interval" --dump-type triage --dump-dir "$t" \
		--journal "$t/j.jsonl" "${dw_args[@]}" >"$t/dw.out" 2>&1 &
	dp=$!
	pids+=("$dp")
	for _ in $(seq 100); do grep -q 'watching pid' "$t/dw.out" && break; sleep 0.1; done
	grep -q 'watching pid' "$t/dw.out" || { cat "$t/dw.out"; exit 1; }
	[ "$mode" = busy ] && echo "churn 20" >&3
	sleep 0.5
	# Random phase against the runtime's 100 ms flush cycle.
	sleep "$((RANDOM % 100 / 100)).$(printf %02d $((RANDOM % 100)))"
	if [ "$metric" = private-memory ]; then
		echo "pmark $mark" >&3
	else
		echo "mark 200" >&3
	fi
	echo "loh 300" >&3
	wait "$dp" || true
	crossed=$(sed -n 's/^p\{0,1\}crossed .*t_us=\([0-9]*\).*/\1/p' "$t/app.out")
	fired=$(grep '"event":"fire"' "$t/j.jsonl" | sed -n 's/.*"fired_unix_us":\([0-9]*\).*/\1/p')
	own=$(grep '"event":"fire"' "$t/j.jsonl" | sed -n 's/.*"read_to_fire_ms":\([0-9.e+-]*\).*/\1/p')
	delay=$(grep '"event":"fire"' "$t/j.jsonl" | sed -n 's/.*"detect_delay_ms":\([0-9.e+-]*\).*/\1/p')
	echo "$(( (fired - crossed) )) ${own:-nan} ${delay:-nan}" >>"$t/results"
	bench_app_end
done
summary() { # column, scale, label, decimals
	awk -v c="$1" -v k="$2" '{ print $c / k }' "$t/results" | sort -g | awk -v l="$3" -v d="$4" '
		{ v[NR] = $1 }
		END {
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%-40s median %." d "f ms, min %." d "f ms, max %." d "f ms\n", l, m, v[1], v[NR]
		}'
}
if [ "$metric" = private-memory ]; then
	echo "detection latency over $runs runs ($mode before the spike), private-memory polled every $interval:"
else
	echo "detection latency over $runs runs ($mode before the spike), loh-size from the event stream:"
fi
summary 1 1000 "allocation crossed the threshold -> decision:" 1
summary 3 1 "event timestamp -> decision:" 1
summary 2 1 "bytes read -> decision (dumpwatch):" 3
