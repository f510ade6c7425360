#!/usr/bin/env bash
# Allocation by type. MemSpike allocates 400 byte[] of 1 MB in the LOH, then
# 30,000 byte[] of 1,000 bytes (30 MB in the SOH), then 20 pinned byte[] of
# 1 MB in the POH, the last of which fires 'poh-size > 15MB', with the
# allocation ticks taken from the attach on (--alloc-ticks always: by default
# they come only once a rule is near its threshold). The dump's context names
# System.Byte[] with its LOH bytes within 1 % of the 400 x 1,000,024 bytes
# allocated (each 1 MB array is a tick of its own), its POH bytes between
# the 15 MB that fired and the 20 MB allocated, its SOH bytes close to the
# 30 MB (a sample: a tick per ~100 KB), and the LOH first; `dumpwatch show`
# lists it. Then `dumpwatch counters` on the same process sees a new
# 100 x 1 MB in the LOH as System.Byte[], loh, within 1 %.
source "$(dirname "$0")/lib.sh"
start_app
start_dw --pid "$APP_PID" --when 'poh-size > 15MB' --alloc-ticks always -t triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
app_cmd "loh 400"
wait_for "grep -q 'done loh 400' '$T/app.out'" 60 || fail "MemSpike did not allocate 400 MB"
app_cmd "soh 30"
wait_for "grep -q 'done soh 30' '$T/app.out'" 60 || fail "MemSpike did not allocate 30 MB"
app_cmd "poh 20"
wait_dw 90
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC, expected 0: $(tail -5 "$T/dw.out")"
core=$(find "$DUMPS" -name '*.core')
ctx="${core%.core}.json"
[ -f "$ctx" ] || fail "no context beside the dump: $(ls -A "$DUMPS")"
jq -c '.allocations | del(.types) + {types: [.types[:5][] | [.type, .kind, .bytes, .ticks]]}' "$ctx"

/usr/bin/python3 - "$ctx" "$DW_SOURCE_DIR/examples/dump-context.schema.json" <<'EOF' || fail "the allocations of $ctx: $(jq -c .allocations "$ctx")"
import json, sys, jsonschema
c = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator(json.load(open(sys.argv[2]))).validate(c)
a = c["allocations"]
by = {(t["type"], t["kind"]): t for t in a["types"]}
MB = 1_000_024
loh = by[("System.Byte[]", "loh")]
assert abs(loh["bytes"] - 400 * MB) <= 0.01 * 400 * MB, loh
assert loh["ticks"] >= 400, loh
assert a["types"][0] is loh, a["types"][0]
poh = by[("System.Byte[]", "poh")]
assert 15 * MB <= poh["bytes"] <= 20 * MB * 1.01, poh
soh = by[("System.Byte[]", "soh")]
assert 0.8 * 30e6 <= soh["bytes"] <= 1.2 * 30e6, soh
assert abs(loh["share"] - loh["bytes"] / a["bytes"]) < 1e-3, (loh, a["bytes"])
assert a["window_ms"] == c["history"]["window_ms"], a
assert a["untracked_bytes"] == 0 and a["types_max"] == 256, a
print(f"context: System.Byte[] loh {loh['bytes']} bytes in {loh['ticks']} ticks "
      f"({(loh['bytes'] / (400 * MB) - 1) * 100:+.3f} % of 400 x {MB}), "
      f"poh {poh['bytes']}, soh {soh['bytes']} ({(soh['bytes'] / 30e6 - 1) * 100:+.1f} % of 30 MB)")
EOF
"$DUMPWATCH" show "$ctx" >"$T/show.txt" || fail "show failed"
grep -A3 '^allocation by type' "$T/show.txt"
grep -q '^allocation by type (allocation ticks from -' "$T/show.txt" || fail "show has no allocation by type"
grep -A1 '^      bytes  share kind  type' "$T/show.txt" | grep -qE '^ +40[0-9]\.[0-9]MB +[0-9.]+%  loh  System\.Byte\[\]$' ||
	fail "show does not list the LOH's byte[] first: $(grep -A3 '^allocation by type' "$T/show.txt")"

# counters: the same process, a new 100 MB in the LOH.
"$DUMPWATCH" counters --pid "$APP_PID" --format json --interval 1s >"$T/counters.jsonl" 2>"$T/counters.err" &
CPID=$!
PIDS+=("$CPID")
wait_for "[ -s '$T/counters.jsonl' ]" 30 || fail "counters printed nothing: $(cat "$T/counters.err")"
app_cmd "loh 100"
wait_for "grep -q 'done loh 100' '$T/app.out'" 60 || fail "MemSpike did not allocate 100 MB"
seen() {
	tail -1 "$T/counters.jsonl" | jq -e '[.alloc_types[] | select(.type == "System.Byte[]" and .kind == "loh" and
		.bytes >= 0.99 * 100 * 1000024)] | length == 1' >/dev/null
}
wait_for seen 30 || fail "counters does not show the 100 MB: $(tail -1 "$T/counters.jsonl" | jq -c .alloc_types)"
kill "$CPID"
wait "$CPID" 2>/dev/null || true
bytes=$(tail -1 "$T/counters.jsonl" | jq '.alloc_types[] | select(.type == "System.Byte[]" and .kind == "loh") | .bytes')
[ "$bytes" -le $((101 * 1000024)) ] || fail "counters shows $bytes bytes of LOH byte[] for 100 x 1,000,024"
[ "$(tail -1 "$T/counters.jsonl" | jq .alloc_types_window_s)" = 300 ] || fail "counters' window is not 5 minutes"
echo "PASS: allocation by type: the context names System.Byte[] in the LOH, POH and SOH; counters saw $bytes bytes of LOH byte[] for 100 x 1,000,024"
