#!/usr/bin/env bash
# SIGTERM while a dump is being written: with --stop-timeout 0 the dump is
# abandoned, createdump killed, no partial file left, the journal says so, and
# the daemon exits 0 within seconds. With the default timeout a dump that
# finishes in time is kept whole.
source "$(dirname "$0")/lib.sh"

A="term$$"
start_tagged "$A"
P=${APP_PIDS[$A]}
# A heap dump of a process holding 300 MB takes long enough to be interrupted.
cat >"$RULES/big.json" <<JSON
{ "name": "big", "process": { "cmdline": "*--tag $A" }, "when": "loh-size > 200MB",
  "dump": { "type": "withheap" }, "limits": { "max-dumps": 0, "cooldown": "1s" } }
JSON
start_guard --stop-timeout 0
wait_journal attach 1 15 "\"pid\":$P" || fail "not attached"
tagged_cmd "$A" "loh 300"
wait_for "grep -q 'dumping pid $P' '$T/dw.out'" 30 || fail "no dump started"
start=$SECONDS
kill -TERM "$DW_PID"
wait_dw 10
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC after SIGTERM during a dump"
echo "stopped in $((SECONDS - start)) s"
sleep 0.5 # a killed createdump must not leave a file behind later either
[ "$(count_partials)" -eq 0 ] || fail "partial dump left: $(ls -a "$DUMPS")"
if [ "$(journal_count dump)" -eq 0 ]; then
	[ "$(count_dumps)" -eq 0 ] || fail "a dump file without a dump record"
	grep '"event":"dump-failed"' "$JOURNAL" | grep_q -F 'partial file was removed' ||
		fail "abandoned dump not journaled"
fi
tail -1 "$JOURNAL" | grep_q '"event":"stop"' || fail "stop is not the last record"
kill -0 "$P" || fail "the target died"

# Again with time to finish: the dump completes and is kept.
tagged_cmd "$A" "release"
wait_tagged_done "$A" "release" 20
start_guard --stop-timeout 60s
wait_journal attach 2 15 "\"pid\":$P" || fail "not attached again"
tagged_cmd "$A" "loh 300"
wait_for "[ \$(grep -c 'dumping pid $P' '$T/dw.out') -ge 2 ]" 30 || fail "no second dump started"
kill -TERM "$DW_PID"
wait_dw 60
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC"
[ "$(count_partials)" -eq 0 ] || fail "partial dump left"
[ "$(journal_count dump)" -ge 1 ] || fail "the dump given time to finish was not kept"
for core in "$DUMPS"/*.core; do
	"$DW_CORECHECK" "$core" "$P" >/dev/null || fail "bad core $core"
	check_dump "$core" "$P" 200000000
done
echo "PASS: SIGTERM during a dump leaves no partial file; exit 0"
