#!/usr/bin/env bash
# The dump file system full or nearly so, on a small tmpfs, with the real
# runtime and createdump:
# - no minimum free space: a heap dump bigger than the file system fails while
#   being written; it is journaled, no partial file is left, the space is
#   given back and the dump's context says what would have been dumped;
# - the default minimum (5%): the same dump is skipped before it starts, with
#   the estimate and what it would leave;
# - --store-max-count 2 --store-full delete-oldest: the oldest dump is deleted
#   (journaled) to make room; with skip, the third dump is skipped;
# - a process in its own mount namespace, whose runtime writes the dump in its
#   own TMPDIR (a small tmpfs there): skipped when that file system would run
#   short, whatever room the store has.
# After each the daemon is alive and the journal parses.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to mount a tmpfs"; exit 77; }
SMALL="$T/small"
mkdir -p "$SMALL"
mount -t tmpfs -o size=160m,mode=0711 tmpfs "$SMALL" 2>/dev/null || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
trap 'umount -l "$SMALL" 2>/dev/null || true; cleanup' EXIT
DUMPS=$SMALL

used_kb() { df -k --output=used "$SMALL" | tail -1 | tr -d ' '; }
start_tagged "big$$"
start_tagged "small$$"
cat >"$RULES/r.json" <<JSON
{ "rules": [
  { "name": "big-heap", "process": { "cmdline": "*--tag big$$" }, "when": "loh-size > 200MB",
    "dump": { "type": "withheap" }, "limits": { "max-dumps": 20, "cooldown": "3s" } },
  { "name": "small-triage", "process": { "cmdline": "*--tag small$$" }, "when": "loh-size > 100MB",
    "dump": { "type": "triage" }, "limits": { "max-dumps": 20, "cooldown": "3s" } } ] }
JSON
# spike TAG MB: holds MB of LOH until the next release.
spike() { tagged_cmd "$1" "loh $2"; }
release() {
	tagged_cmd "$1" "release"
	sleep 3.5 # the cooldown passes with the heap released
}

# 1. No minimum: createdump runs out of space mid-write.
start_guard --min-free 0
spike "big$$" 300
wait_journal dump-failed 1 60 "big-heap" || fail "full file system: no failure journaled"
release "big$$"
stop_guard
grep '"event":"dump-failed"' "$JOURNAL" | grep_q '"error":' || fail "no reason"
[ -z "$(not_context "$SMALL")" ] || fail "left on the full file system: $(not_context "$SMALL")"
# What would have been dumped, and why not: its context, once the space came back.
[ "$(context_outcomes "$SMALL")" = failed ] || fail "no context of the failed dump: $(ls -A "$SMALL")"
[ "$(used_kb)" -lt 1024 ] || fail "space not given back: $(used_kb) KB used"

# 2. The default minimum free space: skipped before it starts.
start_guard
spike "big$$" 300
wait_journal dump-skipped 1 30 "big-heap" || fail "not skipped"
release "big$$"
grep '"event":"dump-skipped"' "$JOURNAL" | grep_q 'skipped: the dump (estimated .*) would leave .* free on the dump file system (.*%), under the minimum 5% (--min-free)' ||
	fail "skip reason: $(grep dump-skipped "$JOURNAL")"
grep -q "for rule big-heap skipped: the dump (estimated" "$T/dw.out" || fail "no log line for the skip"
[ "$(journal_count dump-failed)" -eq 1 ] || fail "a skipped dump was also a failure"
stop_guard

# 3. At most two stored dumps, the oldest deleted to make room.
start_guard --store-max-count 2 --store-full delete-oldest
for i in 1 2 3; do
	spike "small$$" 150
	wait_journal dump "$i" 30 "small-triage" || fail "triage dump $i not taken"
	release "small$$"
done
[ "$(journal_count dump-deleted)" -eq 1 ] || fail "expected one deletion, got $(journal_count dump-deleted)"
first=$(grep '"event":"dump"' "$JOURNAL" | sed -n 1p | jq -r .path)
grep '"event":"dump-deleted"' "$JOURNAL" | jq -r .deleted | grep_q -xF "$first" || fail "not the oldest deleted"
[ "$(count_dumps)" -eq 2 ] || fail "expected 2 stored dumps, found $(count_dumps)"
for core in "$DUMPS"/*.core; do check_dump --type triage "$core" "${APP_PIDS[small$$]}"; done
stop_guard

# 4. Same limit, skip: nothing deleted, the dump skipped.
start_guard --store-max-count 2
spike "small$$" 150
wait_journal dump-skipped 2 30 || fail "over the count: not skipped"
release "small$$"
grep '"event":"dump-skipped"' "$JOURNAL" | tail -1 | grep_q 'the store already holds 2 dump(s), the maximum (--store-max-count 2)' ||
	fail "count skip reason"
[ "$(count_dumps)" -eq 2 ] || fail "stored dumps changed"
kill -0 "$DW_PID" || fail "daemon died"
stop_guard

# 5. The runtime of a process in another mount namespace writes in its own
# TMPDIR, a 40 MB tmpfs: a triage dump (estimated 64 MiB) does not fit there.
NSTMP="$T/nstmp"
mkdir -m 0777 "$NSTMP"
# Its tree does not show our store (another tmpfs over it), as in a container.
start_tagged "ns$$" unshare --mount sh -c "mount -t tmpfs -o size=40m,mode=1777 tmpfs '$NSTMP' && mount -t tmpfs tmpfs '$SMALL' && TMPDIR='$NSTMP' exec \"\$@\"" sh
cat >"$RULES/ns.json" <<JSON
{ "rules": [ { "name": "ns-triage", "process": { "cmdline": "*--tag ns$$" }, "when": "loh-size > 100MB",
               "dump": { "type": "triage" } } ] }
JSON
start_guard
NSPID=${APP_PIDS[ns$$]}
wait_journal attach 1 20 "\"pid\":$NSPID" || fail "namespaced process not attached"
spike "ns$$" 150
wait_journal dump-skipped 1 30 "ns-triage" || fail "staging file system: not skipped"
grep '"event":"dump-skipped"' "$JOURNAL" | grep ns-triage | grep_q "would leave 0B free on the file system of $NSTMP in the mount namespace of process $NSPID" ||
	fail "staging skip reason: $(grep dump-skipped "$JOURNAL" | tail -1)"
[ -z "$(ls -A "/proc/$NSPID/root$NSTMP" | grep '^\.dumpwatch-')" ] || fail "staging directory left"
kill -0 "$DW_PID" || fail "daemon died"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC"
[ "$(count_partials)" -eq 0 ] || fail "partial files left"
jq -c . "$JOURNAL" >/dev/null || fail "journal does not parse"
echo "failure on the full file system: $(grep "\"event\":\"dump-failed\"" "$JOURNAL" | jq -r .error | head -1)"
echo "PASS: full tmpfs (failed mid-write, nothing left), minimum free (skipped), max count (oldest deleted / skipped), the target's own TMPDIR too small (skipped)"
