#!/usr/bin/env bash
# Each dump type holds what it promises (docs/dumps.md), read back with ClrMD
# (DumpCheck): MemSpike holds 300 MB of 1 MB arrays on the LOH, and one
# `dumpwatch --dump-type T` per type fires on 'loh-size > 200MB' at an induced
# GC. withheap and full: the LOH and its 300 byte[] arrays; normal: the GC's
# segments with their sizes, no objects; triage: no heap, but the threads and
# their managed frames. DumpCheck refuses, with one line and a non-zero exit,
# files that are not dumps it can open.
source "$(dirname "$0")/lib.sh"
start_app
app_cmd "loh 300"
wait_for "grep -q 'done loh 300' '$T/app.out'" 30 || fail "MemSpike did not allocate"
for type in normal withheap triage full; do
	rm -f "$JOURNAL"
	start_dw --pid "$APP_PID" --when 'loh-size > 200MB' --dump-type "$type" --dump-dir "$DUMPS" --journal "$JOURNAL"
	wait_attached
	# A GC end reports the LOH size; "watching" may come before the
	# session's first events, so a GC is induced until the rule fires.
	wait_for "grep -q fired '$T/dw.out' || { app_cmd 'gc 0'; false; }" 30 || fail "$type: the rule did not fire"
	wait_dw 60
	[ "$DW_RC" -eq 0 ] || fail "$type: exit status $DW_RC"
	[ "$(count_dumps)" -eq 1 ] || fail "$type: expected one dump, found $(count_dumps)"
	grep '"event":"dump"' "$JOURNAL" | grep_q "\"type\":\"$type\"" || fail "$type: the dump record names another type"
	core=$(find "$DUMPS" -maxdepth 1 -name '*.core')
	"$DW_CORECHECK" "$core" "$APP_PID" >/dev/null || fail "$type: not a core of pid $APP_PID"
	check_dump --type "$type" "$core" "$APP_PID" 200000000
	case "$type" in
	withheap)
		# All 300 arrays, and nothing above 2 MB.
		[ "$(dump_json '.heap.objects.large[] | select(.type == "System.Byte[]") | .count')" -ge 300 ] ||
			fail "withheap: fewer than 300 large byte[]: $(dump_json -c .heap.objects.large)"
		"$DW_DUMPCHECK" --min-object-size 2000000 "$core" >"$T/big.json" || fail "--min-object-size refused"
		[ "$(jq '.heap.objects.large | length' "$T/big.json")" -eq 0 ] ||
			fail "objects above 2 MB listed: $(jq -c .heap.objects.large "$T/big.json")"
		cp "$core" "$T/heap.core.copy" # kept below for a truncated copy
		;;
	triage)
		dump_json '.threads[].frames[]' | grep_q 'Console.ReadLine' ||
			fail "triage: the main thread's frames do not show Console.ReadLine: $(dump_json -c .threads)"
		;;
	esac
	rm -f "$core"
done

# Not dumps it can open: one line on stderr, exit 1.
refused() {
	local rc=0
	"$DW_DUMPCHECK" "$1" >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" -eq 1 ] || fail "DumpCheck on $2 exited $rc, expected 1"
	[ "$(wc -l <"$T/err")" -eq 1 ] || fail "DumpCheck on $2: not one line on stderr: $(cat "$T/err")"
	[ ! -s "$T/out" ] || fail "DumpCheck on $2 printed: $(head -c 300 "$T/out")"
	echo "refused $2: $(cat "$T/err")"
}
echo "not a dump at all" >"$T/text"
refused "$T/text" "a text file"
refused "$DUMPWATCH" "an ELF executable"
head -c 65536 "$T/heap.core.copy" >"$T/short.core"
refused "$T/short.core" "the first 64 KiB of a heap dump"
refused "$T/missing.core" "a missing file"
rm -f "$T/heap.core.copy"
echo "PASS: normal, withheap, triage and full dumps hold what they should; non-dumps refused"
