#!/usr/bin/env bash
# Prints every benchmark figure dumpwatch publishes: parser throughput on a
# recorded trace and against TraceEvent, detection latency (from the stream,
# with a 50 ms counters interval, from /proc), the delay from a throw to its
# dump, the target's slowdown per subscription level, dumpwatch's own RSS and CPU
# while watching, the guard's attach latency and cost, the guard under a
# storm of planted socket names, beside slow peers and with 200 processes;
# each dump type's size and time to write; the dump contexts' memory and
# time to write; what an upload costs; heap snapshots against dotnet-gcdump.
# Figures only, never pass/fail. Builds first.
#   usage: tests/bench/run.sh [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
BUILD_DIR=$build "$here/scripts/build.sh" >/dev/null
echo "machine: $(uname -srm), $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
echo "date: $(date -u +%Y-%m-%d), runtime: $("$build/apps/MemSpike/MemSpike" --script exit | sed -n 's/.*runtime=\([^ ]*\).*/\1/p')"
echo
echo "== parser throughput (one core)"
"$build/bench_parser" "$here/tests/data/gc-alloc-counters.nettrace"
echo
echo "== parser and decoders against TraceEvent, on one recorded stream"
"$here/tests/bench/parser_vs_traceevent.sh" "$build" 8 30
echo
echo "== detection latency"
WRITE=off "$here/tests/bench/latency.sh" "$build" 10 idle
echo
WRITE=off "$here/tests/bench/latency.sh" "$build" 20 busy
echo
WRITE=off DW_ARGS="--counter-interval 50ms" "$here/tests/bench/latency.sh" "$build" 15 idle
echo
echo "== process memory from /proc: latency against loh-size, cost"
for mode in idle busy; do
	"$here/tests/bench/latency.sh" "$build" 15 "$mode"
	"$here/tests/bench/latency.sh" "$build" 15 "$mode" private-memory 100ms
	"$here/tests/bench/latency.sh" "$build" 15 "$mode" private-memory 10ms
done
"$here/tests/bench/proc.sh" "$build" 20
echo
echo "== exceptions: from the throw to the dump"
"$here/tests/bench/exception_delay.sh" "$build" 10 idle
"$here/tests/bench/exception_delay.sh" "$build" 10 busy
echo
echo "== the target's slowdown per subscription level"
"$here/tests/bench/overhead.sh" "$build" 7
echo
echo "== dumpwatch's cost while watching"
"$here/tests/bench/watch_cost.sh" "$build" 20
echo
echo "== the guard (--rules-dir): attach latency and cost"
"$here/tests/bench/guard_attach.sh" "$build" 20 8
echo
echo "== the guard under a storm of planted socket names"
"$here/tests/bench/storm.sh" "$build" 5
echo
echo "== slow peers beside one real spike"
"$here/tests/bench/slowpeers.sh" "$build" 3
echo
echo "== 200 real processes under one guard"
"$here/tests/bench/many.sh" "$build" 200
echo
echo "== shipping a dump: SHA-256, uploads to s3rver"
"$here/tests/bench/upload.sh" "$build" 512 3
echo
echo "== dump types: size, time to write, what ClrMD sees (docs/dumps.md)"
"$here/tests/bench/dump_types.sh" "$build" 400
echo
echo "== dump contexts: history memory, time to write NAME.json and NAME.svg"
"$here/tests/bench/context.sh" "$build" 200 300
echo
echo "== heap snapshots: dumpwatch heap against dotnet-gcdump collect + report"
"$here/tests/bench/heap.sh" "$build" 5
echo
echo "== sizes right after the attach, before any GC (.NET 10, 9, 8)"
"$here/tests/bench/attach_accuracy.sh" "$build"
for rt in 9 8; do
	if [ -d "$build/apps-net$rt" ]; then
		"$here/tests/bench/attach_accuracy.sh" "$build" "$build/apps-net$rt" | tail -n +3
	fi
done
