#!/usr/bin/env bash
# Soak: one guard (--rules-dir) while N MemSpike processes start, spike their
# LOH (the rule fires, a triage dump is taken; the store keeps the newest 10,
# deleting older ones) and exit, over and over for T minutes. Prints
# dumpwatch's RSS and open descriptors every S seconds, then the first, last
# and highest figures. Not pass/fail: the monitor must never be the leak.
#   usage: tests/bench/soak.sh [--build DIR] [--procs N] [--minutes T] [--interval S]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build procs=4 minutes=10 interval=30
while (($#)); do
	case $1 in
	--build) build=$2; shift 2 ;;
	--procs) procs=$2; shift 2 ;;
	--minutes) minutes=$2; shift 2 ;;
	--interval) interval=$2; shift 2 ;;
	*) echo "usage: $0 [--build DIR] [--procs N] [--minutes T] [--interval S]" >&2; exit 1 ;;
	esac
done
app=$build/apps/MemSpike/MemSpike
[ -x "$build/dumpwatch" ] && [ -x "$app" ] || { echo "soak: build first (scripts/build.sh)" >&2; exit 1; }
t=$(mktemp -d /tmp/dw-soak.XXXXXX)
chmod 0755 "$t"
mkdir -p "$t/rules" "$t/dumps"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	pkill -f -- "--tag soak$$-" 2>/dev/null || true
	wait 2>/dev/null || true
	[ -n "${SOAK_KEEP:-}" ] && cp "$t/journal.jsonl" "$SOAK_KEEP"; rm -rf "$t"
}
trap cleanup EXIT
cat >"$t/rules/soak.json" <<JSON
{ "name": "soak-loh", "process": { "cmdline": "*--tag soak$$-*" }, "when": "loh-size > 100MB",
  "dump": { "type": "triage" }, "limits": { "max-dumps": 100000, "cooldown": "0s" } }
JSON
"$build/dumpwatch" --rules-dir "$t/rules" --dump-dir "$t/dumps" --journal "$t/journal.jsonl" \
	--store-max-count 10 --store-full delete-oldest >"$t/dw.out" 2>&1 &
dw=$!
pids+=("$dw")
sleep 1

# One worker: a process per cycle that spikes, releases and exits.
worker() {
	local k=$1 n=0
	while :; do
		n=$((n + 1))
		printf 'loh 150\nsleep 700\nrelease\nsleep 300\nexit\n' | "$app" --tag "soak$$-$k-$n" >/dev/null 2>&1 || true
	done
}
for k in $(seq 1 "$procs"); do
	worker "$k" &
	pids+=("$!")
done

count() { grep -c "\"event\":\"$1\"" "$t/journal.jsonl" 2>/dev/null || true; }
echo "soak: $procs processes cycling for $minutes min; $(uname -srm), $(nproc) cores, $(date -u +%FT%TZ)"
printf '%8s %9s %5s %8s %8s %7s %8s\n' "time_s" "rss_kib" "fds" "attach" "detach" "dumps" "deleted"
start=$SECONDS end=$((SECONDS + minutes * 60))
first_rss="" first_fds="" max_rss=0 max_fds=0 rss=0 fds=0 samples=0
while ((SECONDS < end)); do
	sleep "$interval"
	kill -0 "$dw" 2>/dev/null || { echo "soak: dumpwatch died"; tail -5 "$t/dw.out"; exit 1; }
	rss=$(awk '/^VmRSS/ {print $2}' "/proc/$dw/status")
	fds=$(ls "/proc/$dw/fd" | wc -l)
	samples=$((samples + 1))
	# The first sample after a minute is the baseline: start-up is over.
	if [ -z "$first_rss" ] && ((SECONDS - start >= 60 || samples == 2)); then first_rss=$rss first_fds=$fds; fi
	((rss > max_rss)) && max_rss=$rss
	((fds > max_fds)) && max_fds=$fds
	printf '%8d %9d %5d %8d %8d %7d %8d\n' $((SECONDS - start)) "$rss" "$fds" "$(count attach)" "$(count detach)" \
		"$(count dump)" "$(count dump-deleted)"
done
echo "rss_kib: baseline ${first_rss:-$rss} last $rss max $max_rss; fds: baseline ${first_fds:-$fds} last $fds max $max_fds"
echo "failures: $(count dump-failed) dump-failed, $(count session-failed) session-failed, $(count attach-failed) attach-failed"
if [ -n "$first_rss" ] && ((rss > first_rss + first_rss / 10 + 512 || fds > first_fds + 4)); then
	echo "verdict: GROWTH (last above baseline)"
else
	echo "verdict: no growth"
fi
