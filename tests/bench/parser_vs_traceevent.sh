#!/usr/bin/env bash
# dumpwatch's nettrace parser and decoders against the reference managed
# parser, TraceEvent (NuGet Microsoft.Diagnostics.Tracing.TraceEvent), on one
# stream recorded here: `dumpwatch record` (runtime GC keyword at level 5 with
# the Exception keyword, System.Runtime counters at 1 s) of MemSpike
# allocating in a loop and throwing for SECONDS. Each side parses the whole
# file ROUNDS times after a warm-up round and reads the fields dumpwatch
# uses (bench_decode.c, TraceEventParse/Program.cs); the best and median
# rounds and their ratio are printed. TraceEvent reads the file through the
# page cache, dumpwatch from memory. Figures only, never pass/fail.
#   usage: tests/bench/parser_vs_traceevent.sh [BUILD_DIR] [SECONDS] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
secs=${2:-8}
rounds=${3:-10}
app="$build/apps/MemSpike/MemSpike"
te="$build/tools/TraceEventParse/TraceEventParse"
source "$here/tests/bench/lib.sh"
bench_init dw-pvt
[ -x "$build/bench_decode" ] || { echo "parser_vs_traceevent: $build/bench_decode not built" >&2; exit 1; }
if [ ! -x "$te" ]; then
	DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 dotnet build -c Release -o "$build/tools/TraceEventParse" \
		"$here/tests/bench/TraceEventParse/TraceEventParse.csproj" >"$t/build.log" 2>&1 ||
		{ cat "$t/build.log" >&2; exit 1; }
fi
bench_app "$app"
"$build/dumpwatch" record --pid "$ap" --out "$t/trace.nettrace" --duration "${secs}s" >"$t/rec.out" 2>&1 &
rp=$!
pids+=("$rp")
sleep 0.5
echo "churn 20" >&3
echo "throwfor $((secs * 1000 - 1500)) 200 io recorded" >&3
echo "work 600000000" >&3
wait "$rp"
bench_app_end
echo "trace: $(stat -c %s "$t/trace.nettrace") bytes recorded from .NET $(sed -n 's/.*runtime=\([^ ]*\).*/\1/p' "$t/app.out") over ${secs} s"
"$build/bench_decode" "$t/trace.nettrace" "$rounds" | tee "$t/c.txt"
"$te" "$t/trace.nettrace" "$rounds" | tee "$t/te.txt"
get() { sed -n "s/.* $2=\([0-9.]*\).*/\1/p" "$1"; }
awk -v cb="$(get "$t/c.txt" best_ms)" -v cm="$(get "$t/c.txt" median_ms)" -v tb="$(get "$t/te.txt" best_ms)" \
	-v tm="$(get "$t/te.txt" median_ms)" -v by="$(get "$t/c.txt" bytes)" 'BEGIN {
	printf "dumpwatch:  best %.1f ms (%.0f MB/s), median %.1f ms\n", cb, by / cb / 1e3, cm
	printf "TraceEvent: best %.1f ms (%.0f MB/s), median %.1f ms\n", tb, by / tb / 1e3, tm
	printf "TraceEvent / dumpwatch: %.1fx (best), %.1fx (median)\n", tb / cb, tm / cm }'
