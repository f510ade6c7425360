#!/usr/bin/env bash
# Every dump explains itself. A real MemSpike whose command line (and comm)
# holds markup and quotes spikes its LOH past a sustained rule four times
# under the guard, with room for three dumps: three dumps, each with NAME.json
# (valid against examples/dump-context.schema.json, its history showing
# loh-size crossing the threshold a sustain window before the fire, the rule's
# file and line, the process and its command line as they are) and NAME.svg (well-formed
# XML), with the dump's owner and mode, named in the journal's dump record;
# the fourth skipped, with its context all the same. Restarted with
# delete-oldest, a fifth spike removes the oldest dump with its context
# files. `dumpwatch show` explains a dump in text; `dumpwatch report` writes
# one page for the store, which headless Chromium renders (not blank, the
# rule's name in it, the hostile names as text and no element they smuggle
# in), as it does the SVG. Both are bounded: a file over 4 MiB is refused
# unread, and a report of 39 MiB of contexts reads the newest 32 MiB and names
# the oldest, left out, in one line. A page of contexts with heap summaries,
# one with hostile type and root names, renders with the names as text, and
# with the types that keep the most alive, or why their sizes are missing.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
CHECK_RENDER="$DW_SOURCE_DIR/tests/tools/render_check.py"
SCHEMA="$DW_SOURCE_DIR/examples/dump-context.schema.json"
command -v chromium >/dev/null || fail "chromium is not installed (scripts/setup.sh installs it)"
command -v xmllint >/dev/null || fail "xmllint is not installed (scripts/setup.sh installs libxml2-utils)"

# The process is started through a link whose name holds markup and quotes
# (its comm, and the first word of its command line).
NAME='<i>"x'"'"'&y'
mkdir -p "$T/bin"
ln -s "$APP" "$T/bin/$NAME"
# Its command line carries markup and quotes too.
TAG="ctx$$"
EVIL='<b>"q'"'"'&</b><script>alert(1)</script>'
mkfifo -m 0600 "$T/$TAG.cmd"
exec {fd}<>"$T/$TAG.cmd"
APP_FD[$TAG]=$fd
"$T/bin/$NAME" --tag "$TAG" "$EVIL" <"$T/$TAG.cmd" >"$T/$TAG.out" 2>&1 &
P=$!
PIDS+=("$P")
wait_for "grep -q ready '$T/$TAG.out'" 10 || fail "MemSpike did not start through $NAME"
check_runtime "$T/$TAG.out"
[ "$(cat /proc/$P/comm)" = "$NAME" ] || fail "the process's comm is '$(cat /proc/$P/comm)', not '$NAME'"

cat >"$RULES/ctx.json" <<JSON
{ "name": "ctx-spike", "description": "<img src=x onerror=alert(1)> and \"quotes\"",
  "process": { "cmdline": "*--tag ctx$$*" }, "when": "loh-size > 300MB for 1s",
  "dump": { "type": "triage" }, "limits": { "max-dumps": 10, "cooldown": "3s" } }
JSON
start_guard --store-max-count 3 --history 2m
wait_journal attach 1 15 "\"pid\":$P" || fail "not attached"
spike() {
	tagged_cmd "$TAG" "sleep 1500"
	tagged_cmd "$TAG" "loh 400"
	tagged_cmd "$TAG" "sleep 2500"
	tagged_cmd "$TAG" "release"
	tagged_cmd "$TAG" "gc 2"
	tagged_cmd "$TAG" "mark $1"
	wait_tagged_done "$TAG" "mark $1" 30
}
for i in 1 2 3; do
	spike "$i"
	wait_journal dump "$i" 30 "\"pid\":$P" || fail "dump $i not taken"
done
spike 4
wait_journal dump-skipped 1 30 "\"pid\":$P" || fail "the fourth dump was not skipped"
[ "$(dumps_of "$P")" -eq 3 ] || fail "expected three dumps, found $(dumps_of "$P")"

