#!/usr/bin/env bash
# Many real .NET processes under one guard: COUNT MemSpike processes (idle:
# `--script "sleep 600000"`), each tagged, are started as fast as the shell
# can fork them under one guard (dumpwatch --rules-dir) whose one rule matches
# the tag (`loh-size > 50GB`, never met: the rule only makes the guard attach).
# Figures, never pass/fail:
#   attach     for each process, from the creation of its diagnostics socket
#              (the file's ctime) to its `attach` journal record: median,
#              90th percentile, max; and the time until the last one
#   guard      RSS (VmRSS, VmHWM from /proc/PID/status), open descriptors and
#              CPU (utime + stime from /proc/PID/stat) over the start-up, over
#              HOLD seconds guarding them all idle, over the stop, and in all
#   stop       every process is sent SIGTERM; each should get a `detach`
#              record with reason "exited", and the guard should still run
#   usage: tests/bench/many.sh [BUILD_DIR] [COUNT] [DUMPWATCH]
#   COUNT: 200 by default. DUMPWATCH: the binary to measure (default
#   BUILD_DIR/dumpwatch). HOLD (10 s) and WAIT_S (300 s: how long to wait for
#   sockets, attaches and detaches) from the environment; WHEN (the rule's
#   condition, default "loh-size > 50GB") and DW_ARGS (more options for the
#   guard, e.g. "--proc-interval 10ms") too.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
count=${2:-200}
dw=${3:-$build/dumpwatch}
hold=${HOLD:-10}
wait_s=${WAIT_S:-300}
when=${WHEN:-loh-size > 50GB}
read -r -a dw_args <<<"${DW_ARGS:-}"
app="$build/apps/MemSpike/MemSpike"
for f in "$dw" "$app"; do [ -x "$f" ] || { echo "many: $f not built (scripts/test.sh -R none)" >&2; exit 1; }; done
command -v jq >/dev/null || { echo "many: needs jq (scripts/setup.sh)" >&2; exit 1; }

