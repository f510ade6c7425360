#!/usr/bin/env bash
# (f) --max-dumps 2 --cooldown 1s over repeated spikes: exactly two dumps, then
# dumpwatch exits on its own.
source "$(dirname "$0")/lib.sh"
start_app
start_dw --pid "$APP_PID" --when 'loh-size > 200MB' --max-dumps 2 --cooldown 1s --dump-type triage \
	--dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
for _ in 1 2 3 4 5; do
	app_cmd "spike 300 400"
	app_cmd "sleep 1200"
done
wait_dw 90
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC"
[ "$(count_dumps)" -eq 2 ] || fail "expected exactly two dumps, found $(count_dumps)"
[ "$(journal_count dump)" -eq 2 ] || fail "expected two dump records"
for core in "$DUMPS"/*.core; do
	"$DW_CORECHECK" "$core" "$APP_PID" >/dev/null || fail "bad core $core"
	check_dump --type triage "$core" "$APP_PID"
done
echo "PASS: max-dumps 2 with cooldown -> exactly two dumps"
