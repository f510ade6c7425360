#!/usr/bin/env bash
# Snapshots while another session stays open on the process: the runtime
# names each type once and forgets that only when its provider's keywords are
# recomputed without the Type keyword, which a session of ours stopping does
# not do while another one (here a `dumpwatch gc`, in production dumpwatch's
# own watch) keeps the provider on. Before heapsnap made the runtime forget,
# every snapshot after the first had "Type 0x7f..." for every type. Here two
# snapshots in a row beside a `dumpwatch gc` both name GcLab's HeapNode and
# HeapLeaf, with the counts GcLab made.
source "$(dirname "$0")/lib.sh"
APP="$DW_APPS_DIR/GcLab/GcLab"
start_app
app_cmd "cache 4 1048576 20000"
wait_for "grep -q 'done cache' '$T/app.out'" 60 || fail "GcLab did not make its objects"

"$DUMPWATCH" gc --pid "$APP_PID" --format json >"$T/gc.jsonl" 2>"$T/gc.err" &
PIDS+=("$!")
# The gc view's session is open once it has seen a GC: one is induced until
# it has.
wait_for "[ -s '$T/gc.jsonl' ] || { app_cmd 'gc 0'; sleep 0.3; false; }" 30 ||
	fail "dumpwatch gc saw no GC: $(cat "$T/gc.err")"

for i in 1 2 3; do
	"$DUMPWATCH" heap --json "$APP_PID" >"$T/heap$i.json" 2>"$T/heap$i.err" ||
		fail "dumpwatch heap ($i): $(cat "$T/heap$i.err")"
	for t in HeapNode HeapLeaf; do
		n=$(jq -r --arg t "$t" '[.types[] | select(.type == $t) | .objects] | add // 0' "$T/heap$i.json")
		[ "$n" -eq 20000 ] ||
			fail "snapshot $i: $n objects named $t, GcLab made 20000; the top types: $(jq -c '[.types[:4][] | .type]' "$T/heap$i.json")"
	done
	echo "snapshot $i: HeapNode and HeapLeaf named, 20000 each"
done
# The gc view saw the snapshots' induced GCs: it was open throughout.
induced() { jq -s '[.[] | select(.reason == "Induced" and .generation == 2)] | length' "$T/gc.jsonl"; }
wait_for '[ "$(induced)" -ge 3 ]' 30 || fail "the gc view saw $(induced) of the 3 snapshots' GCs"
echo PASS
