#!/usr/bin/env bash
# What watching costs a real service (docs/benchmarks.md, "What watching
# costs a service"). ShopApi (tests/apps/ShopApi, an ASP.NET Core minimal
# API: 90 % JSON lists, 8 % 200 KB buffers on the LOH, 2 % caught
# exceptions) runs alone on CPU 0 under a steady load from wrk (32
# connections, tests/bench/wrk/shop.lua) on CPU 1, one server process for
# the whole run. Each watcher is measured in paired windows on that one
# process, A B B A: A with nothing attached, then the watcher attaches (on
# CPU 1, beside wrk), settles, and both B windows are measured, then it
# detaches and the second A follows. A window measures the service's CPU
# time (utime + stime of all its threads, /proc/PID/stat) and the requests it
# served (its own count, GET /stats); the figure is the CPU time per
# request.
#
# Per pair, the ratio of B's CPU per request to A's; over the pairs, the
# geometric mean of the ratios and its 95 % interval (Student's t on the
# logarithms): the overhead, with an uncertainty that the pairing keeps
# clear of the host's drift. Throughput is given the same way, and the
# watcher's own CPU.
#
# Watchers (MODES):
#   loh       dumpwatch, one rule: loh-size > 1GB for 5s (ShopApi's LOH
#             is tens of MB: allocation ticks only near the threshold,
#             --alloc-ticks near, the default, so none here)
#   all       dumpwatch, a rule of every kind at once: loh-size,
#             loh-alloc-rate > 4GB/s (ShopApi allocates under 1 GB/s of every
#             kind), an exception rule, the p99 of ASP.NET Core's request
#             duration
#   armed     the loh rule with --alloc-ticks always: the cost while a rule
#             is near its threshold (the ticks on all the time)
#   counters  dotnet-counters collect (the NuGet tool), its default
#             counters every second
#   counters-meter  dotnet-counters collect of the instrument the meters
#             rule reads (http.server.request.duration), every second
#   meter-floor  no watcher: a listener inside ShopApi enables the
#             instrument the meters rule reads and does nothing with a
#             measurement (POST /bench/null-listener): what ASP.NET Core's
#             recording of a request costs once anything listens, the floor
#             under any watcher of that instrument
#   gc, ticks, exceptions, meters, runtime-counters
#             dumpwatch with one rule that needs that subscription alone
# Each dumpwatch mode also reports the events and bytes a second its stream
# carried (the journal's stop record over the session's length), and the
# overhead those events explain, derived from the runtime's cost of an event
# (DW_EVENT_COST_US, 0.91 µs from tests/bench/overhead.sh) and of a sample of
# System.Runtime's counters (DW_SAMPLE_COST_US, from tests/bench/sample_cost.sh)
# rather than measured: a figure the host's noise does not move, beside the
# measured one.
#   usage: tests/bench/service_cost.sh [BUILD_DIR] [PAIRS] [WINDOW_S] [MODES...]
#          (20 pairs of 5 s windows, modes loh all counters)
# Figures only, never pass/fail.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
pairs=${2:-20}
win=${3:-5}
shift $(($# > 3 ? 3 : $#))
modes=("$@")
((${#modes[@]})) || modes=(loh all counters)
source "$here/tests/bench/lib.sh"
dw="$build/dumpwatch"
app="$build/apps/ShopApi/ShopApi"
[ -x "$app" ] || { echo "service_cost: $app not built (scripts/build-apps.sh)" >&2; exit 1; }
command -v wrk >/dev/null || { echo "service_cost: needs wrk (scripts/setup.sh installs it)" >&2; exit 1; }
command -v curl >/dev/null && command -v jq >/dev/null || { echo "service_cost: needs curl and jq" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "service_cost: needs 2 CPUs (the service on one, the load on the other)" >&2; exit 1; }
counters_tool=
[[ " ${modes[*]} " != *" counters "* && " ${modes[*]} " != *" counters-meter "* ]] ||
	counters_tool=$(bench_dotnet_tool dotnet-counters)
bench_init dw-service-cost
hz=$(getconf CLK_TCK)
# The runtime's cost of one event in the watched process: the allocation
# ticks' microbenchmark (tests/bench/overhead.sh; docs/benchmarks.md, "With
# the event filter of .NET 10": +211 ms for 230,882 events).
event_us=${DW_EVENT_COST_US:-0.91}
# The cost of one sample of System.Runtime's counters to the process that
# computes and sends it (tests/bench/sample_cost.sh), and how many a second
# each mode's subscription asks for: with allocation ticks near a threshold
# (--alloc-ticks near), every bound_interval_ms of the attach record; with
# --alloc-ticks always, and for a rule on a System.Runtime counter, every
# counter interval (1 s); for the other rules, none. Their events are also
# counted with the others at event_us.
sample_us=${DW_SAMPLE_COST_US:-426}
declare -A samples_a_second=([armed]=1 [runtime-counters]=1)

declare -A rules=(
	[loh]='loh-size > 1GB for 5s'
	[gc]='gc-pause > 100s'
	[ticks]='loh-alloc-rate > 4GB/s for 5s'
	[exceptions]='exception NoSuchException >= 1000 in 1m'
	[meters]='meter Microsoft.AspNetCore.Hosting/http.server.request.duration p99 > 100s for 30s'
	[runtime-counters]='System.Runtime/cpu-usage > 99.9% for 1h'
)
dw_args() { # mode -> dumpwatch's rule options, one per line
	case $1 in
	all) printf -- '--when\n%s\n' "${rules[loh]}" "${rules[ticks]}" "${rules[exceptions]}" "${rules[meters]}" ;;
	armed) printf -- '--when\n%s\n--alloc-ticks\nalways\n' "${rules[loh]}" ;;
	*) printf -- '--when\n%s\n' "${rules[$1]}" ;;
	esac
}

bench_shopapi "$app"
taskset -c 1 wrk -t1 -c32 -d86400s --timeout 10s -s "$here/tests/bench/wrk/shop.lua" "http://127.0.0.1:$port" \
	>"$t/wrk.out" 2>&1 &
wp=$!
pids+=("$wp")

served() { curl -s --max-time 5 "http://127.0.0.1:$port/stats" | jq -r .requests; }
# window: "CPU_TICKS REQUESTS" of the service over win seconds
window() {
	local c0 r0 c1 r1
	c0=$(cpu_ticks "$sp")
	r0=$(served)
	sleep "$win"
	c1=$(cpu_ticks "$sp")
	r1=$(served)
	echo "$((c1 - c0)) $((r1 - r0))"
}

null_listener() { # on: true|false; the measurements it counted so far into $t/floor
	local r
	r=$(curl -sf --max-time 5 -X POST "http://127.0.0.1:$port/bench/null-listener?on=$1") &&
		echo "$r" | jq -e ".on == $1" >/dev/null ||
		{ echo "service_cost: ShopApi's null listener did not turn $1: $r" >&2; exit 1; }
	echo "$r" | jq -r '"\(.measurements) \(.tags)"' >"$t/floor"
}
wp_on= # the watcher's pid (none for meter-floor)
watcher_on() {
	local mode=$1 a
	rm -f "$t/w.out" "$t/journal"
	w_launch=$(date +%s.%N)
	if [ "$mode" = meter-floor ]; then
		null_listener true
		wp_on=
	elif [ "$mode" = counters ] || [ "$mode" = counters-meter ]; then
		a=()
		[ "$mode" = counters ] || a=(--counters 'Microsoft.AspNetCore.Hosting[http.server.request.duration]')
		rm -f "$t/counters.json"
		taskset -c 1 "$counters_tool" collect -p "$sp" "${a[@]}" --refresh-interval 1 --format json -o "$t/counters.json" \
			>"$t/w.out" 2>&1 &
		wp_on=$!
		pids+=("$wp_on")
		for _ in $(seq 200); do [ -s "$t/counters.json" ] && break; sleep 0.05; done
	else
		mapfile -t a < <(dw_args "$mode")
		taskset -c 1 "$dw" --pid "$sp" "${a[@]}" --dump-dir "$t" --journal "$t/journal" >"$t/w.out" 2>&1 &
		wp_on=$!
		pids+=("$wp_on")
		for _ in $(seq 200); do grep -q 'watching pid' "$t/w.out" && break; sleep 0.05; done
		grep -q 'watching pid' "$t/w.out" || { echo "service_cost: dumpwatch did not attach ($mode): $(cat "$t/w.out")" >&2; exit 1; }
	fi
	sleep 2 # the first counter and meter intervals, the GC state
	w_t0=$(date +%s.%N)
	w_c0=$([ -z "$wp_on" ] || cpu_ticks "$wp_on")
}
watcher_off() {
	local mode=$1 w_c1 w_t1
	if [ -z "$wp_on" ]; then
		null_listener false
		echo "$mode 0" >>"$t/watcher_cpu"
		sleep 1
		return
	fi
	w_c1=$(cpu_ticks "$wp_on")
	w_t1=$(date +%s.%N)
	echo "$mode $w_c1 $w_c0 $w_t1 $w_t0" | awk -v hz="$hz" '{ printf "%s %.4f\n", $1, ($2 - $3) / hz / ($4 - $5) }' \
		>>"$t/watcher_cpu"
	# SIGTERM: dotnet-counters, a .NET program without a terminal, ends on
	# it (SIGINT it ignores); dumpwatch detaches on either.
	kill -TERM "$wp_on" 2>/dev/null || true
	for _ in $(seq 100); do kill -0 "$wp_on" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$wp_on" 2>/dev/null || true
	wait "$wp_on" 2>/dev/null || true
	if [[ $mode != counters* ]] && [ -f "$t/journal" ]; then
		local secs
		secs=$(awk -v a="$w_launch" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
		local samples=${samples_a_second[$mode]:-0} bound
		bound=$(grep '"event":"attach"' "$t/journal" | head -1 | jq -r '.bound_interval_ms // empty')
		[ -z "$bound" ] || samples=$(awk -v b="$bound" 'BEGIN { print 1000 / b }')
		grep '"event":"stop"' "$t/journal" | tail -1 | jq -r --arg m "$mode" --arg s "$secs" --arg n "$samples" \
			'"\($m) \(.events) \(.stream_bytes) \($s) \($n)"' >>"$t/streams" || true
		# whether the allocation ticks came on during this attach
		echo "$mode $(grep -c '"event":"ticks".*"on":true' "$t/journal" || true)" >>"$t/ticks"
	fi
	sleep 1
}

echo "ShopApi pid $sp on CPU 0, wrk (32 connections) on CPU 1, warming up ${DW_WARMUP:-60} s"
sleep "${DW_WARMUP:-60}" # the JIT's tiers and the GC's budgets settle
for i in $(seq "$pairs"); do
	for mode in "${modes[@]}"; do
		sleep 1
		a1=$(window)
		watcher_on "$mode"
		b1=$(window)
		b2=$(window)
		watcher_off "$mode"
		a2=$(window)
		echo "$mode $a1 $b1 $b2 $a2" >>"$t/pairs"
	done
done
kill -INT "$wp" 2>/dev/null || true
wait "$wp" 2>/dev/null || true

# stats: lines "x" (log ratios) -> "geo-mean-1 low high n" in percent, 95 %
# interval from Student's t.
stats() {
	awk 'function tq(df) { # two-sided 95 % quantiles of Student t
		if (df <= 1) return 12.71; if (df == 2) return 4.303; if (df == 3) return 3.182; if (df == 4) return 2.776
		if (df == 5) return 2.571; if (df <= 7) return 2.4; if (df <= 10) return 2.26; if (df <= 15) return 2.15
		if (df <= 20) return 2.09; if (df <= 30) return 2.05; if (df <= 60) return 2.01; return 1.98 }
		{ x[NR] = $1; s += $1 } END {
			n = NR; m = s / n; v = 0
			for (i = 1; i <= n; i++) v += (x[i] - m) ^ 2
			sd = n > 1 ? sqrt(v / (n - 1)) : 0; h = tq(n - 1) * sd / sqrt(n)
			printf "%+.2f %% [%+.2f, %+.2f] (n=%d)", (exp(m) - 1) * 100, (exp(m - h) - 1) * 100, (exp(m + h) - 1) * 100, n }'
}

# robust: lines "x" (log ratios) -> the Hodges-Lehmann estimate (the median
# of the pairwise means) and its distribution-free 95 % interval (Wilcoxon's
# signed-rank statistic, normal approximation: 12 pairs or more), in percent.
# The host's noise is heavy-tailed (a neighbour's burst moves a single pair
# by 10 %): an interval on the mean widens with every such pair, this one
# does not, and it assumes only that the noise is symmetric.
robust() {
	awk '{ x[NR] = $1 } END { for (i = 1; i <= NR; i++) for (j = i; j <= NR; j++) print (x[i] + x[j]) / 2 }' |
		sort -g | awk '{ w[NR] = $1 } END {
			m = NR; n = (sqrt(8 * m + 1) - 1) / 2
			c = int(n * (n + 1) / 4 - 1.96 * sqrt(n * (n + 1) * (2 * n + 1) / 24) + 0.5)
			if (c < 1) c = 1
			est = (m % 2) ? w[(m + 1) / 2] : (w[m / 2] + w[m / 2 + 1]) / 2
			printf "%+.2f %% [%+.2f, %+.2f]", (exp(est) - 1) * 100, (exp(w[c]) - 1) * 100, (exp(w[m + 1 - c]) - 1) * 100 }'
}

echo
echo "ShopApi under wrk: $pairs ABBA pairs of ${win} s windows per watcher"
for mode in "${modes[@]}"; do
	# fields: mode cA1 rA1 cB1 rB1 cB2 rB2 cA2 rA2
	awk -v m="$mode" '$1 == m && $3 > 0 && $5 + $7 > 0 && $9 > 0 {
		print log((($4 + $6) / ($5 + $7)) / (($2 + $8) / ($3 + $9))) }' "$t/pairs" >"$t/x"
	cpu=$(stats <"$t/x")
	cpu_robust=$(robust <"$t/x")
	thr=$(awk -v m="$mode" '$1 == m && $3 + $9 > 0 && $5 + $7 > 0 { print log(($5 + $7) / ($3 + $9)) }' "$t/pairs" | stats)
	base=$(awk -v m="$mode" -v hz="$hz" -v w="$win" '$1 == m { c += $2 + $8; r += $3 + $9; k++ } END {
		printf "%.1f us/request, %.0f requests/s", c / hz / r * 1e6, r / (2 * k * w) }' "$t/pairs")
	own=$(awk -v m="$mode" '$1 == m { print $2 }' "$t/watcher_cpu" | median)
	echo "$mode:"
	echo "  CPU per request: $cpu    (off: $base)"
	echo "                   $cpu_robust (Hodges-Lehmann, robust)"
	echo "  throughput:      $thr"
	echo "  the watcher's own CPU: $(awk -v v="$own" 'BEGIN { printf "%.2f %% of a core (median)", v * 100 }')"
	if [ "$mode" = meter-floor ] && read -r n tags <"$t/floor"; then
		echo "  its listener counted $n measurements of the instrument (one a request while on), $tags tags each"
	fi
	if [ -s "$t/streams" ] && grep -q "^$mode " "$t/streams"; then
		awk -v m="$mode" '$1 == m && $4 > 0 { e += $2; b += $3; s += $4 } END {
			if (s > 0) printf "  its stream: %.0f events/s, %.1f KB/s\n", e / s, b / s / 1000 }' "$t/streams"
		# The overhead its stream alone explains: the runtime's cost of an
		# event (from the microbenchmark) times the events a second, over
		# the CPU the service spends a second unwatched.
		ev=$(awk -v m="$mode" '$1 == m && $4 > 0 { e += $2; s += $4 } END { if (s > 0) print e / s }' "$t/streams")
		cps=$(awk -v m="$mode" -v hz="$hz" -v w="$win" '$1 == m { c += $2 + $8; k++ } END { print c / hz / (2 * k * w) }' "$t/pairs")
		n=$(awk -v m="$mode" '$1 == m { print $5 }' "$t/streams" | median)
		[ -z "$ev" ] || awk -v e="$ev" -v u="$event_us" -v c="$cps" -v n="$n" -v su="$sample_us" 'BEGIN {
			printf "  derived from its stream: %+.2f %% (%.0f events/s x %.2f us",
				(e * u + n * su) / 1e6 / c * 100, e, u
			if (n > 0) printf ", and %g System.Runtime samples/s x %.0f us", n, su
			printf ", over %.0f ms of the service'"'"'s CPU a second)\n", c * 1000 }'
		awk -v m="$mode" '$1 == m { n++; if ($2 > 0) on++ } END {
			printf "  allocation ticks started in %d of its %d attaches\n", on, n }' "$t/ticks"
	fi
done
echo "wrk: $(grep -E 'Requests/sec|Non-2xx|errors' "$t/wrk.out" | tr '\n' ' ')"
