#!/usr/bin/env bash
# The heap at the fire, from the real runtime: GcLab holds 200 byte[] of
# 1 MiB in Cache.s_entries (a static List<byte[]>) and a tree of 20,000
# HeapNode (each with a HeapLeaf) under Graph.s_root.
# 1. --dump-type gcdump: NAME.gcdump is published in the store (0600, no
#    partial left), `dotnet-gcdump report` reads it and agrees with the
#    summary in NAME.json on the totals and per type; the path of the
#    byte[] names the static field and the list that holds them, and the
#    list retains them; the journal says how it was taken.
# 2. --heap-summary with a withheap core: the core is whole (DumpCheck), the
#    summary taken after it is in its context, and `dotnet-dump analyze`
#    (dumpheap -stat -live: the summary is taken after a full GC) of the core
#    agrees with it within 1 % per type.
source "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || fail "jq missing (scripts/setup.sh installs it)"
APP="$DW_APPS_DIR/GcLab/GcLab"
[ -x "$APP" ] || fail "$APP not built"
A="heap$$"
start_tagged "$A"
P=${APP_PIDS[$A]}
tagged_cmd "$A" "cache 200 1048576 20000"
wait_tagged_done "$A" "cache 200 1048576 20000" 60

# --- 1. a gcdump ---
"$DUMPWATCH" --pid "$P" --when "heap-size > 100MB" --dump-type gcdump --dump-dir "$DUMPS" --journal "$JOURNAL" \
	--max-dumps 1 >"$T/dw1.out" 2>&1 || fail "the gcdump watch failed: $(tail -5 "$T/dw1.out")"
G=$(find "$DUMPS" -maxdepth 1 -name '*.gcdump')
[ "$(echo "$G" | grep -c .)" -eq 1 ] || fail "expected one .gcdump in $DUMPS: $(ls -A "$DUMPS")"
[ "$(count_partials)" -eq 0 ] || fail "a partial file was left: $(ls -A "$DUMPS")"
[ "$(stat -c %a "$G")" = 600 ] || fail "$G has mode $(stat -c %a "$G")"
J=${G%.gcdump}.json
[ -f "$J" ] || fail "no context beside $G"
jq -e '.heap.objects > 40000' "$J" >/dev/null || fail "no heap summary in $J: $(jq -c '.heap // .heap_error' "$J")"
grep '"event":"dump"' "$JOURNAL" | jq -e 'select(.type == "gcdump" and .via == "eventpipe")' >/dev/null ||
	fail "journal: $(grep '"event":"dump"' "$JOURNAL")"
report_table "$G" "$T/report.txt"
echo "dotnet-gcdump report: $(head -1 "$T/report.txt")"
read -r _ rbytes robjects < <(head -1 "$T/report.txt")
sbytes=$(jq .heap.bytes "$J")
[ "$rbytes" = "$sbytes" ] || fail "dotnet-gcdump report says $rbytes bytes, the summary $sbytes"
# The report also counts the file's pseudo nodes for the roots (one per
# static field, root kind and the root itself).
sobjects=$(jq .heap.objects "$J")
[ "$robjects" -ge "$sobjects" ] && [ "$robjects" -le $((sobjects + sobjects / 100)) ] ||
	fail "dotnet-gcdump report counts $robjects objects, the summary $sobjects"
# per_type TYPE: "BYTES COUNT" of TYPE in the report, its size classes summed.
per_type() { awk -v t="$1" '{ n = $0; sub(/^[0-9]+ [0-9]+ /, "", n); sub(/ \(Bytes > [0-9A-Z]+\)$/, "", n)
	if (n == t) { b += $1; c += $2 } } END { print b + 0, c + 0 }' "$T/report.txt"; }
for type in System.Byte[] HeapNode HeapLeaf; do
	read -r rb rc < <(per_type "$type")
	sb=$(jq --arg t "$type" '[.heap.types[] | select(.type == $t) | .bytes] | add // 0' "$J")
	sc=$(jq --arg t "$type" '[.heap.types[] | select(.type == $t) | .objects] | add // 0' "$J")
	echo "$type: report $rb bytes / $rc objects, summary $sb / $sc"
	[ "$rc" -gt 0 ] || fail "no $type in dotnet-gcdump's report"
	[ "$rb" = "$sb" ] && [ "$rc" = "$sc" ] || fail "$type: report $rb bytes / $rc objects, summary $sb / $sc"
