#!/usr/bin/env bash
# Heap snapshots (docs/benchmarks.md, "Heap snapshots"): dumpwatch against
# dotnet-gcdump (the NuGet tool) on the same process state. GcLab holds, in
# its static fields, N arrays of 1 MiB (the LOH) and a binary tree of NODES
# HeapNode objects (two references to nodes and one to a HeapLeaf each):
#   small  64 arrays + 500,000 nodes    about 100 MB in 1.0 M objects
#   large 640 arrays + 4,990,000 nodes  about 990 MB in 9.98 M objects
# (below 10 M objects: above that, dotnet-gcdump writes a sampled graph).
# Then, RUNS times in turn, after one warm-up of each not counted:
#   - dumpwatch: `dumpwatch heap PID` (the table) under /usr/bin/time;
#   - dumpwatch --types: `dumpwatch heap --types PID` (the histogram alone,
#     no graph kept) under /usr/bin/time;
#   - dotnet-gcdump: `collect -p PID -o F`, then `report F`, each under
#     /usr/bin/time: the wall time to the histogram is their sum, the peak
#     resident set is given for each;
#   - the target's pause, the same yardstick for both tools: a `dumpwatch gc`
#     session of its own beside them prints each GC with its pause (from
#     GCSuspendEEBegin to GCRestartEEEnd); the process is idle otherwise, so
#     each snapshot adds one line, its induced gen2 GC. Beside it, the pause
#     dumpwatch heap reports itself (the same events in its own stream), and
#     what the runtime counts in GC.GetTotalPauseDuration() (GcLab's info,
#     before and after), which leaves out the heap walk.
# Then one `dumpwatch heap --json` for the totals, the references, the
# pause, the walk, the stream and what the limits cut, beside what
# `dotnet-gcdump report` counts. Figures only, never pass/fail.
#   usage: tests/bench/heap.sh [BUILD_DIR] [RUNS] [SIZES...]   (5 runs, small large)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
runs=${2:-5}
shift $(($# > 2 ? 2 : $#))
sizes=("$@")
((${#sizes[@]})) || sizes=(small large)
source "$here/tests/bench/lib.sh"
command -v jq >/dev/null || { echo "heap: needs jq" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "heap: needs /usr/bin/time (GNU time)" >&2; exit 1; }
gcdump=$(bench_dotnet_tool dotnet-gcdump)
bench_init dw-bench-heap

# gc_pause N: the pause (ms) of the GC on line N+1 of the gc view's output,
# once it is there; "nan" when it did not come within 20 s.
gc_pause() {
	local k
	for k in $(seq 200); do
		[ "$(wc -l <"$t/gc.jsonl")" -gt "$1" ] && break
		sleep 0.1
	done
	sed -n "$(($1 + 1))p" "$t/gc.jsonl" | jq -r '.pause_ms // "nan"' | grep . || echo nan
}

# info_pause: GcLab's total GC pause so far (ms) and its gen2 count, asked
# over its command pipe: "PAUSE_MS GEN2".
info_pause() {
	local n
	n=$(grep -c '^done info' "$t/app.out" || true)
	echo info >&3
	until [ "$(grep -c '^done info' "$t/app.out" || true)" -gt "$n" ]; do sleep 0.01; done
	grep '^done info' "$t/app.out" | tail -1 | sed -n 's/.* gen2=\([0-9]*\) pause_ms=\([0-9.]*\).*/\2 \1/p'
}

# timed OUT CMD...: runs CMD with its output in OUT, prints "WALL_S MAXRSS_KB".
timed() {
	local out=$1
	shift
	/usr/bin/time -o "$t/time" -f '%e %M' "$@" >"$out" 2>"$out.err" || {
		echo "heap: $* failed: $(tail -3 "$out.err")" >&2
		exit 1
	}
	cat "$t/time"
}

# stats: "min median max" of the numbers on stdin.
stats() { sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%g / %g / %g", v[1], m, v[NR] }'; }
col() { awk -v c="$2" '{ print $c }' "$1" | stats; }

for size in "${sizes[@]}"; do
	case $size in
	small) shape="64 1048576 500000" ;;
	large) shape="640 1048576 4990000" ;;
	*) echo "heap: unknown size $size (small, large)" >&2; exit 1 ;;
	esac
	bench_app "$build/apps/GcLab/GcLab"
	echo "cache $shape" >&3
	until grep -q '^done cache' "$t/app.out"; do sleep 0.1; done
	echo "== $size: GcLab cache $shape (pid $ap), $runs runs after a warm-up"
	"$build/dumpwatch" gc --pid "$ap" --format json >"$t/gc.jsonl" 2>"$t/gc.err" &
	gp=$!
	pids+=("$gp")
	until grep -qs following "$t/gc.err"; do sleep 0.05; done
	sleep 0.5 # its session is running once the runtime has answered
	: >"$t/dw.txt"
	: >"$t/gd.txt"
	: >"$t/ty.txt"
	for i in $(seq 0 "$runs"); do
		read -r p0 g0 < <(info_pause)
		n0=$(wc -l <"$t/gc.jsonl")
		read -r dw_s dw_kb < <(timed "$t/dw.out" "$build/dumpwatch" heap "$ap")
		dw_pause=$(gc_pause "$n0")
		read -r p1 g1 < <(info_pause)
		dw_self=$(sed -n 's/^the target was paused \([0-9.]*\) ms.*/\1/p' "$t/dw.out")
		n2=$(wc -l <"$t/gc.jsonl")
		read -r ty_s ty_kb < <(timed "$t/ty.out" "$build/dumpwatch" heap --types "$ap")
		ty_pause=$(gc_pause "$n2")
		rm -f "$t/app.gcdump"
		n1=$(wc -l <"$t/gc.jsonl")
		read -r c_s c_kb < <(timed "$t/collect.out" "$gcdump" collect -p "$ap" -o "$t/app.gcdump")
		gd_pause=$(gc_pause "$n1")
		read -r p2 g2 < <(info_pause)
		read -r r_s r_kb < <(timed "$t/report.out" "$gcdump" report "$t/app.gcdump")
		((i > 0)) || continue
		echo "$ty_s $((ty_kb / 1024)) $ty_pause" >>"$t/ty.txt"
		echo "$dw_s $((dw_kb / 1024)) $dw_pause ${dw_self:-nan} $(awk -v a="$p0" -v b="$p1" 'BEGIN { print b - a }') $((g1 - g0))" >>"$t/dw.txt"
		echo "$(awk -v a="$c_s" -v b="$r_s" 'BEGIN { print a + b }') $c_s $r_s $((c_kb / 1024)) $((r_kb / 1024)) $gd_pause $(awk -v a="$p1" -v b="$p2" 'BEGIN { print b - a }') $((g2 - g1))" >>"$t/gd.txt"
	done
	echo "  min / median / max of $runs runs"
	echo "  dumpwatch heap:       wall $(col "$t/dw.txt" 1) s, peak RSS $(col "$t/dw.txt" 2) MB"
	echo "                        target's pause $(col "$t/dw.txt" 3) ms (gc view), $(col "$t/dw.txt" 4) ms (as dumpwatch heap reports it)"
	echo "                        GC.GetTotalPauseDuration() grew $(col "$t/dw.txt" 5) ms; gen2 GCs per snapshot: $(col "$t/dw.txt" 6)"
	echo "  dumpwatch heap --types: wall $(col "$t/ty.txt" 1) s, peak RSS $(col "$t/ty.txt" 2) MB, target's pause $(col "$t/ty.txt" 3) ms"
	echo "  dotnet-gcdump:        wall $(col "$t/gd.txt" 1) s (collect $(col "$t/gd.txt" 2) s + report $(col "$t/gd.txt" 3) s)"
	echo "                        peak RSS: collect $(col "$t/gd.txt" 4) MB, report $(col "$t/gd.txt" 5) MB"
	echo "                        target's pause $(col "$t/gd.txt" 6) ms (gc view)"
	echo "                        GC.GetTotalPauseDuration() grew $(col "$t/gd.txt" 7) ms; gen2 GCs per snapshot: $(col "$t/gd.txt" 8)"
	paste "$t/dw.txt" "$t/gd.txt" | awk '{ print $7 / $1 }' >"$t/ratio_wall"
	paste "$t/dw.txt" "$t/gd.txt" | awk '{ print $10 / $2 }' >"$t/ratio_rss"
	echo "  dotnet-gcdump ÷ dumpwatch, run by run: wall $(stats <"$t/ratio_wall")×, peak RSS (collect's) $(stats <"$t/ratio_rss")×"
	paste "$t/ty.txt" "$t/gd.txt" | awk '{ print $4 / $1 }' >"$t/ratio_wall"
	paste "$t/ty.txt" "$t/gd.txt" | awk '{ print $7 / $2 }' >"$t/ratio_rss"
	echo "  dotnet-gcdump ÷ dumpwatch --types, run by run: wall $(stats <"$t/ratio_wall")×, peak RSS (collect's) $(stats <"$t/ratio_rss")×"

	"$build/dumpwatch" heap --json "$ap" >"$t/heap.json"
	jq -r '"  dumpwatch heap --json: \(.objects) objects, \(.bytes) bytes, \(.references) references, \(.roots) roots; " +
		"pause \(.pause_ms * 10 | floor / 10) ms, walk \(.walk_ms * 10 | floor / 10) ms, elapsed \(.elapsed_ms | floor) ms, " +
		"stream \(.stream_bytes / 1e6 | floor) MB\n  cut: \(.cut | to_entries | map("\(.key) \(.value)") | join(", "))"' "$t/heap.json"
	jq -r '.types[:3][] | "    \(.objects) \(.type) \(.bytes) bytes"' "$t/heap.json"
	"$build/dumpwatch" heap --types --json "$ap" >"$t/types.json"
	jq -r '"  dumpwatch heap --types --json: \(.objects) objects, \(.bytes) bytes, \(.references) references; " +
		"elapsed \(.elapsed_ms | floor) ms, stream \(.stream_bytes / 1e6 | floor) MB, complete \(.complete)"' "$t/types.json"
	awk '/GC Heap bytes$/ { b = $1 } /GC Heap objects$/ { o = $1 } END { print "  dotnet-gcdump report: " o " objects, " b " bytes" }' "$t/report.out"
	kill "$gp"
	wait "$gp" 2>/dev/null || true
	bench_app_end
	echo
done