# The dump records name both files, which are there with the dump's owner and mode.
grep '"event":"dump"' "$JOURNAL" >"$T/dumps.jsonl"
while read -r rec; do
	core=$(jq -r .path <<<"$rec")
	ctx=$(jq -r .context <<<"$rec")
	plot=$(jq -r .plot <<<"$rec")
	[ "$ctx" = "${core%.core}.json" ] || fail "dump record names context $ctx for $core"
	[ "$plot" = "${core%.core}.svg" ] || fail "dump record names plot $plot for $core"
	for f in "$ctx" "$plot"; do
		[ -f "$f" ] || fail "$f missing"
		[ "$(stat -c %u:%g:%a "$f")" = "$(stat -c %u:%g:%a "$core")" ] ||
			fail "$f is $(stat -c %u:%g:%a "$f"), its dump $(stat -c %u:%g:%a "$core")"
	done
	xmllint --noout "$plot" || fail "$plot is not well-formed XML"
	check_dump --type triage --name "$NAME" "$core" "$P"
done <"$T/dumps.jsonl"
[ "$(find "$DUMPS" -name '.*.partial' | wc -l)" -eq 0 ] || fail "partial files left"

# The skipped dump's context: what would have been dumped, and why not.
skipped=$(grep '"event":"dump-skipped"' "$JOURNAL" | head -1 | jq -r .context)
[ -f "$skipped" ] || fail "the skipped dump has no context ($skipped)"
[ "$(jq -r .outcome "$skipped")" = skipped ] || fail "outcome of $skipped: $(jq -r .outcome "$skipped")"
jq -r .error "$skipped" | grep_q -- "--store-max-count 3" || fail "the skipped context lacks the reason"
[ "$(jq -r .dump.bytes "$skipped")" = null ] || fail "a skipped dump has bytes"

