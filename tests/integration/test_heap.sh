#!/usr/bin/env bash
# dumpwatch heap against dotnet-gcdump on one process state: GcLab holds 400
# arrays of 1 MiB in the static list Cache.s_entries and a tree of 100,000
# HeapNode objects, each with a HeapLeaf. `dumpwatch heap --json` and
# `dotnet-gcdump collect` + `report` (the NuGet tool) agree within 1 % on the
# count and bytes of the 1 MiB arrays (all in the LOH), of HeapNode and
# HeapLeaf; the retention path of System.Byte[] runs from the static field
# Cache.s_entries (named with its class, although the class Decoy declares
# an s_entries of its own) through the List<System.Byte[]> and its array, and that list
# retains the 400 MiB. The table (without --json) has dotnet-gcdump
# report's columns, then the types that retain the most. `heap --types` (a
# histogram, no graph) gives the same rows and generations for those types,
# and agrees with dotnet-gcdump report the same way. With a session buffer
# too small for the walk the snapshot is said to be incomplete, in both modes.
source "$(dirname "$0")/lib.sh"
GCDUMP=$(dotnet_tool dotnet-gcdump)
APP="$DW_APPS_DIR/GcLab/GcLab"
start_app
app_cmd "cache 400 1048576 100000"
wait_for "grep -q 'done cache' '$T/app.out'" 60 || fail "GcLab did not make its objects"

"$DUMPWATCH" heap --json "$APP_PID" >"$T/heap.json" 2>"$T/heap.err" || fail "dumpwatch heap: $(cat "$T/heap.err")"
"$DUMPWATCH" heap --paths 3 "$APP_PID" >"$T/heap.txt" 2>"$T/heap.err" || fail "dumpwatch heap (table): $(cat "$T/heap.err")"
"$GCDUMP" collect -p "$APP_PID" -o "$T/app.gcdump" >"$T/gcdump.out" 2>&1 || fail "dotnet-gcdump collect: $(cat "$T/gcdump.out")"
"$GCDUMP" report "$T/app.gcdump" >"$T/report.txt" 2>&1 || fail "dotnet-gcdump report: $(cat "$T/report.txt")"

# A type's objects and bytes in the report: its rows (arrays are split by
# size: "System.Byte[] (Bytes > 1M)"), each with a count and the bytes of one
# object; FILTER picks the rows by the text after the type.
report_type() { # TYPE [SUFFIX-REGEX]
	awk -v t="$1" -v sfx="${2:-}" '
		match($0, /^ *[0-9,]+ +[0-9,]+  /) {
			size = $1; count = $2; gsub(",", "", size); gsub(",", "", count)
			rest = substr($0, RLENGTH + 1); sub(/  \[[^]]*\]$/, "", rest)
			name = rest; sub(/ \(Bytes > [^)]*\)$/, "", name)
			if (name != t) next
			if (sfx != "" && rest !~ sfx) next
			n += count; b += size * count
		}
		END { printf "%d %d\n", n, b }' "$T/report.txt"
}
within1() { # A B: |A - B| <= 1 % of the larger
	awk -v a="$1" -v b="$2" 'BEGIN { m = a > b ? a : b; d = a - b; if (d < 0) d = -d; exit !(m > 0 && d * 100 <= m) }'
}
agree() { # WHAT OURS-OBJECTS OURS-BYTES GCDUMP-OBJECTS GCDUMP-BYTES
	within1 "$2" "$4" || fail "$1: $2 objects here, $4 in dotnet-gcdump report"
	within1 "$3" "$5" || fail "$1: $3 bytes here, $5 in dotnet-gcdump report"
	echo "$1: $2 objects, $3 bytes (dotnet-gcdump: $4, $5)"
}
ours() { # TYPE JQ-PATH-UNDER-THE-TYPE
	jq -r --arg t "$1" ".types[] | select(.type == \$t) | $2" "$T/heap.json"
}

read -r n b <<<"$(report_type System.Byte[] '\(Bytes > 1M\)')"
[ "$n" -ge 400 ] || fail "dotnet-gcdump report shows $n arrays over 1 MB: $(grep -F 'System.Byte[]' "$T/report.txt")"
agree "System.Byte[] in the LOH" "$(ours System.Byte[] '.generation_objects.loh')" \
	"$(ours System.Byte[] '.generations.loh')" "$n" "$b"
for t in HeapNode HeapLeaf; do
	read -r n b <<<"$(report_type "$t")"
	agree "$t" "$(ours "$t" .objects)" "$(ours "$t" .bytes)" "$n" "$b"
done
[ "$(ours HeapNode .objects)" -eq 100000 ] || fail "HeapNode: $(ours HeapNode .objects) objects, GcLab made 100000"
[ "$(ours HeapNode .generation_objects.gen2)" -eq 100000 ] || fail "HeapNode not all in gen2: $(ours HeapNode .generations)"
# The whole heap: the two snapshots are of slightly different states (each
# session makes objects in the target), so only roughly.
total=$(jq .bytes "$T/heap.json")
report_total=$(awk '/GC Heap bytes/ { gsub(",", "", $1); print $1 }' "$T/report.txt")
awk -v a="$total" -v b="$report_total" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d * 20 <= b) }' ||
	fail "GC heap bytes: $total here, $report_total in dotnet-gcdump report"

