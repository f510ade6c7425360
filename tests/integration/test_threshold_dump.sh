#!/usr/bin/env bash
# (a) The threshold is crossed: exactly one dump, a valid ELF core of that pid,
# journaled with its path and size, its context beside it; dumpwatch exits 0. The heap holds 700 MB
# of LOH the program never touched: the heap dump is several times the
# process's resident memory, and is published all the same. The 700 MB are
# held before the threshold is crossed: a dump taken while they were still
# being allocated would hold less (on .NET 8 the dump command stops the
# program within the 700 MB).
source "$(dirname "$0")/lib.sh"
start_app
start_dw --pid "$APP_PID" --when 'loh-size > 750MB' --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
app_cmd "loh 700"
wait_for "grep -q 'done loh 700' '$T/app.out'" 30 || fail "MemSpike did not allocate 700 MB"
app_cmd "loh 100"
wait_dw 90
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC, expected 0"
[ "$(count_dumps)" -eq 1 ] || fail "expected exactly one dump, found $(count_dumps)"
[ "$(count_partials)" -eq 0 ] || fail "a partial file was left behind"
core=$(find "$DUMPS" -name '*.core')
"$DW_CORECHECK" "$core" "$APP_PID" || fail "not a core of pid $APP_PID"
check_dump "$core" "$APP_PID" 750000000 # the byte[] above the 750 MB that fired it are in it
case "$(basename "$core")" in
MemSpike-"$APP_PID"-loh-size-gt-750MB-*.core) ;;
*) fail "unexpected dump name $(basename "$core")" ;;
esac
[ "$(stat -c %a "$core")" = 600 ] || fail "dump mode is $(stat -c %a "$core"), expected 600"
[ "$(stat -c %s "$core")" -gt 700000000 ] || fail "a heap dump of 700 MB of LOH is $(stat -c %s "$core") bytes"
[ "$(journal_count fire)" -eq 1 ] || fail "expected one fire record"
[ "$(journal_count dump)" -eq 1 ] || fail "expected one dump record"
grep '"event":"dump"' "$JOURNAL" | grep_q "\"path\":\"$core\"" || fail "dump record lacks the path"
grep '"event":"fire"' "$JOURNAL" | grep_q '"loh-size":' || fail "fire record lacks the metric value"
# Beside it, its context (the one-process watch writes it too, on every runtime).
ctx="${core%.core}.json"
[ -f "$ctx" ] && [ -f "${core%.core}.svg" ] || fail "no context files beside $core: $(ls -A "$DUMPS")"
[ "$(jq -r '.outcome + " " + .rule.name + " " + (.rule.conditions[0].value > 750000000 | tostring) + " " + (.process.pid | tostring)' "$ctx")" = "dump loh-size-gt-750MB true $APP_PID" ] ||
	fail "context: $(jq -c '{outcome, rule: .rule.name, value: .rule.conditions[0].value, pid: .process.pid}' "$ctx")"
jq -e '[.history.series[] | select(.metric == "loh-size") | .points[] | select(.[0] <= 0 and .[3] > 750000000)] | length > 0' "$ctx" >/dev/null ||
	fail "the history of loh-size never passes 750 MB before the fire"
grep '"event":"dump"' "$JOURNAL" | grep_q "\"context\":\"$ctx\"" || fail "dump record does not name the context"
echo "PASS: threshold crossed -> one dump $(basename "$core") ($(stat -c %s "$core") bytes)"
