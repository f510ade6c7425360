#!/usr/bin/env bash
# dumpwatch's own cost while watching: peak RSS (VmHWM) and CPU time over
# SECONDS of watching MemSpike allocating steadily (LOH, SOH and POH churn below
# the threshold, so no dump is taken), with allocation ticks (level 5) and
# System.Runtime counters subscribed. Not a test: figures only.
#   usage: tests/bench/watch_cost.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
secs=${2:-20}
t=$(mktemp -d /tmp/dw-cost.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$t"' EXIT
mkfifo "$t/cmd"
exec 3<>"$t/cmd"
"$build/apps/MemSpike/MemSpike" <"$t/cmd" >"$t/app.out" 2>&1 &
ap=$!
pids+=("$ap")
until grep -q ready "$t/app.out"; do sleep 0.05; done
until ls /tmp/dotnet-diagnostic-$ap-*-socket >/dev/null 2>&1; do sleep 0.05; done
"$build/dumpwatch" --pid "$ap" --when 'loh-size > 50GB' --when 'System.Runtime/cpu-usage > 99% for 1h' \
	--dump-dir "$t" --journal "$t/j.jsonl" >"$t/dw.out" 2>&1 &
dp=$!
pids+=("$dp")
for _ in $(seq 100); do grep -q 'watching pid' "$t/dw.out" && break; sleep 0.1; done
grep -q 'watching pid' "$t/dw.out" || { cat "$t/dw.out"; exit 1; }
hz=$(getconf CLK_TCK)
cpu0=$(awk '{print $14 + $15}' "/proc/$dp/stat")
start=$SECONDS
n=0
while ((SECONDS - start < secs)); do
	echo "spike 100 50" >&3
	echo "soh 20" >&3
	echo "poh 5" >&3
	echo "release" >&3
	echo "sleep 100" >&3
	n=$((n + 1))
	sleep 0.25
done
cpu1=$(awk '{print $14 + $15}' "/proc/$dp/stat")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$dp/status")
rss=$(awk '/VmRSS/ {print $2}' "/proc/$dp/status")
fds=$(ls "/proc/$dp/fd" | wc -l)
kill -INT "$dp"
wait "$dp" || true
stop=$(grep '"event":"stop"' "$t/j.jsonl")
events=$(echo "$stop" | sed -n 's/.*"events":\([0-9]*\).*/\1/p')
bytes=$(echo "$stop" | sed -n 's/.*"stream_bytes":\([0-9]*\).*/\1/p')
echo "watching for $secs s ($n rounds of 125 MB allocated and released; $events events, $bytes bytes of stream):"
echo "  peak RSS (VmHWM) $hwm KiB, RSS at end $rss KiB, open fds $fds"
awk -v c=$((cpu1 - cpu0)) -v hz="$hz" -v s="$secs" \
	'BEGIN { printf "  CPU %.2f s over %d s = %.2f%% of one core\n", c / hz, s, 100 * c / hz / s }'