# What holds the arrays.
path=$(jq -c '.paths[] | select(.type == "System.Byte[]")' "$T/heap.json")
[ "$(jq -r .root <<<"$path")" = "Cache.s_entries (static)" ] || fail "System.Byte[] path: $path"
[ "$(jq -r '[.steps[].type] | join(" > ")' <<<"$path")" = \
	"System.Collections.Generic.List<System.Byte[]> > System.Byte[][] > System.Byte[]" ] || fail "System.Byte[] path: $path"
[ "$(jq -r .objects <<<"$path")" -ge 400 ] || fail "the path holds fewer than the 400 arrays: $path"
path=$(jq -c '.paths[] | select(.type == "HeapLeaf")' "$T/heap.json")
[ "$(jq -r '.root + " " + ([.steps[] | .type + (if .nested then "*" else "" end)] | join(" "))' <<<"$path")" = \
	"Graph.s_root (static) HeapNode* HeapLeaf" ] || fail "HeapLeaf path: $path"
# What the list keeps alive: its array and the 400 arrays of 1 MiB, counted
# once although nothing else holds them; and it is among the types that
# retain the most.
list="System.Collections.Generic.List<System.Byte[]>"
jq -e '.retained.computed' "$T/heap.json" >/dev/null || fail "no retained sizes: $(jq -c .retained "$T/heap.json")"
[ "$(ours "$list" .retained_bytes)" -ge $((400 * 1048576)) ] ||
	fail "the list retains $(ours "$list" .retained_bytes) bytes, less than its 400 arrays"
[ "$(ours "$list" .retained_bytes)" -le "$(jq .bytes "$T/heap.json")" ] || fail "the list retains more than the heap"
[ "$(ours HeapNode .retained_bytes)" -ge "$(($(ours HeapNode .bytes) + $(ours HeapLeaf .bytes)))" ] ||
	fail "HeapNode retains $(ours HeapNode .retained_bytes), less than the nodes and their leaves"
jq -e --arg t "$list" '[.retained.types[:3][] | .type] | index($t) != null' "$T/heap.json" >/dev/null ||
	fail "the list is not among the 3 types that retain the most: $(jq -c '.retained.types[:3]' "$T/heap.json")"
echo "retained: $list $(ours "$list" .retained_bytes) bytes, HeapNode $(ours HeapNode .retained_bytes)," \
	"in $(jq .retained.passes "$T/heap.json") passes"
jq -e '.pause_ms > 0 and .cut.objects == 0 and .cut.lost_batches == 0 and .cut.unresolved_references == 0' \
	"$T/heap.json" >/dev/null || fail "pause or cuts: $(jq -c '{pause_ms, cut}' "$T/heap.json")"

# The table: dotnet-gcdump report's header and columns, then the rest.
grep_q -E '^ +[0-9,]+  GC Heap bytes$' "$T/heap.txt" || fail "no heap bytes line: $(head -5 "$T/heap.txt")"
grep_q -E '^ +Object Bytes +Count  Type$' "$T/heap.txt" || fail "no table header"
grep_q -E '^ +[0-9,]+ +100,000  HeapNode$' "$T/heap.txt" || fail "no HeapNode row"
grep_q -E '^ +419,[0-9,]+ +[0-9,]+  loh$' "$T/heap.txt" || fail "no LOH line: $(grep -A8 'By generation' "$T/heap.txt")"
grep_q -F '    Cache.s_entries (static) → System.Collections.Generic.List<System.Byte[]> → System.Byte[][] → System.Byte[]' \
	"$T/heap.txt" || fail "no path line: $(grep -A8 'What holds' "$T/heap.txt")"
grep_q -E '^ +Retained Bytes +Object Bytes +Count  Type$' "$T/heap.txt" || fail "no retained table: $(tail -20 "$T/heap.txt")"
grep_q -E '^ +4[0-9]{2}(,[0-9]{3}){2} +[0-9,]+ +1  System\.Collections\.Generic\.List<System\.Byte\[\]>$' "$T/heap.txt" ||
	fail "no retained row for the list: $(grep -A12 'Retained by type' "$T/heap.txt")"
"$DUMPWATCH" heap --json --no-retained "$APP_PID" >"$T/heap2.json" 2>"$T/heap.err" || fail "dumpwatch heap --no-retained: $(cat "$T/heap.err")"
jq -e '(has("retained") | not) and (.types[0] | has("retained_bytes") | not)' "$T/heap2.json" >/dev/null ||
	fail "--no-retained: $(jq -c '{retained, t: .types[0]}' "$T/heap2.json")"
