#!/usr/bin/env bash
# A heap snapshot from a process that lies. A fake runtime (dw_fakert) serves
# a heap walk recorded from .NET 10 in which the type name "HeapNode" was
# replaced by terminal and HTML controls of the same length, or a stream that
# is garbage, stops mid-block or never ends:
# - `dumpwatch heap` prints the name escaped (no raw control byte reaches the
#   terminal), and --json carries it as a JSON string;
# - a .gcdump written from it is read by dotnet-gcdump;
# - garbage, a stall and a silent runtime each end the snapshot with one line
#   that says what happened, within the snapshot's time limit (--timeout);
# - the class that declares a static is read from the assemblies the process
#   maps: the fake maps a copy of GcLab.dll whose class "Cache" is renamed to
#   terminal and HTML controls; the path of the static s_entries names it,
#   escaped in the text, one JSON string in --json, and dotnet-gcdump still
#   reads the .gcdump that carries it.
source "$(dirname "$0")/lib.sh"
: "${DW_FAKERT:?set by ctest: path of dw_fakert}"
command -v jq >/dev/null || fail "jq missing (scripts/setup.sh installs it)"
command -v python3 >/dev/null || fail "python3 missing"
SRC="$DW_SOURCE_DIR/tests/data/heap-net10.nettrace"
HOSTILE=$'\ec\a\n<i>x' # 8 characters, as "HeapNode"
python3 - "$SRC" "$T/hostile.nettrace" "$HOSTILE" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
old, new = "HeapNode".encode("utf-16-le"), sys.argv[3].encode("utf-16-le")
assert len(old) == len(new) and old in data, "no HeapNode in the trace"
open(sys.argv[2], "wb").write(data.replace(old, new))
PY

declare -A FAKE
FAKES=()
# start_fake MODE TRACE [NAME [OPTION...]]: FAKE[NAME] (NAME defaults to
# MODE) is a fake runtime of that mode, ready.
start_fake() {
	local mode=$1 trace=$2 name=${3:-$1}
	shift $(($# > 3 ? 3 : $#))
	"$DW_FAKERT" --mode "$mode" --trace "$trace" "$@" >"$T/fake.$name.out" 2>&1 &
	FAKE[$name]=$!
	PIDS+=("$!")
	FAKES+=("$!")
	wait_for "grep -q ready '$T/fake.$name.out'" 10 || fail "fake $name did not start: $(cat "$T/fake.$name.out")"
}
trap 'for p in "${FAKES[@]}"; do rm -f /tmp/dotnet-diagnostic-$p-*-socket; done; cleanup' EXIT

# 1. The hostile name, escaped.
start_fake replay "$T/hostile.nettrace"
"$DUMPWATCH" heap --timeout 60s "${FAKE[replay]}" >"$T/heap.txt" 2>"$T/heap.err" ||
	fail "heap of the replayed walk failed: $(cat "$T/heap.err")"
! grep -q $'[\e\a]' "$T/heap.txt" "$T/heap.err" || fail "a raw ESC or BEL reached the output"
grep -q 'HeapLeaf' "$T/heap.txt" || fail "the walk's other types are missing: $(head -20 "$T/heap.txt")"
grep -qF '\x1bc\x07\n<i>x' "$T/heap.txt" ||
	fail "the hostile name is not shown escaped: $(grep -n 'i>' "$T/heap.txt" | head -3)"
"$DUMPWATCH" heap --json --timeout 60s --gcdump "$T/hostile.gcdump" "${FAKE[replay]}" >"$T/heap.json" 2>"$T/heap.err" ||
	fail "heap --json failed: $(cat "$T/heap.err")"
jq -e --arg n "$HOSTILE" '[.types[] | select(.type == $n)] | length == 1' "$T/heap.json" >/dev/null ||
	fail "the hostile name is not one JSON string: $(jq -c '[.types[].type]' "$T/heap.json" | head -c 400)"
report_table "$T/hostile.gcdump" "$T/report.txt"
grep -q 'HeapLeaf' "$T/report.txt" || fail "dotnet-gcdump did not read the hostile walk's file"

# 2. An assembly whose metadata lies: the class that declares s_entries is
# named with controls (5 bytes, as "Cache").
OWNER=$'\e]\n<b'
python3 - "$DW_SOURCE_DIR/tests/data/assemblies/GcLab.dll" "$T/Hostile.dll" "$OWNER" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
old, new = b"\0Cache\0", b"\0" + sys.argv[3].encode() + b"\0"
assert len(old) == len(new) and data.count(old) == 1, "no Cache in the assembly's strings"
open(sys.argv[2], "wb").write(data.replace(old, new))
PY
start_fake replay "$SRC" mapped --map "$T/Hostile.dll"
MAPPED=${FAKE[mapped]}
grep -q "Hostile.dll" "/proc/$MAPPED/maps" || fail "the fake does not map the assembly"
"$DUMPWATCH" heap --timeout 60s "$MAPPED" >"$T/owner.txt" 2>"$T/owner.err" ||
	fail "heap of the fake with an assembly failed: $(cat "$T/owner.err")"
! grep -q $'[\e]' "$T/owner.txt" "$T/owner.err" || fail "a raw ESC reached the output"
grep -qF '    \x1b]\n<b.s_entries (static) → System.Collections.Generic.List<System.Byte[]>' "$T/owner.txt" ||
	fail "the hostile class is not shown escaped: $(grep -A3 'What holds' "$T/owner.txt")"
grep -qF '    HeapNode.s_root (static)' "$T/owner.txt" && fail "s_root named with its value's type"
grep -qF '    Graph.s_root (static)' "$T/owner.txt" || fail "Graph.s_root not named: $(grep -A12 'What holds' "$T/owner.txt")"
"$DUMPWATCH" heap --json --timeout 60s --gcdump "$T/owner.gcdump" "$MAPPED" >"$T/owner.json" 2>"$T/owner.err" ||
	fail "heap --json of the fake with an assembly failed: $(cat "$T/owner.err")"
jq -e --arg r "$OWNER.s_entries (static)" '[.paths[] | select(.root == $r)] | length == 1' "$T/owner.json" >/dev/null ||
	fail "the hostile class is not one JSON string: $(jq -c '[.paths[].root]' "$T/owner.json")"
report_table "$T/owner.gcdump" "$T/owner-report.txt"
grep -q 'HeapLeaf' "$T/owner-report.txt" || fail "dotnet-gcdump did not read the gcdump with the hostile class"
echo "hostile class: $(grep -F 's_entries (static)' "$T/owner.txt" | head -1)"

# 3. Streams that end badly: one line each, with what happened.
start_fake garbage "$SRC"
start_fake stall "$SRC"
start_fake idle "$SRC"
for m in garbage stall idle; do
	set +e
	"$DUMPWATCH" heap --timeout 3s "${FAKE[$m]}" >"$T/$m.out" 2>"$T/$m.err"
	rc=$?
	set -e
	[ "$rc" -ne 0 ] || fail "heap of the $m runtime succeeded: $(head -5 "$T/$m.out")"
	[ "$(grep -c . "$T/$m.err")" -eq 1 ] || fail "$m: not one line: $(cat "$T/$m.err")"
	echo "$m: rc $rc: $(cat "$T/$m.err")"
done
grep -qi 'cannot be read' "$T/garbage.err" || fail "garbage: $(cat "$T/garbage.err")"
grep -qi 'within 3 s' "$T/stall.err" || fail "stall: $(cat "$T/stall.err")"
grep -qi 'within 3 s' "$T/idle.err" || fail "idle: $(cat "$T/idle.err")"
echo "PASS"
