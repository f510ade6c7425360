#!/usr/bin/env bash
# The guard under a storm of planted socket names: an unprivileged user plants
# NAMES listener-less socket files named for the next pids in a 1777 socket
# directory (the TMPDIR of the processes that matter, given to the guard with
# --socket-dir), replaces CHURN of them a second, and starts YOUNG short-lived
# processes a second there (tests/tools/storm.py). Meanwhile RUNS real .NET
# processes are started one after another in that directory: for each, the
# delay from the creation of its diagnostics socket (the file's ctime) to the
# guard's "attach" journal record; and the guard's CPU (utime + stime from
# /proc/PID/stat) over the whole storm. Figures only, never pass/fail.
#   usage: tests/bench/storm.sh [BUILD_DIR] [RUNS] [DUMPWATCH]
#   DUMPWATCH: the binary to measure (default BUILD_DIR/dumpwatch), e.g. an
#   older build for a before/after comparison. NAMES (20000), CHURN (1000),
#   YOUNG (50) and LIFE (1 s, how long a young process lives) from the
#   environment.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
runs=${2:-5}
dw=${3:-$build/dumpwatch}
names=${NAMES:-20000}
churn=${CHURN:-1000}
young=${YOUNG:-50}
life=${LIFE:-1}
app="$build/apps/MemSpike/MemSpike"
t=$(mktemp -d /tmp/dw-storm.XXXXXX)
chmod 0755 "$t"
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; pkill -KILL -f "$t/storm.py" 2>/dev/null || true; rm -rf "$t"' EXIT
mkdir -m 1777 "$t/sock"
mkdir "$t/rules" "$t/dumps"
install -m 0644 "$here/tests/tools/storm.py" "$t/storm.py"
tag="storm$$"
cat >"$t/rules/r.json" <<JSON
{ "name": "storm", "process": { "cmdline": "*--tag $tag*" }, "when": "loh-size > 50GB" }
JSON
"$dw" --rules-dir "$t/rules" --dump-dir "$t/dumps" --journal "$t/j.jsonl" --socket-dir "$t/sock" >"$t/dw.out" 2>&1 &
dp=$!
pids+=("$dp")
for _ in $(seq 100); do grep -q guarding "$t/dw.out" && break; sleep 0.1; done

hz=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$dp/stat"; }
ms_of() { date -u -d "$1" +%s%3N; }
seconds=$((runs * 5 + 8))
cpu0=$(cpu)
w0=$(date +%s%3N)
: >"$t/storm.log"
chmod 0666 "$t/storm.log"
setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 "$t/storm.py" "$t/sock" --names "$names" \
	--churn "$churn" --young "$young" --life "$life" --seconds "$seconds" --ready "$t/storm.log" &
sp=$!
pids+=("$sp")
for _ in $(seq 600); do grep -q ready "$t/storm.log" && break; sleep 0.1; done
planted_ms=$(($(date +%s%3N) - w0))

delays=()
missed=0
for i in $(seq "$runs"); do
	sleep 3
	TMPDIR="$t/sock" "$app" --script "sleep 600000" --tag "$tag-$i" </dev/null >/dev/null 2>&1 &
	ap=$!
	pids+=("$ap")
	start=$(awk '{print $22}' "/proc/$ap/stat")
	sock="$t/sock/dotnet-diagnostic-$ap-$start-socket"
	for _ in $(seq 500); do [ -S "$sock" ] && break; sleep 0.01; done
	[ -S "$sock" ] || { echo "no socket for $ap"; exit 1; }
	created=$(stat -c %.3Z "$sock" | tr -d .)
	line=
	for _ in $(seq 150); do
		line=$(grep "\"event\":\"attach\".*\"pid\":$ap," "$t/j.jsonl" || true)
		[ -n "$line" ] && break
		sleep 0.1
	done
	if [ -n "$line" ]; then
		at=$(ms_of "$(echo "$line" | sed -n 's/.*"time":"\([^"]*\)".*/\1/p')")
		delays+=($((at - created)))
	else
		missed=$((missed + 1))
	fi
	kill -9 "$ap"
	wait "$ap" 2>/dev/null || true
done
wait "$sp" || true
cpu1=$(cpu)
w1=$(date +%s%3N)
echo "storm: $names names planted (in $planted_ms ms), $churn replaced and $young young processes (living $life s) a second," \
	"$(((w1 - w0) / 1000)) s; $(tail -1 "$t/storm.log")"
if [ "${#delays[@]}" -gt 0 ]; then
	sorted=$(printf '%s\n' "${delays[@]}" | sort -n)
	median=$(echo "$sorted" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
	echo "socket created -> attached, $runs processes started during the storm:" \
		"median $median ms, min $(echo "$sorted" | head -1) ms, max $(echo "$sorted" | tail -1) ms" \
		"($missed not attached within 15 s)"
else
	echo "socket created -> attached: none of $runs processes attached within 15 s"
fi
echo "guard CPU over the storm: $(awk -v c=$((cpu1 - cpu0)) -v hz="$hz" -v ms=$((w1 - w0)) \
	'BEGIN {printf "%.1f", 100 * c / hz / (ms / 1000)}') % of one core," \
	"peak RSS $(awk '/VmHWM/ {print $2}' "/proc/$dp/status") KiB"
kill -TERM "$dp"
wait "$dp" || true
stop=$(grep '"event":"stop"' "$t/j.jsonl" | tail -1)
if echo "$stop" | grep -q '"discovery"'; then
	echo "guard's discovery work: $(echo "$stop" | sed 's/.*"discovery":\({[^}]*}\).*/\1/')"
fi
