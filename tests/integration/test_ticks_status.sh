#!/usr/bin/env bash
# What the guard says of the allocation ticks near a threshold (--alloc-ticks
# near, the default): `dumpwatch status` (JSON and text) and the metrics
# textfile (dumpwatch_process_alloc_ticks). Two MemSpike processes: A guarded
# by 'loh-size > 400MB', B by a GC pause rule, which reads no tick.
#   - A holds 50 MB of LOH, far from 400 MB: "off", 0;
#   - A takes 250 MB more, near: "on", 1;
#   - B, all along: no alloc_ticks in status, no series in the textfile.
source "$(dirname "$0")/lib.sh"

A="near$$" B="pause$$"
start_tagged "$A"
start_tagged "$B"
cat >"$RULES/ticks.json" <<JSON
{ "rules": [
  { "name": "loh-big", "process": { "cmdline": "*--tag $A" }, "when": "loh-size > 400MB", "dump": { "type": "triage" } },
  { "name": "pauses", "process": { "cmdline": "*--tag $B" }, "when": "gc-pause > 100s", "dump": { "type": "triage" } }
] }
JSON
TF="$T/textfile"
mkdir -m 0755 "$TF"
MFILE="$TF/dumpwatch.prom"
start_guard --state-dir "$T/state" --counter-interval 200ms --metrics-file "$MFILE" --metrics-interval 1s
a=${APP_PIDS[$A]} b=${APP_PIDS[$B]}
wait_journal attach 1 15 "\"pid\":$a" || fail "$A not attached"
wait_journal attach 1 15 "\"pid\":$b" || fail "$B not attached"

# ticks PID: what status --json says of its allocation ticks ("absent" when nothing).
ticks() {
	"$DUMPWATCH" status --json --state-dir "$T/state" | jq -r --argjson p "$1" \
		'.processes[] | select(.pid == $p) | .alloc_ticks // "absent"'
}
# series PID: the value of its dumpwatch_process_alloc_ticks in the textfile ("" when none).
series() { awk -v p="pid=\"$1\"" '/^dumpwatch_process_alloc_ticks\{/ && index($0, p) { print $NF }' "$MFILE" 2>/dev/null; }

tagged_cmd "$A" "loh 50"
wait_tagged_done "$A" "loh 50" 30
# Far: the counters' samples bound the LOH under half the threshold.
wait_journal metrics-known 1 15 "\"pid\":$a" || fail "A's metrics never known"
wait_for '[ "$(ticks '"$a"')" = off ]' 15 || fail "status says A's ticks are $(ticks "$a") while far"
[ "$(journal_count ticks)" -eq 0 ] || fail "the ticks started while far: $(grep '"event":"ticks"' "$JOURNAL")"
"$DUMPWATCH" status --state-dir "$T/state" >"$T/status.txt"
grep -q "^$a .*  allocation ticks off (no rule near)$" "$T/status.txt" ||
	fail "status's text does not say A's ticks are off: $(cat "$T/status.txt")"
wait_for '[ "$(series '"$a"')" = 0 ]' 15 || fail "the textfile has A's ticks at '$(series "$a")' while far"

tagged_cmd "$A" "loh 250"
wait_tagged_done "$A" "loh 250" 30
wait_journal ticks 1 30 || fail "the ticks did not start near the threshold"
wait_for '[ "$(ticks '"$a"')" = on ]' 30 || fail "status says A's ticks are $(ticks "$a") while near"
"$DUMPWATCH" status --state-dir "$T/state" >"$T/status.txt"
grep -q "^$a .*  allocation ticks on (a rule is near)$" "$T/status.txt" ||
	fail "status's text does not say A's ticks are on: $(cat "$T/status.txt")"
wait_for '[ "$(series '"$a"')" = 1 ]' 15 || fail "the textfile has A's ticks at '$(series "$a")' while near"

[ "$(ticks "$b")" = absent ] || fail "status gives B, whose rule reads no tick, alloc_ticks $(ticks "$b")"
grep -q "^$b .*allocation ticks" "$T/status.txt" && fail "status's text speaks of B's ticks: $(grep "^$b " "$T/status.txt")"
[ -z "$(series "$b")" ] || fail "the textfile has a ticks series for B"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "guard exit status $DW_RC"
echo "PASS: A's ticks off while far (status, textfile 0), on when near (1); B has none"
