#!/usr/bin/env bash
# Slow peers beside one real spike: how much a few slow runtimes cost the
# guard's service of a real one. One guard (dumpwatch --rules-dir) with one
# rule file whose two rules match FAKES fake runtimes (tests/tools/fakert.c,
# --mode idle --delay-ms DELAY_MS: every request answered only DELAY_MS after
# it was read) by their command line, and one real MemSpike by its tag; both
# rules say `loh-size > 100MB` with a triage dump. SPIKE_AFTER_MS after the
# moment below, the real process takes 150 MB of large objects, holds them
# 3 s and releases them (`spike 150 3000`). Three scenarios:
#   slow   the fakes are started, then the real process; the spike comes
#          SPIKE_AFTER_MS after the real process's socket appeared
#   late   the real process is started and attached, then the fakes; the
#          spike comes SPIKE_AFTER_MS after the fakes are listening
#   plain  no fakes (the baseline); as slow otherwise
# For each run:
#   attach   the delay from the real process's socket (the file's ctime) and
#            from its start to its `attach` journal record
#   fire     from the spike command to the `fire` record (`fired_unix_us`),
#            and from the allocation that crossed 100 MB (MemSpike's `mark`);
#            whether it came only after the release (the dump then shows a
#            heap without the spike)
#   dump     whether a `dump` record of the real process followed
#   stop     SIGTERM to the guard's exit, every peer still alive
# Each run has a fresh guard and journal. Figures only, never pass/fail;
# RUNS runs of each scenario, then min / median / max.
#   usage: tests/bench/slowpeers.sh [--no-slow|--slow-only] [BUILD_DIR] [RUNS] [DUMPWATCH]
#   --no-slow: only plain; --slow-only: only slow and late.
#   DUMPWATCH: the binary to measure (default BUILD_DIR/dumpwatch).
#   FAKES (3), DELAY_MS (2900) and SPIKE_AFTER_MS (1000) from the environment;
#   WAIT_S (60): how long a run waits for the attach, the fire and the dump.
set -euo pipefail
modes="slow late plain"
case "${1:-}" in
--no-slow) modes=plain; shift ;;
--slow-only) modes="slow late"; shift ;;
esac
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
runs=${2:-3}
dw=${3:-$build/dumpwatch}
fakes=${FAKES:-3}
delay=${DELAY_MS:-2900}
spike_after=${SPIKE_AFTER_MS:-1000}
wait_s=${WAIT_S:-60}
app="$build/apps/MemSpike/MemSpike"
fakert="$build/dw_fakert"
for f in "$dw" "$app" "$fakert"; do [ -x "$f" ] || { echo "slowpeers: $f not built (scripts/test.sh -R none)" >&2; exit 1; }; done
command -v jq >/dev/null || { echo "slowpeers: needs jq (scripts/setup.sh)" >&2; exit 1; }

base=$(mktemp -d /tmp/dw-slowpeers.XXXXXX)
chmod 0755 "$base"
pids=()  # everything started, killed by pid at exit
socks=() # the sockets of what was started: a killed runtime leaves its socket behind
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	for s in "${socks[@]}"; do rm -f "$s"; done
	rm -rf "$base"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now_ms() { date +%s%3N; }
now_us() { date +%s%6N; }
# ms since the epoch of a journal time "2026-11-22T10:58:01.123Z"
ms_of() { date -u -d "$1" +%s%3N; }
# jrec EVENT PID FIELD: FIELD of the first EVENT record of PID, or nothing
# (a line still being written is skipped).
jrec() {
	jq -R -r --arg e "$1" --argjson p "$2" --arg f "$3" \
		'fromjson? | select(.event == $e and .pid == $p) | .[$f] // empty' "$j" 2>/dev/null | head -1
}
# wait_until SECONDS CONDITION: polls every 50 ms; 1 on timeout.
wait_until() {
	local deadline=$(($(now_ms) + $1 * 1000))
	until eval "$2"; do
		(($(now_ms) < deadline)) || return 1
		sleep 0.05
	done
}
# socket_of PID: its diagnostics socket in /tmp, named by its start time (a
# stale socket of an earlier process with the same pid is another name), or
# nothing while there is none.
socket_of() {
	local s
	s="/tmp/dotnet-diagnostic-$1-$(awk '{print $22}' "/proc/$1/stat" 2>/dev/null || echo 0)-socket"
	[ -S "$s" ] && echo "$s" || true
}