echo "pause $(jq .pause_ms "$T/heap.json") ms, $(jq .objects "$T/heap.json") objects"

# --types: the histogram alone, the same numbers.
"$DUMPWATCH" heap --types --json "$APP_PID" >"$T/types.json" 2>"$T/types.err" || fail "dumpwatch heap --types: $(cat "$T/types.err")"
"$DUMPWATCH" heap --types "$APP_PID" >"$T/types.txt" 2>"$T/types.err" || fail "dumpwatch heap --types (table): $(cat "$T/types.err")"
tours() { # TYPE JQ-PATH-UNDER-THE-TYPE
	jq -r --arg t "$1" ".types[] | select(.type == \$t) | $2" "$T/types.json"
}
read -r n b <<<"$(report_type System.Byte[] '\(Bytes > 1M\)')"
agree "--types: System.Byte[] in the LOH" "$(tours System.Byte[] '.generation_objects.loh')" \
	"$(tours System.Byte[] '.generations.loh')" "$n" "$b"
for t in HeapNode HeapLeaf; do
	read -r n b <<<"$(report_type "$t")"
	agree "--types: $t" "$(tours "$t" .objects)" "$(tours "$t" .bytes)" "$n" "$b"
	[ "$(tours "$t" '[.objects, .bytes, .generations] | tojson')" = "$(ours "$t" '[.objects, .bytes, .generations] | tojson')" ] ||
		fail "--types: $t $(tours "$t" '[.objects, .bytes, .generations] | tojson'), the graph: $(ours "$t" '[.objects, .bytes, .generations] | tojson')"
done
[ "$(tours HeapNode .generation_objects.gen2)" -eq 100000 ] || fail "--types: HeapNode not all in gen2: $(tours HeapNode .generations)"
[ "$(tours System.Byte[] .generation_objects.loh)" = "$(ours System.Byte[] .generation_objects.loh)" ] ||
	fail "--types: $(tours System.Byte[] .generation_objects.loh) arrays in the LOH, the graph $(ours System.Byte[] .generation_objects.loh)"
jq -e '.complete == true and .paths == [] and (has("retained") | not) and (has("roots") | not) and .references > 100000 and .cut.unplaced == 0' \
	"$T/types.json" >/dev/null || fail "--types JSON: $(jq -c '{complete, paths, retained, roots, references, cut}' "$T/types.json")"
grep_q -E '^ +Object Bytes +Count  Type$' "$T/types.txt" || fail "--types: no table header"
grep_q -E '^ +[0-9,]+ +100,000  HeapNode$' "$T/types.txt" || fail "--types: no HeapNode row"
grep_q -E '^ +419,[0-9,]+ +[0-9,]+  loh$' "$T/types.txt" || fail "--types: no LOH line: $(grep -A8 'By generation' "$T/types.txt")"
! grep -qE 'What holds|Retained by type' "$T/types.txt" || fail "--types printed paths or retained sizes"
rc=0
"$DUMPWATCH" heap --types --gcdump "$T/x.gcdump" "$APP_PID" >"$T/tg.out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] && grep_q -F -- '--types' "$T/tg.out" && [ ! -e "$T/x.gcdump" ] ||
	fail "heap --types --gcdump: exit $rc, $(cat "$T/tg.out")"
echo "--types: $(jq .objects "$T/types.json") objects, $(jq .bytes "$T/types.json") bytes"

# A session buffer far too small for the walk: the runtime drops events, and
# dumpwatch says the snapshot is incomplete (exit status 4) rather than show
# a part of the heap as the whole.
rc=0
"$DUMPWATCH" heap --buffer 1 --json "$APP_PID" >"$T/small.json" 2>"$T/small.err" || rc=$?
[ "$rc" -eq 4 ] || fail "heap --buffer 1: exit $rc, $(cat "$T/small.err") $(jq -c '{objects, complete}' "$T/small.json" 2>/dev/null)"
grep_q -E 'incomplete|dropped' "$T/small.err" || fail "heap --buffer 1 does not say why: $(cat "$T/small.err")"
if [ -s "$T/small.json" ]; then
	jq -e '.complete == false' "$T/small.json" >/dev/null || fail "heap --buffer 1 JSON: $(jq -c '{objects, complete}' "$T/small.json")"
fi
jq -e '.complete == true' "$T/heap.json" >/dev/null || fail "the full snapshot is not complete"
rc=0
"$DUMPWATCH" heap --types --buffer 1 "$APP_PID" >"$T/small.txt" 2>"$T/small.err" || rc=$?
[ "$rc" -eq 4 ] && grep_q -E 'incomplete|dropped' "$T/small.err" ||
	fail "heap --types --buffer 1: exit $rc, $(cat "$T/small.err")"

# A process that is gone: a clear error, exit status 2.
rc=0
"$DUMPWATCH" heap 999999999 >"$T/gone.out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "heap of no process: exit $rc, $(cat "$T/gone.out")"
echo PASS