# Each context: valid by the schema; the rule where it was written; the process as it named itself.
for ctx in "$DUMPS"/*.json; do
	$PY - "$SCHEMA" "$ctx" <<'EOF' || fail "$ctx does not follow the schema"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator(schema).validate(json.load(open(sys.argv[2])))
EOF
	[ "$(jq -r .rule.file "$ctx")" = "$RULES/ctx.json" ] || fail "rule file in $ctx: $(jq -r .rule.file "$ctx")"
	[ "$(jq -r .rule.line "$ctx")" = 1 ] || fail "rule line in $ctx: $(jq -r .rule.line "$ctx")"
	[ "$(jq -r .process.name "$ctx")" = MemSpike ] || fail "process name in $ctx: $(jq -r .process.name "$ctx")"
	[ "$(jq -r .process.cmdline "$ctx")" = "$T/bin/$NAME --tag $TAG $EVIL" ] ||
		fail "command line in $ctx: $(jq -r .process.cmdline "$ctx")"
	[ "$(jq -r .process.pid "$ctx")" = "$P" ] || fail "pid in $ctx"
done

# The history of loh-size (each value holding until the next point): under
# 300 MB before the spike, over it for the whole sustain window and at the
# fire; the value that fired
# it over it too; the GCs of the process before the fire.
first=$(jq -r .context "$T/dumps.jsonl" | head -1)
$PY - "$first" <<'EOF' || fail "the history of $first does not show the crossing: $(jq -c '.history.series[] | select(.metric=="loh-size") | .points' "$first")"
import json, sys
c = json.load(open(sys.argv[1]))
cond = c["rule"]["conditions"][0]
thr, sustain, slot = cond["threshold"], cond["for_ms"], c["history"]["slot_ms"]
assert cond["metric"] == "loh-size" and thr == 300e6 and sustain == 1000, cond
assert cond["value"] > thr, cond
pts = next(s["points"] for s in c["history"]["series"] if s["metric"] == "loh-size")
before = [p for p in pts if p[0] <= 0]
assert any(p[3] < thr for p in before if p[0] < -sustain - slot), "never under the threshold before"
# Over it for the sustain window: the value that holds a slot into the window
# (the last point at or before it), and every point after.
hold = max(i for i, p in enumerate(before) if p[0] <= -sustain + slot)
assert before[hold][1] > thr and all(p[2] > thr for p in before[hold + 1:]), \
    "not over the threshold for the sustain window: %r" % before[hold:]
# A value holds until the next point: the one that holds at the fire.
assert before[-1][1] > thr, "the value at the fire is not over the threshold"
# The first slot over it lies one sustain window (within two slots and the
# runtime's 100 ms flush) before the fire.
last_under = max(i for i, p in enumerate(before) if p[1] < thr and p[0] < -sustain + slot)
cross = before[last_under + 1][0]
assert -sustain - 2 * slot - 100 <= cross <= -sustain + slot, "crossed at %d ms" % cross
assert len(c["gcs"]) > 0 and all(g["sizes"]["loh"] >= 0 for g in c["gcs"]), "no GC records"
print("history: crossed at %d ms, fire value %.0f MB, %d points, %d GCs" % (cross, cond["value"] / 1e6, len(pts), len(c["gcs"])))
EOF

# delete-oldest: a fifth spike removes the oldest dump and its context files.
stop_guard
oldest=$(jq -r .path "$T/dumps.jsonl" | head -1)
start_guard --store-max-count 3 --store-full delete-oldest
wait_journal attach 2 15 "\"pid\":$P" || fail "not attached again"
spike 5
wait_journal dump 4 30 "\"pid\":$P" || fail "the fifth spike was not dumped"
wait_journal dump-deleted 1 5 || fail "nothing deleted"
for f in "$oldest" "${oldest%.core}.json" "${oldest%.core}.svg"; do
	[ ! -e "$f" ] || fail "$f was not deleted with its dump"
done
[ -f "$skipped" ] || fail "the skipped dump's context went before an older dump"
[ "$(dumps_of "$P")" -eq 3 ] || fail "expected three dumps after delete-oldest, found $(dumps_of "$P")"
stop_guard

# show: why, when, the path to the threshold, the last GCs.
newest=$(ls -t "$DUMPS"/*.core | head -1)
"$DUMPWATCH" show "$newest" >"$T/show.txt" || fail "show failed: $(cat "$T/show.txt")"
for want in "ctx-spike" "loh-size > 300MB for 1s" "$P" "GC"; do
	grep_q -F -- "$want" "$T/show.txt" || fail "show lacks '$want': $(cat "$T/show.txt")"
done
grep_q -E '[▁▂▃▄▅▆▇█]{8}' "$T/show.txt" || fail "show has no sparkline: $(cat "$T/show.txt")"

# report: one page for the store, newest first, rendered by Chromium.
"$DUMPWATCH" report "$DUMPS" >"$T/report.txt" || fail "report failed: $(cat "$T/report.txt")"
grep_q -F "4 dumps" "$T/report.txt" || grep_q -F "4 " "$T/report.txt" || fail "report: $(cat "$T/report.txt")"
[ -f "$DUMPS/index.html" ] || fail "no index.html"
if grep -Eio '(src|href)="(https?:)?//[^"]*"|<script|@import|url\(' "$DUMPS/index.html"; then
	fail "the report fetches something or runs a script"
fi
$PY "$CHECK_RENDER" screenshot "$DUMPS/index.html" "$T/report.png" --expect ctx-spike --literal "$NAME" \
	--literal "$EVIL" --literal '<img src=x onerror=alert(1)>' --no-element script --no-element img ||
	fail "the report page does not render as expected"
$PY "$CHECK_RENDER" screenshot "${newest%.core}.svg" "$T/plot.png" --expect ctx-spike --expect "loh-size" ||
	fail "the plot does not render as expected"

# Bounds, by what is read and left out. show refuses a file over 4 MiB in one
# line, unread: a real context followed by NUL bytes (read, it would be "not
# JSON").
FIXTURE="$DW_SOURCE_DIR/tests/data/context/GcLab-4807-20261118T110640Z.json"
cp "$FIXTURE" "$T/huge.json"
truncate -s $((4 * 1024 * 1024 + 1)) "$T/huge.json"
set +e
"$DUMPWATCH" show "$T/huge.json" >"$T/show-huge.out" 2>&1
rc=$?
set -e
[ "$rc" = 1 ] || fail "show of a file over 4 MiB: status $rc: $(cat "$T/show-huge.out")"
[ "$(wc -l <"$T/show-huge.out")" = 1 ] &&
	grep_q -F "huge.json: too large for a dump context (4194305 bytes; at most 4194304), not read" "$T/show-huge.out" ||
	fail "show of a file over 4 MiB: $(cat "$T/show-huge.out")"
# report: ten real contexts padded with white space to 3.9 MiB each (39 MiB,
# past the 32 MiB a report reads), modified a minute apart, ctx-0 oldest, and
# the huge file newest. The huge one is refused unread; the eight newest fit
# in 32 MiB and are shown; the two oldest are named as left out, in one line.
mkdir "$T/bounds"
$PY - "$FIXTURE" "$T/bounds" <<'EOF'
import os, sys
text = open(sys.argv[1]).read().rstrip()
pad = 3900 * 1024 - len(text) - 1
for i in range(10):
    name = os.path.join(sys.argv[2], "ctx-%d.json" % i)
    with open(name, "w") as f:
        f.write(text.replace('"fired_unix_ms": 1795000000123', '"fired_unix_ms": %d' % (1795000000000 + i)))
        f.write(" " * pad + "\n")
    os.utime(name, (1795000000 + 60 * i, 1795000000 + 60 * i))
EOF
mv "$T/huge.json" "$T/bounds/huge.json"
"$DUMPWATCH" report "$T/bounds" >"$T/bounds.out" 2>"$T/bounds.err" || fail "report failed: $(cat "$T/bounds.err")"
grep_q -Fx "wrote $T/bounds/index.html: 8 dumps (0 skipped, 0 failed), 2 files left out" "$T/bounds.out" ||
	fail "report over the total: $(cat "$T/bounds.out" "$T/bounds.err")"
grep_q -F "huge.json: too large for a dump context (4194305 bytes; at most 4194304), not read, skipped" "$T/bounds.err" ||
	fail "the huge file was not refused unread: $(cat "$T/bounds.err")"
[ "$(grep -c "left out" "$T/bounds.err")" = 1 ] &&
	grep_q -F "$T/bounds: 2 files left out of the page, the oldest, beyond the report's limits (32 MiB of contexts read): ctx-1.json, ctx-0.json" "$T/bounds.err" ||
	fail "what was left out is not named in one line: $(cat "$T/bounds.err")"
[ "$(grep -c '<article' "$T/bounds/index.html")" = 8 ] && ! grep_q -F 'ctx-1.json' "$T/bounds/index.html" &&
	grep_q -F "2 more files left out (the oldest)" "$T/bounds/index.html" ||
	fail "the page does not hold the eight newest and say two were left out"

# The heap summary on the page: the real context with one (tests/data/context,
# written before retained sizes were: none shown), the same made hostile (a
# type, a root and a type that keeps the most alive named with markup and a
# script, a heap_error with markup) and the same with retained sizes not
# computed (a reason with markup), rendered by Chromium: the tables and the
# path are there, the names show as text and smuggle in no element.
HEAPCTX="$DW_SOURCE_DIR/tests/data/context/GcLab-3033-20261128T130335Z.json"
mkdir "$T/heap"
cp "$HEAPCTX" "$T/heap/"
$PY - "$HEAPCTX" "$T/heap/hostile.json" "$T/heap/not-computed.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
evil = "<b>\"q'&</b><script>alert(1)</script>"
c["heap"]["types"][0]["type"] = "Evil" + evil
c["heap"]["paths"][0]["type"] = "Evil" + evil
c["heap"]["paths"][0]["root"] = "s_<img src=x onerror=alert(1)> (static)"
c["heap"]["retained"] = {"computed": True, "passes": 2, "unreachable_bytes": 0, "types": [
    {"type": "System.Collections.Generic.List<System.Byte[]>", "retained_bytes": 104858296, "bytes": 32, "objects": 1},
    {"type": "Kept" + evil, "retained_bytes": 400000, "bytes": 400000, "objects": 10000}]}
c["heap_error"] = "<i>failed</i>"
c["fired_unix_ms"] += 1
json.dump(c, open(sys.argv[2], "w"))
c = json.load(open(sys.argv[1]))
c["heap"]["retained"] = {"computed": False,
                         "why": "the heap has 5000000 objects, more than the 4000000 <u>retained</u>"}
c["fired_unix_ms"] += 2
json.dump(c, open(sys.argv[3], "w"))
EOF
"$DUMPWATCH" report "$T/heap" >"$T/heap.out" 2>&1 || fail "report of the heap contexts failed: $(cat "$T/heap.out")"
grep_q -F "3 dumps (0 skipped, 0 failed)" "$T/heap.out" || fail "report of the heap contexts: $(cat "$T/heap.out")"
$PY "$CHECK_RENDER" screenshot "$T/heap/index.html" "$T/heap.png" --expect "s_entries (static)" \
	--expect "List<Byte[]>" --expect "HeapNode" --expect "System.Byte[]" --expect "228 other types" \
	--literal 'Evil<b>"q'"'"'&</b><script>alert(1)</script>' --literal 's_<img src=x onerror=alert(1)> (static)' \
	--literal "no summary: <i>failed</i>" \
	--expect "what they keep alive (retained: the objects only they hold, themselves included)" \
	--expect "System.Collections.Generic.List<System.Byte[]>" \
	--literal 'Kept<b>"q'"'"'&</b><script>alert(1)</script>' \
	--literal "retained sizes: not computed: the heap has 5000000 objects, more than the 4000000 <u>retained</u>" \
	--no-element script --no-element img --no-element b --no-element i --no-element u ||
	fail "the heap summary on the page does not render as expected"
# One card with retained sizes, one saying why there are none, and none on
# the card of the context written before them.
grep_q -F '<tr><td class="n">104.9MB</td><td class="n">32B</td><td><code>System.Collections.Generic.List&lt;System.Byte[]&gt;</code></td></tr>' \
	"$T/heap/index.html" || fail "no row of what the list keeps alive: $(grep -o 'class="retained">.*' "$T/heap/index.html")"
[ "$(grep -c 'what they keep alive' "$T/heap/index.html")" = 1 ] &&
	[ "$(grep -c 'retained sizes: not computed' "$T/heap/index.html")" = 1 ] ||
	fail "retained sizes on the cards: $(grep -o 'class="retained">[^<]*' "$T/heap/index.html")"
"$DUMPWATCH" show "$T/heap/hostile.json" >"$T/heap-show.txt" || fail "show of the hostile heap failed"
grep_q -F "heap summary: missing: <i>failed</i>" "$T/heap-show.txt" &&
	grep_q -F "      s_<img src=x onerror=alert(1)> (static) " "$T/heap-show.txt" &&
	grep_q -F "    104.9MB       32B  System.Collections.Generic.List<System.Byte[]>" "$T/heap-show.txt" ||
	fail "show of the hostile heap: $(cat "$T/heap-show.txt")"
echo "PASS: 3 dumps, 1 skipped, each with its context; delete-oldest took the oldest with its files; show and report render; show and report bounded; the heap summary renders with what it keeps alive, hostile names as text"