# start_fakes TAG DIR: FAKES fakes, each listening before the next starts.
start_fakes() {
	local i fp
	for i in $(seq "$fakes"); do
		"$fakert" --mode idle --delay-ms "$delay" --entry SlowPeer --cmdline "slowpeer-$1-$i" \
			</dev/null >"$2/fake$i.out" 2>&1 &
		fp=$!
		pids+=("$fp")
		wait_until 10 "grep -q ready '$2/fake$i.out'" || { echo "fake $i did not start"; exit 1; }
		socks+=("$(socket_of "$fp")")
	done
}

# run_once MODE N: one guard, one real process and its spike, FAKES fakes
# (slow: before the real process; late: after its attach) or none (plain);
# appends "attach_sock attach_start fire_cmd fire_cross dumped stop_ms
# fired_after_release" to $base/MODE (- for what did not happen).
run_once() {
	local mode=$1 n=$2 t="$base/$1-$2" tag="sp$$-$1-$2" dp ap fd sock created started moment
	local j="$t/j.jsonl"
	mkdir -p "$t/rules" "$t/dumps"
	cat >"$t/rules/r.json" <<JSON
{ "rules": [
  { "name": "slow-peer", "process": { "cmdline": "*slowpeer-$tag*" }, "when": "loh-size > 100MB",
    "dump": { "type": "triage" } },
  { "name": "real-loh", "process": { "cmdline": "*--tag real-$tag" }, "when": "loh-size > 100MB",
    "dump": { "type": "triage" } } ] }
JSON
	"$dw" -v --rules-dir "$t/rules" --dump-dir "$t/dumps" --journal "$j" >"$t/dw.out" 2>&1 &
	dp=$!
	pids+=("$dp")
	wait_until 15 "grep -qs guarding '$t/dw.out'" || { echo "guard did not start:"; cat "$t/dw.out"; exit 1; }

	[ "$mode" = slow ] && start_fakes "$tag" "$t"
	mkfifo "$t/cmd"
	exec {fd}<>"$t/cmd"
	started=$(now_ms)
	"$app" --tag "real-$tag" <"$t/cmd" >"$t/app.out" 2>&1 &
	ap=$!
	pids+=("$ap")
	wait_until 20 "[ -n \"\$(socket_of $ap)\" ] && grep -q ready '$t/app.out'" || { echo "MemSpike did not start"; exit 1; }
	sock=$(socket_of "$ap")
	socks+=("$sock")
	created=$(stat -c %.3Z "$sock" | tr -d .)
	moment=$created
	if [ "$mode" = late ]; then
		wait_until "$wait_s" "[ -n \"\$(jrec attach $ap time)\" ]" || true
		start_fakes "$tag" "$t"
		moment=$(now_ms)
	fi

	# The spike, SPIKE_AFTER_MS after that moment, attached or not.
	local wake=$((moment + spike_after - $(now_ms)))
	((wake > 0)) && sleep "$((wake / 1000)).$(printf %03d $((wake % 1000)))"
	local attached_then=no
	[ -n "$(jrec attach "$ap" time)" ] && attached_then=yes
	local cmd_us
	cmd_us=$(now_us)
	printf 'mark 100\nspike 150 3000\n' >&"$fd"

	# The fire, or none: a session that started after the release sees no
	# LOH to speak of. Wait until it comes, or until the guard has had its
	# say on everything (the real process attached, each fake attached or
	# failed, the spike over) and 5 s more: events reach the guard within
	# ~100 ms of the runtime's flush.
	local at fired cross released late_fire=no dumped=no a_sock=- a_start=- f_cmd=- f_cross=- stop=- expect=0 settled=0
	[ "$mode" != plain ] && expect=$fakes
	local deadline=$(($(now_ms) + wait_s * 1000))
	while (($(now_ms) < deadline)) && [ -z "$(jrec fire "$ap" time)" ]; do
		if ((settled == 0)) && [ -n "$(jrec attach "$ap" time)" ] && grep -q 'done spike' "$t/app.out" &&
			(($(jq -R -r --argjson p "$ap" 'fromjson? | select((.event == "attach" or .event == "attach-failed")
				and .pid != $p) | .pid' "$j" 2>/dev/null | sort -u | wc -l) >= expect)); then
			settled=$(now_ms)
		fi
		((settled > 0 && $(now_ms) > settled + 5000)) && break
		sleep 0.1
	done
	at=$(jrec attach "$ap" time)
	if [ -n "$at" ]; then
		at=$(ms_of "$at")
		a_sock=$((at - created))
		a_start=$((at - started))
	fi
	fired=$(jrec fire "$ap" fired_unix_us)
	if [ -n "$fired" ]; then
		f_cmd=$(((fired - cmd_us) / 1000))
		cross=$(sed -n 's/^crossed .*t_us=\([0-9]*\).*/\1/p' "$t/app.out" | head -1)
		[ -n "$cross" ] && f_cross=$(((fired - cross) / 1000))
		# "done spike" is printed after the release.
		released=$(sed -n 's/^done spike .*t_us=\([0-9]*\).*/\1/p' "$t/app.out" | head -1)
		[ -n "$released" ] && ((fired > released)) && late_fire=yes
		wait_until "$wait_s" "[ -n \"\$(jrec dump $ap time)\$(jrec dump-failed $ap time)\" ]" || true
		[ -n "$(jrec dump "$ap" time)" ] && dumped=yes
	fi

	# Stop with every peer alive: the guard ends each session.
	local s0 died=
	s0=$(now_ms)
	if ! kill -TERM "$dp" 2>/dev/null; then
		died="; the guard was gone before the stop"
	elif wait_until 60 "! kill -0 $dp 2>/dev/null"; then
		stop=$(($(now_ms) - s0))
	fi
	kill -9 "$dp" 2>/dev/null || true
	wait "$dp" 2>/dev/null || true
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	for s in "${socks[@]}"; do rm -f "$s"; done
	pids=()
	socks=()
	exec {fd}>&-

	local fails peers fire_text="no fire"
	fails=$(jq -R -r 'fromjson? | select(.event | test("failed")) | .event' "$j" 2>/dev/null | sort | uniq -c |
		awk '{printf "%s%s %s", sep, $1, $2; sep=", "}')
	peers=$(jq -R -r --argjson p "$ap" 'fromjson? | select(.event == "attach" and .pid != $p) | .pid' "$j" 2>/dev/null |
		sort -u | wc -l)
	[ "$f_cmd" != - ] && fire_text="fire $f_cmd ms after the command ($f_cross after the crossing)"
	[ "$late_fire" = yes ] && fire_text="$fire_text, after the release"
	printf '%-5s run %d: attach %s ms after the socket (%s after the start); spike sent %d ms after the socket' \
		"$mode" "$n" "$a_sock" "$a_start" "$((cmd_us / 1000 - created))"
	[ "$mode" = late ] && printf ', %d ms after the fakes listened' "$((cmd_us / 1000 - moment))"
	printf ' (attached then: %s); %s; dumped: %s; stop %s ms; fakes attached: %d%s%s\n' \
		"$attached_then" "$fire_text" "$dumped" "$stop" "$peers" "${fails:+; $fails}" "$died"
	echo "$a_sock $a_start $f_cmd $f_cross $dumped $stop $late_fire" >>"$base/$mode"
}

# stats FILE COLUMN WHAT: "min / median / max" of the numbers in COLUMN (-
# is left out), and how many of the runs had one ("N of RUNS WHAT").
stats() {
	awk -v c="$2" '$c != "-" {print $c}' "$1" | sort -n | awk -v runs="$runs" -v what="$3" '
		{ v[NR] = $1 }
		END {
			if (NR == 0) { printf "none (0 of %d %s)\n", runs, what; exit }
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "min %d / median %d / max %d ms (%d of %d %s)\n", v[1], m, v[NR], NR, runs, what
		}'
}

echo "slow peers: $fakes fakes answering every request after $delay ms beside one real MemSpike; spike" \
	"(150 MB of LOH held 3 s) $spike_after ms after its socket appeared (late: after the fakes listened); $runs runs each"
for n in $(seq "$runs"); do
	for m in $modes; do run_once "$m" "$n"; done
done
echo
for m in $modes; do
	f="$base/$m"
	case $m in
	slow) label="slow: $fakes slow fakes started before the real process" ;;
	late) label="late: $fakes slow fakes started after the real process was attached" ;;
	*) label="plain: no fakes" ;;
	esac
	echo "$label ($runs runs):"
	echo "  socket -> attach:           $(stats "$f" 1 attached)"
	echo "  start -> attach:            $(stats "$f" 2 attached)"
	echo "  spike command -> fire:      $(stats "$f" 3 fired)"
	echo "  LOH crossed 100 MB -> fire: $(stats "$f" 4 fired)"
	echo "  fired after the release:    $(awk '$7 == "yes"' "$f" | wc -l) of $runs"
	echo "  dumped:                     $(awk '$5 == "yes"' "$f" | wc -l) of $runs"
	echo "  SIGTERM -> guard exit:      $(stats "$f" 6 "exited within 60 s")"
done
