#!/usr/bin/env bash
# The guard (dumpwatch --rules-dir): how soon a process started after the
# daemon is attached, measured from the moment its runtime created its
# diagnostics socket (the socket file's ctime) to the daemon's "attach" journal
# record; and the daemon's RSS, CPU and fds while guarding N idle processes.
# Figures only, never pass/fail.
#   usage: tests/bench/guard_attach.sh [BUILD_DIR] [RUNS] [GUARDED]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
runs=${2:-10}
guarded=${3:-8}
app="$build/apps/MemSpike/MemSpike"
t=$(mktemp -d /tmp/dw-gattach.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$t"' EXIT
mkdir "$t/rules" "$t/dumps"
tag="bench$$"
cat >"$t/rules/r.json" <<JSON
{ "name": "bench", "process": { "cmdline": "*--tag $tag*" }, "when": "loh-size > 50GB" }
JSON
"$build/dumpwatch" --rules-dir "$t/rules" --dump-dir "$t/dumps" --journal "$t/j.jsonl" >"$t/dw.out" 2>&1 &
dp=$!
pids+=("$dp")
for _ in $(seq 100); do grep -q guarding "$t/dw.out" && break; sleep 0.1; done

# ms since the epoch of a journal time "2026-11-22T10:58:01.123Z"
ms_of() { date -u -d "$1" +%s%3N; }
delays=()
for i in $(seq "$runs"); do
	"$app" --script "sleep 600000" --tag "$tag-$i" </dev/null >/dev/null 2>&1 &
	ap=$!
	pids+=("$ap")
	sock=
	for _ in $(seq 500); do
		sock=$(ls /tmp/dotnet-diagnostic-$ap-*-socket 2>/dev/null || true)
		[ -n "$sock" ] && break
		sleep 0.01
	done
	[ -n "$sock" ] || { echo "no socket for $ap"; exit 1; }
	created=$(stat -c %.3Z "$sock" | tr -d .)
	for _ in $(seq 100); do grep -q "\"event\":\"attach\".*\"pid\":$ap," "$t/j.jsonl" && break; sleep 0.05; done
	line=$(grep "\"event\":\"attach\".*\"pid\":$ap," "$t/j.jsonl") || { echo "pid $ap not attached"; cat "$t/dw.out"; exit 1; }
	at=$(ms_of "$(echo "$line" | sed -n 's/.*"time":"\([^"]*\)".*/\1/p')")
	delays+=($((at - created)))
	kill -9 "$ap"
	wait "$ap" 2>/dev/null || true
done
sorted=$(printf '%s\n' "${delays[@]}" | sort -n)
median=$(echo "$sorted" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
echo "socket created -> attached, $runs processes started after the daemon:"
echo "  median $median ms, min $(echo "$sorted" | head -1) ms, max $(echo "$sorted" | tail -1) ms (journal times: 1 ms resolution)"

# Cost while guarding idle processes.
for i in $(seq "$guarded"); do
	"$app" --script "sleep 600000" --tag "$tag-g$i" </dev/null >/dev/null 2>&1 &
	pids+=("$!")
	disown "$!" # killed by the trap; no job report
done
for _ in $(seq 200); do
	[ "$(grep -c '"event":"attach"' "$t/j.jsonl")" -ge $((runs + guarded)) ] && break
	sleep 0.1
done
hz=$(getconf CLK_TCK)
cpu0=$(awk '{print $14 + $15}' "/proc/$dp/stat")
sleep 20
cpu1=$(awk '{print $14 + $15}' "/proc/$dp/stat")
echo "guarding $guarded idle processes for 20 s (GC keyword at level 5, 1 s /proc scan):"
echo "  peak RSS (VmHWM) $(awk '/VmHWM/ {print $2}' "/proc/$dp/status") KiB, open fds $(ls "/proc/$dp/fd" | wc -l)," \
	"CPU $(awk -v c=$((cpu1 - cpu0)) -v hz="$hz" 'BEGIN {printf "%.2f", 100 * c / hz / 20}') % of one core"
kill -TERM "$dp"
wait "$dp" || true
