#!/usr/bin/env bash
# (b) The threshold is never reached: no dump. (e) The target exits while
# watched: dumpwatch exits 0 with a message and journals the detach.
source "$(dirname "$0")/lib.sh"
start_app
start_dw --pid "$APP_PID" --when 'loh-size > 2000MB' --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
app_cmd "loh 100"
app_cmd "release"
app_cmd "spike 150 200"
app_cmd "sleep 1500"
app_cmd "exit"
wait_dw 30
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC, expected 0 when the target exits"
[ "$(count_dumps)" -eq 0 ] || fail "a dump was taken below the threshold"
grep -q "process $APP_PID (MemSpike) exited; 0 dump(s) taken" "$T/dw.out" || fail "no exit message"
[ "$(journal_count detach)" -eq 1 ] || fail "no detach record"
[ "$(journal_count fire)" -eq 0 ] || fail "a rule fired"
echo "PASS: below threshold -> no dump; target exit -> clean exit with message"
