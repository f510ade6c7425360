#!/usr/bin/env bash
# The guard's Prometheus metrics (docs/metrics.md) on a real .NET process:
# GET /metrics on --metrics-listen and the --metrics-file textfile both pass
# promtool; the process's series carry pid and process; the LOH size agrees
# with what `dumpwatch counters` reads of the same process; the dumps counter
# counts the dump a rule takes; the textfile is replaced whole (a new inode,
# no temporary left) and written a last time at the stop; a slow client does
# not hold the server; other paths are 404, other methods 405; a malformed
# address, a taken port and a directory others can write are refused at
# start. Hostile process names cannot be tried here (the name comes from the
# entry assembly, which no file name changes): test_expo covers escaping.
source "$(dirname "$0")/lib.sh"

command -v promtool >/dev/null || skip "promtool not installed (Debian's prometheus package)"
command -v curl >/dev/null || skip "curl not installed"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
URL="http://127.0.0.1:$PORT/metrics"
TF="$T/textfile"
mkdir -m 0755 "$TF"
MFILE="$TF/dumpwatch.prom"

# scrape FILE: the page into FILE, its headers into FILE.h; fails the test
# unless it is a 200 that promtool accepts.
scrape() {
	curl -sS --max-time 5 -D "$1.h" -o "$1" "$URL" || fail "scrape of $URL failed"
	grep_q '^HTTP/1.1 200' "$1.h" || fail "scrape: $(head -1 "$1.h")"
	grep_q -i '^Content-Type: text/plain; version=0.0.4; charset=utf-8' "$1.h" || fail "scrape: $(cat "$1.h")"
	promtool check metrics <"$1" >"$1.promtool" 2>&1 || fail "promtool: $(cat "$1.promtool")"
}

# value FILE NAME LABELS: the value of the sample NAME{LABELS...}, or "".
value() { grep -F "$2{$3" "$1" | awk '{ print $NF }' | head -1; }

# Refused at start, each with one line and the guard's start failure codes.
expect_refusal() {
	local want=$1 text=$2
	shift 2
	set +e
	"$DUMPWATCH" --rules-dir "$RULES" --dump-dir "$DUMPS" "$@" >"$T/bad.out" 2>&1
	local rc=$?
	set -e
	[ "$rc" -eq "$want" ] || fail "$*: exit $rc, expected $want: $(cat "$T/bad.out")"
	grep_q -F -- "$text" "$T/bad.out" || fail "$*: $(cat "$T/bad.out")"
}
expect_refusal 1 '--metrics-listen "localhost:x": write PORT' --metrics-listen localhost:x
expect_refusal 1 "--metrics-interval takes a duration from 1s to 1h" --metrics-file "$MFILE" --metrics-interval 10ms
expect_refusal 1 "--metrics-file takes an absolute path" --metrics-file rel.prom
set +e
"$DUMPWATCH" --pid 1 --when 'loh-size > 1GB' --metrics-listen "$PORT" >"$T/bad.out" 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] && grep_q -F "are for the guard (--rules-dir)" "$T/bad.out" || fail "watch with metrics: exit $rc, $(cat "$T/bad.out")"
mkdir -m 0777 "$T/open"
expect_refusal 1 "refused: the directory $T/open" --metrics-file "$T/open/x.prom"
python3 -c 'import socket, time, sys; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(30)' "$PORT" &
holder=$!
PIDS+=("$holder")
wait_for "ss -Hltn 'sport = :$PORT' | grep -q LISTEN" 10 || fail "the port holder did not listen"
expect_refusal 4 "--metrics-listen 127.0.0.1:$PORT: cannot listen there: Address already in use" \
	--metrics-listen "127.0.0.1:$PORT"
kill "$holder"
wait "$holder" 2>/dev/null || true

: >"$T/dw.out"
A="metrics$$"
start_tagged "$A"
pid=${APP_PIDS[$A]}
cat >"$RULES/loh.json" <<JSON
{ "rules": [ { "name": "loh-big", "process": { "cmdline": "*--tag $A" },
               "when": "loh-size > 250MB", "dump": { "type": "triage" } } ] }
JSON
start_guard --metrics-listen "127.0.0.1:$PORT" --metrics-file "$MFILE" --metrics-interval 1s
wait_journal attach 1 15 "\"pid\":$pid" || fail "not attached"

# 100 MB held on the LOH, then a full GC: the LOH size is exact.
tagged_cmd "$A" "loh 100"
tagged_cmd "$A" "gc 2"
wait_tagged_done "$A" "gc 2" 10
labels="pid=\"$pid\",process=\"MemSpike\""
wait_for "curl -s --max-time 5 '$URL' | awk '/^dotnet_gc_loh_size_bytes\\{/ && \$NF > 100e6 { f = 1 } END { exit !f }'" 15 ||
	fail "the LOH size never reached 100 MB: $(curl -s "$URL" | grep loh_size)"
