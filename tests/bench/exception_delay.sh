#!/usr/bin/env bash
# How long after the throw an exception rule's dump starts: the runtime sends
# ExceptionThrown_V1 through the event stream, so dumpwatch hears of it when
# the stream flushes (within its 100 ms cycle), and createdump starts after
# that; the throwing thread has long moved on. MemSpike throws one
# TimeoutException; dumpwatch watches "exception Timeout*" and takes a
# triage dump. Per run: the exception's timestamp -> the fire
# (exception.thrown_before_fire_ms in the fire record, dumpwatch's clock),
# the fire -> the dump's start (the context's dump.started_unix_ms), and the
# program's own "thrown" time -> the fire (wall clocks, a cross-check).
# MODE idle: nothing else happens in the program; busy: 20 MB/s of garbage.
# Figures only, never pass/fail.
#   usage: tests/bench/exception_delay.sh [BUILD_DIR] [RUNS] [idle|busy]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
runs=${2:-10}
mode=${3:-idle}
dw="$build/dumpwatch"
app="$build/apps/MemSpike/MemSpike"
source "$here/tests/bench/lib.sh"
bench_init dw-exc

for i in $(seq "$runs"); do
	rm -f "$t/j.jsonl" "$t"/*.core "$t"/*.json "$t"/*.svg
	bench_app "$app"
	"$dw" --pid "$ap" --when 'exception Timeout*' --dump-type triage --dump-dir "$t" --journal "$t/j.jsonl" \
		>"$t/dw.out" 2>&1 &
	dp=$!
	pids+=("$dp")
	for _ in $(seq 100); do grep -q 'watching pid' "$t/dw.out" && break; sleep 0.1; done
	[ "$mode" = busy ] && echo "churn 20" >&3
	sleep 0.5
	sleep "0.$(printf %02d $((RANDOM % 100)))"
	echo "throw 1 timeout measured" >&3
	wait "$dp" || true
	fire=$(grep '"event":"fire"' "$t/j.jsonl")
	ctx=$(jq -r 'select(.event == "dump") | .context' "$t/j.jsonl")
	thrown_us=$(sed -n 's/^done throw 1 timeout measured t_us=\([0-9]*\).*/\1/p' "$t/app.out")
	jq -r --argjson thrown "$thrown_us" --slurpfile c "$ctx" \
		'[.exception.thrown_before_fire_ms, ($c[0].dump.started_unix_ms - .fired_unix_us / 1000), (.fired_unix_us - $thrown) / 1000] | @tsv' \
		<<<"$fire" >>"$t/results"
	bench_app_end
done
summary() { # column, label
	cut -f"$1" "$t/results" | sort -g | awk -v l="$2" '
		{ v[NR] = $1 }
		END {
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%-44s median %.1f ms, min %.1f ms, max %.1f ms\n", l, m, v[1], v[NR]
		}'
}
echo "exception -> dump over $runs runs ($mode program):"
summary 1 "thrown (event timestamp) -> fire:"
summary 2 "fire -> createdump started:"
summary 3 "thrown (program's wall clock) -> fire:"
paste "$t/results" | awk -F'\t' '{ print $1 + $2 }' | sort -g | awk '
	{ v[NR] = $1 }
	END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%-44s median %.1f ms, min %.1f ms, max %.1f ms\n", "thrown -> createdump started:", m, v[1], v[NR]
	}'