done
[ "$(jq '[.heap.types[] | select(.type == "HeapNode") | .objects] | add' "$J")" -eq 20000 ] || fail "not 20,000 HeapNode"
big=$(jq '[.heap.types[] | select(.type == "System.Byte[]") | .generations.loh] | add // 0' "$J")
[ "$big" -ge $((200 * 1048576)) ] || fail "System.Byte[] in the LOH: $big bytes"
# What holds the byte[]: the static field, then the list.
path=$(jq -r '.heap.paths[] | select(.type == "System.Byte[]") | [.root, (.steps[].type)] | join(" -> ")' "$J" | head -1)
echo "path: $path"
case "$path" in
"Cache.s_entries (static) -> System.Collections.Generic.List<System.Byte[]> -> System.Byte[][] -> System.Byte[]") ;;
*) fail "the path of System.Byte[]: '$path'" ;;
esac
jq -r '.heap.paths[] | select(.type == "HeapNode") | .root' "$J" | grep -qx 'Graph.s_root (static)' ||
	fail "HeapNode not held by Graph.s_root: $(jq -c '.heap.paths' "$J")"
jq -e '.heap.pause_ms > 0' "$J" >/dev/null || fail "no pause measured: $(jq -c .heap "$J" | head -c 300)"
# What the list retains: its 200 arrays of 1 MiB, among the types that
# retain the most (the list itself is too small for the top types by bytes).
kept=$(jq '[.heap.retained.types[]? | select(.type == "System.Collections.Generic.List<System.Byte[]>")
	| .retained_bytes] | add // 0' "$J")
echo "the list retains $kept bytes"
[ "$kept" -ge $((200 * 1048576)) ] || fail "the list retains $kept bytes: $(jq -c .heap.retained "$J" | head -c 600)"
rm -f "$DUMPS"/*

# --- 2. a withheap core with its heap summary ---
"$DUMPWATCH" --pid "$P" --when "heap-size > 100MB" --heap-summary --dump-dir "$DUMPS" --journal "$JOURNAL" \
	--max-dumps 1 >"$T/dw2.out" 2>&1 || fail "the core + summary watch failed: $(tail -5 "$T/dw2.out")"
C=$(find "$DUMPS" -maxdepth 1 -name '*.core')
[ -n "$C" ] || fail "no core: $(ls -A "$DUMPS")"
check_dump --name GcLab "$C" "$P"
J=${C%.core}.json
jq -e '.heap.objects > 40000 and .dump.via == "runtime"' "$J" >/dev/null ||
	fail "no heap summary beside the core: $(jq -c '{heap: (.heap | type), heap_error, dump}' "$J")"
grep -q "taking the heap summary of pid $P" "$T/dw2.out" || fail "the summary was not said: $(cat "$T/dw2.out")"
TOOL=$(dotnet_tool dotnet-dump)
"$TOOL" analyze "$C" -c "dumpheap -stat -live" -c exit >"$T/dumpheap.txt" 2>&1 || fail "dotnet-dump analyze: $(tail -5 "$T/dumpheap.txt")"
# "MT Count TotalSize Class Name" lines: the count and size of a class.
stat_of() { awk -v t="$1" '$1 ~ /^[0-9a-f]+$/ && NF >= 4 { n = $0; sub(/^ *[0-9a-f]+ +[0-9,]+ +[0-9,]+ /, "", n)
	if (n == t) { c = $2; b = $3; gsub(",", "", c); gsub(",", "", b); print b, c } }' "$T/dumpheap.txt"; }
for type in System.Byte[] HeapNode HeapLeaf; do
	read -r db dc < <(stat_of "$type")
	sb=$(jq --arg t "$type" '[.heap.types[] | select(.type == $t) | .bytes] | add // 0' "$J")
	sc=$(jq --arg t "$type" '[.heap.types[] | select(.type == $t) | .objects] | add // 0' "$J")
	echo "$type: dumpheap -stat $db bytes / $dc objects, summary $sb / $sc"
	[ -n "$dc" ] && [ "$dc" -gt 0 ] || fail "no $type in dumpheap -stat: $(grep -c . "$T/dumpheap.txt") lines"
	awk -v a="$db" -v b="$sb" -v c="$dc" -v d="$sc" 'BEGIN { exit !(a > 0 && (a - b) ^ 2 <= (a / 100) ^ 2 && (c - d) ^ 2 <= (c / 100) ^ 2) }' ||
		fail "$type: dumpheap -stat $db bytes / $dc objects, summary $sb / $sc (more than 1 % apart)"
done
echo "PASS"