t=$(mktemp -d /tmp/dw-many.XXXXXX)
chmod 0755 "$t"
j="$t/j.jsonl"
dp=
apps=() # the MemSpike pids
cleanup() {
	for p in "${apps[@]}" $dp; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${apps[@]}" $dp; do wait "$p" 2>/dev/null || true; done
	# A runtime ended by a signal leaves its socket behind: remove ours,
	# by their exact names (pid and start time).
	if [ -s "$t/pids" ]; then
		awk '{print $2}' "$t/pids" | while read -r s; do rm -f "$s"; done
	fi
	rm -rf "$t"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now_ms() { date +%s%3N; }
# guard_up WHEN: stops the benchmark, saying so, if the guard has exited.
guard_up() {
	kill -0 "$dp" 2>/dev/null && return 0
	echo "many: the guard exited $1; its last words:"
	tail -20 "$t/dw.out"
	exit 1
}
hz=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$dp/stat"; }
# cpu_text TICKS MS: "S s = P % of one core"
cpu_text() { awk -v c="$1" -v hz="$hz" -v ms="$2" 'BEGIN {printf "%.2f s = %.1f %% of one core over %.1f s", c / hz, 100 * c / hz / (ms / 1000), ms / 1000}'; }
mem_text() {
	echo "VmRSS $(awk '/^VmRSS/ {print $2}' "/proc/$dp/status") KiB, VmHWM $(awk '/^VmHWM/ {print $2}' "/proc/$dp/status") KiB," \
		"$(find "/proc/$dp/fd" -mindepth 1 -maxdepth 1 | wc -l) open descriptors"
}
# Journal records of our processes, "pid ms" (a line still being written is
# skipped): records EVENT [jq condition].
records() {
	jq -R -r --arg e "$1" "fromjson? | select(.event == \$e ${2:+and $2}) |
		\"\\(.pid) \\((.time[0:19] + \"Z\" | fromdateiso8601) * 1000 + (.time[20:23] | tonumber))\"" "$j" 2>/dev/null |
		awk 'NR == FNR {ours[$1] = 1; next} ($1 in ours) && !seen[$1]++' "$t/pids" -
}
# sock_path PID: the one diagnostics socket its runtime creates, named by its
# start time (a stale socket of an earlier process with the same pid is
# another name).
sock_path() { echo "/tmp/dotnet-diagnostic-$1-$(awk '{print $22}' "/proc/$1/stat" 2>/dev/null || echo 0)-socket"; }
# sockets: "pid ctime_ms path" of our processes' sockets present, into
# $t/sockets.
sockets() {
	awk '{print $2}' "$t/pids" | xargs stat -c '%n %.3Z' 2>/dev/null |
		awk '{ split($1, f, "-"); c = $2; sub(/\./, "", c); print f[3], c, $1 }' >"$t/sockets.new" || true
	mv "$t/sockets.new" "$t/sockets"
}
# wait_until SECONDS CONDITION: polls every 200 ms; 1 on timeout.
wait_until() {
	local deadline=$(($(now_ms) + $1 * 1000))
	until eval "$2"; do
		(($(now_ms) < deadline)) || return 1
		sleep 0.2
	done
}
# pct FILE P: the P-th percentile (nearest rank) of the numbers in FILE, one a line.
pct() { sort -n "$1" | awk -v p="$2" '{v[NR] = $1} END {r = int((p * NR + 99) / 100); if (r < 1) r = 1; print v[r]}'; }

mkdir "$t/rules" "$t/dumps"
tag="many$$"
cat >"$t/rules/r.json" <<JSON
{ "name": "many", "process": { "cmdline": "*--tag $tag-*" }, "when": "$when" }
JSON
"$dw" --rules-dir "$t/rules" --dump-dir "$t/dumps" --journal "$j" "${dw_args[@]}" >"$t/dw.out" 2>&1 &
dp=$!
wait_until 15 "grep -qs guarding '$t/dw.out'" || { echo "many: the guard did not start:"; cat "$t/dw.out"; exit 1; }
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "guard started: $(mem_text)"

# Start-up: all COUNT at once.
: >"$t/pids"
cpu0=$(cpu_ticks)
w0=$(now_ms)
for i in $(seq "$count"); do
	"$app" --script "sleep 600000" --tag "$tag-$i" </dev/null >/dev/null 2>&1 &
	apps+=("$!")
done
w_launched=$(now_ms)
for p in "${apps[@]}"; do echo "$p $(sock_path "$p")"; done >"$t/pids"
echo "started $count MemSpike processes in $((w_launched - w0)) ms"
wait_until "$wait_s" 'sockets; [ "$(wc -l <"$t/sockets")" -ge "$count" ]' || true
n_sock=$(wc -l <"$t/sockets")
w_sockets=$(now_ms)
echo "$n_sock of $count diagnostics sockets present $((w_sockets - w0)) ms after the first start"
wait_until "$wait_s" '[ "$(records attach | wc -l)" -ge "$n_sock" ]' || true
w_attached=$(now_ms)
guard_up "during the start-up"
cpu_attached=$(cpu_ticks)
sockets # the last ones, if any appeared late
records attach >"$t/attach"
n_att=$(wc -l <"$t/attach")
awk 'NR == FNR {c[$1] = $2; next} ($1 in c) {print $2 - c[$1]}' "$t/sockets" "$t/attach" >"$t/delays"
last=$(sort -k2,2n "$t/attach" | tail -1 | awk '{print $2}')
echo
echo "attach: $n_att of $count processes attached (of $n_sock with a socket);" \
	"$(records attach-failed | wc -l) with an attach-failed record"
if [ -s "$t/delays" ]; then
	echo "  socket created -> attached: median $(pct "$t/delays" 50) ms, 90th percentile $(pct "$t/delays" 90) ms," \
		"min $(pct "$t/delays" 0) ms, max $(pct "$t/delays" 100) ms"
	echo "  first start -> last attach: $((last - w0)) ms"
fi
echo "  guard CPU over the start-up: $(cpu_text $((cpu_attached - cpu0)) $((w_attached - w0)))"
echo "  guard after the start-up: $(mem_text)"

# Guarding them all, idle (a background sleep: a signal to the script ends it at once).
sleep "$hold" &
wait $!
w_held=$(now_ms)
guard_up "while guarding $n_att idle processes"
cpu_held=$(cpu_ticks)
echo "guarding $n_att idle processes for $hold s: CPU $(cpu_text $((cpu_held - cpu_attached)) $((w_held - w_attached)))"
echo "  guard: $(mem_text)"
# What the dump contexts' histories hold (the guard's status, when it has it).
if hb=$("$dw" status --json --state-dir "$t" 2>/dev/null | jq -r '.history_bytes // empty') && [ -n "$hb" ]; then
	echo "  history of the dump contexts: $hb bytes, $((hb / (n_att > 0 ? n_att : 1))) per process"
fi

# Stop: SIGTERM to every process, then the detach records.
w_stop=$(now_ms)
for p in "${apps[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
gone() { local p; for p in "${apps[@]}"; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
wait_until 60 gone || echo "  (some processes still ran 60 s after SIGTERM: killed)"
for p in "${apps[@]}"; do kill -9 "$p" 2>/dev/null || true; done
for p in "${apps[@]}"; do wait "$p" 2>/dev/null || true; done
w_exited=$(now_ms)
wait_until 60 '[ "$(records detach | wc -l)" -ge "$n_att" ]' || true
w_detached=$(now_ms)
cpu_detached=$(cpu_ticks)
records detach '.reason == "exited"' >"$t/detach"
n_det=$(wc -l <"$t/detach")
other=$(jq -R -r 'fromjson? | select(.event == "detach" and .reason != "exited") | .reason' "$j" 2>/dev/null |
	sort | uniq -c | awk '{r = $1 "x " $2; for (i = 3; i <= NF; i++) r = r " " $i; printf "%s%s", s, r; s = ", "}')
missing=$(awk 'NR == FNR {d[$1] = 1; next} !($1 in d) {printf "%s ", $1}' "$t/detach" "$t/attach" | head -c 200)
alive=no
kill -0 "$dp" 2>/dev/null && alive=yes
last_det=$(sort -k2,2n "$t/detach" | tail -1 | awk '{print $2}')
echo
echo "stop: SIGTERM to $count processes; all exited $((w_exited - w_stop)) ms later"
every=no
[ "$n_det" -eq "$count" ] && [ "$n_att" -eq "$count" ] && every=yes
echo "  detach records with reason exited: $n_det of $n_att attached (every one of $count: $every)${other:+;" \
	"other detach reasons: $other}${missing:+; no detach for pids $missing}"
[ -n "$last_det" ] && echo "  SIGTERM -> last detach record: $((last_det - w_stop)) ms"
echo "  guard still running: $alive"
if [ "$alive" = yes ]; then
	echo "  guard CPU over the stop: $(cpu_text $((cpu_detached - cpu_held)) $((w_detached - w_held)))"
	echo "  guard after the stop: $(mem_text)"
	echo "  guard CPU over the whole run: $(cpu_text $((cpu_detached - cpu0)) $((w_detached - w0)))"
	kill -TERM "$dp"
	wait_until 30 "! kill -0 $dp 2>/dev/null" || echo "  guard still running 30 s after SIGTERM"
fi
fails=$(jq -R -r 'fromjson? | select(.event | test("failed|paused")) | .event' "$j" 2>/dev/null | sort | uniq -c |
	awk '{printf "%s%s %s", s, $1, $2; s = ", "}')
echo "  journal: $(wc -l <"$j") records${fails:+; $fails}"