# A client that connects and says nothing does not hold the server.
exec {slow}<>"/dev/tcp/127.0.0.1/$PORT"
scrape "$T/p1"
exec {slow}>&-
loh=$(value "$T/p1" dotnet_gc_loh_size_bytes "$labels")
[ -n "$loh" ] || fail "no dotnet_gc_loh_size_bytes{$labels}: $(grep loh "$T/p1")"
grep_q -F "dumpwatch_process_attached{$labels} 1" "$T/p1" || fail "process not shown attached"
grep_q -F "dotnet_eventcounter{$labels,provider=\"System.Runtime\",counter=\"cpu-usage\"}" "$T/p1" ||
	wait_for "curl -s '$URL' | grep -qF 'counter=\"cpu-usage\"'" 10 ||
	fail "System.Runtime counters not subscribed although no rule reads them"
grep_q '^dumpwatch_sessions_attached 1$' "$T/p1" || fail "sessions attached: $(grep sessions "$T/p1")"
grep_q '^dumpwatch_dumps_total{result="taken"} 0$' "$T/p1" || fail "dumps before any: $(grep dumps_total "$T/p1")"

# The same figure from `dumpwatch counters` (its own session): within 1 %.
"$DUMPWATCH" counters --pid "$pid" --format json --duration 3s >"$T/counters.jsonl" 2>"$T/counters.err" ||
	fail "counters: $(cat "$T/counters.err")"
cloh=$(tail -1 "$T/counters.jsonl" | jq -r '.metrics["loh-size"]')
awk -v a="$loh" -v b="$cloh" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= 0.01 * b) }' ||
	fail "LOH: metrics say $loh, counters say $cloh"
echo "LOH size: /metrics $loh, dumpwatch counters $cloh"

# The textfile: valid, and replaced by rename.
wait_for "[ -s '$MFILE' ]" 5 || fail "no $MFILE"
promtool check metrics <"$MFILE" >"$T/tf.promtool" 2>&1 || fail "textfile: $(cat "$T/tf.promtool")"
[ "$(stat -c %a "$MFILE")" = 644 ] || fail "textfile mode $(stat -c %a "$MFILE")"
ino=$(stat -c %i "$MFILE")
wait_for "[ \$(stat -c %i '$MFILE') != $ino ]" 5 || fail "the textfile was not replaced within 5 s"

# 200 MB more: 300 MB on the LOH, the rule dumps, the counter counts it.
tagged_cmd "$A" "loh 200"
wait_journal dump 1 60 "\"pid\":$pid" || fail "no dump"
scrape "$T/p2"
grep_q '^dumpwatch_dumps_total{result="taken"} 1$' "$T/p2" || fail "dumps after one: $(grep dumps_total "$T/p2")"
grep_q -F "dumpwatch_process_dumps_total{$labels} 1" "$T/p2" || fail "process dumps: $(grep process_dumps "$T/p2")"
awk -v v="$(value "$T/p2" dotnet_gc_loh_size_bytes "$labels")" 'BEGIN { exit !(v > 250e6) }' ||
	fail "LOH after the spike: $(grep loh_size "$T/p2")"
wait_for "grep -q '^dumpwatch_dumps_total{result=\"taken\"} 1$' '$MFILE'" 5 || fail "textfile without the dump"

# Other paths and methods.
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/")" = 404 ] || fail "/ is not 404"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x "$URL")" = 405 ] || fail "POST is not 405"
[ "$(curl -s -o /dev/null -w '%{http_code}' -I "$URL")" = 200 ] || fail "HEAD is not 200"

tagged_cmd "$A" "exit"
wait_journal detach 1 10 "\"pid\":$pid" || fail "exit not journaled"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC after SIGTERM"
promtool check metrics <"$MFILE" >"$T/tf.promtool" 2>&1 || fail "last textfile: $(cat "$T/tf.promtool")"
[ -z "$(find "$TF" -name '*.tmp.*')" ] || fail "temporary files left: $(ls -a "$TF")"

# Written at the start and at the stop, whatever the interval.
rm -f "$MFILE"
start_guard --metrics-file "$MFILE" --metrics-interval 1h
wait_for "[ -s '$MFILE' ]" 5 || fail "no textfile at the start"
ino=$(stat -c %i "$MFILE")
stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC after SIGTERM"
[ "$(stat -c %i "$MFILE")" != "$ino" ] || fail "the textfile was not written again at the stop"
promtool check metrics <"$MFILE" >"$T/tf.promtool" 2>&1 || fail "last textfile: $(cat "$T/tf.promtool")"
echo "PASS: /metrics and the textfile pass promtool, agree with counters, count the dump"
