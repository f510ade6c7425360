#!/usr/bin/env bash
# A fake runtime (tests/tools/fakert.c) that answers the diagnostics protocol
# and then sends garbage, stalls inside a block, closes mid-block, claims a
# 2 GB block, floods, or answers ProcessInfo with a broken reply:
# - `--pid` on each: one clear line naming the pid and what was wrong, exit 4
#   (2 for the broken reply), within bounded time (a stall: 10 s);
# - the flood: kept up with, dumpwatch's memory stays bounded;
# - the guard with all six beside a real MemSpike: every bad session ends with
#   a journaled reason, the daemon stays up with bounded memory while the flood
#   goes on, the real process is still dumped, the journal parses.
source "$(dirname "$0")/lib.sh"
: "${DW_FAKERT:?set by ctest: path of dw_fakert}"
TRACE="$DW_SOURCE_DIR/tests/data/gc-alloc-counters.nettrace"
# An ASan build carries shadow memory: a looser bound there.
RSS_CAP_KB=65536
if ldd "$DUMPWATCH" | grep_q libasan; then RSS_CAP_KB=524288; fi

declare -A FAKE
FAKES=()
start_fake() {
	"$DW_FAKERT" --mode "$1" --trace "$TRACE" >"$T/fake.$1.out" 2>&1 &
	FAKE[$1]=$!
	PIDS+=("$!")
	FAKES+=("$!")
	wait_for "grep -q ready '$T/fake.$1.out'" 10 || fail "fake $1 did not start: $(cat "$T/fake.$1.out")"
}
trap 'for p in "${FAKES[@]}"; do rm -f /tmp/dotnet-diagnostic-$p-*-socket; done; cleanup' EXIT
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

for m in garbage stall truncate huge flood badreply; do start_fake "$m"; done

# 1. Watch mode, one fake at a time.
expect() { # MODE EXIT PATTERN
	local out rc
	set +e
	out=$(timeout 30 "$DUMPWATCH" --pid "${FAKE[$1]}" --when 'loh-size > 1GB' 2>&1)
	rc=$?
	set -e
	[ "$rc" -eq "$2" ] || fail "$1: exit $rc, expected $2: $out"
	echo "$out" | grep_q "error: .*$3" || fail "$1: no line matching '$3': $out"
	echo "$1: $(echo "$out" | grep error:)"
}
expect garbage 4 "bad event stream from pid ${FAKE[garbage]}: offset 101: expected the EndObject tag"
expect truncate 4 "event stream of pid ${FAKE[truncate]} ended early: .*stream ended inside the EventBlock"
expect huge 4 "bad event stream from pid ${FAKE[huge]}: .* of 2147483632 bytes exceeds the limit of 16777216 bytes"
expect badreply 2 "ProcessInfo3: the runtime sent a malformed reply"
expect stall 4 "event stream of pid ${FAKE[stall]} stalled: nothing for 1[0-9] s in the middle of a block"

"$DUMPWATCH" --pid "${FAKE[flood]}" --when 'loh-size > 1GB' >"$T/flood.out" 2>&1 &
FLOOD_DW=$!
PIDS+=("$FLOOD_DW")
max=0
for i in $(seq 1 10); do
	sleep 0.5
	kill -0 "$FLOOD_DW" || fail "dumpwatch died under the flood: $(cat "$T/flood.out")"
	r=$(rss_kb "$FLOOD_DW")
	((r > max)) && max=$r
done
((max < RSS_CAP_KB)) || fail "flood: RSS reached $max KB"
kill -INT "$FLOOD_DW"
set +e
wait "$FLOOD_DW"
rc=$?
set -e
[ "$rc" -eq 130 ] || fail "flood: exit $rc after SIGINT: $(cat "$T/flood.out")"
echo "flood: watch mode max RSS $max KB over 5 s"

# 2. The guard: all six beside a real process.
start_tagged "real$$"
cat >"$RULES/r.json" <<JSON
{ "rules": [
  { "name": "fake", "process": { "cmdline": "*dw_fakert --mode*" }, "when": "loh-size > 1GB" },
  { "name": "real-loh", "process": { "cmdline": "*--tag real$$" }, "when": "loh-size > 100MB",
    "dump": { "type": "triage" } } ] }
JSON
start_guard
wait_journal attach 1 15 "\"pid\":${APP_PIDS[real$$]}" || fail "real process not attached"
for m in garbage truncate huge; do
	wait_journal session-failed 1 15 "\"pid\":${FAKE[$m]}," || fail "guard: no session failure for $m"
done
wait_journal session-failed 1 30 "\"pid\":${FAKE[stall]}," || fail "guard: stall not detected"
grep '"event":"session-failed"' "$JOURNAL" | grep -F "\"pid\":${FAKE[stall]}," | grep_q 'stalled: nothing for' ||
	fail "guard: stall reason"
wait_journal attach-failed 1 15 "\"pid\":${FAKE[badreply]}," || fail "guard: broken reply not journaled"
grep '"event":"attach"' "$JOURNAL" | grep_q -F "\"pid\":${FAKE[flood]}," || fail "guard: flood not attached"
max=0
for i in $(seq 1 6); do
	sleep 0.5
	kill -0 "$DW_PID" || fail "guard died"
	r=$(rss_kb "$DW_PID")
	((r > max)) && max=$r
done
((max < RSS_CAP_KB)) || fail "guard under flood: RSS reached $max KB"
tagged_cmd "real$$" "loh 150"
wait_journal dump 1 30 "\"pid\":${APP_PIDS[real$$]}" || fail "real process not dumped during the flood"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "guard exit status $DW_RC"
jq -c . "$JOURNAL" >/dev/null || fail "journal does not parse"
echo "PASS: six hostile runtimes handled (watch and guard), guard max RSS $max KB under flood, real process dumped"
