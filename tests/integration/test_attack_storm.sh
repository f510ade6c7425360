#!/usr/bin/env bash
# A storm of planted names: an unprivileged user plants 3000 listener-less
# socket files named for the next pids in a 1777 directory (the TMPDIR of the
# processes that matter, given to the guard with --socket-dir), replaces 300
# of them a second, and starts 10 short-lived processes a second there
# (tests/tools/storm.py). A real process started during the storm in that
# directory is attached and dumped. Structure, not time: the guard's work
# (the discovery counters of its stop record) does not grow per name: no
# directory listing outside its full scans, full scans only at start and at
# most every 5 s when inotify lost names, and no more pid checks than names.
# (Timings under this storm are measured by tests/bench/storm.sh.)
source "$(dirname "$0")/lib.sh"
: "${DW_SOURCE_DIR:?set by ctest}"

make_user ATTACKER
TAG="storm$$"
mkdir -m 1777 "$T/storm"
install -m 0644 "$DW_SOURCE_DIR/tests/tools/storm.py" "$T/storm.py"
cat >"$RULES/r.json" <<JSON
{ "name": "storm-loh", "process": { "cmdline": "*--tag $TAG*" }, "when": "loh-size > 100MB",
  "dump": { "type": "triage" } }
JSON
start_guard --socket-dir "$T/storm"
t0=$SECONDS
: >"$T/storm.log"
chmod 0666 "$T/storm.log"
as_user ATTACKER /usr/bin/python3 "$T/storm.py" "$T/storm" --names 3000 --churn 300 --young 10 --life 0.5 \
	--seconds 12 --ready "$T/storm.log" &
PIDS+=("$!")
wait_for "grep -q ready '$T/storm.log'" 60 || fail "the storm did not start: $(cat "$T/storm.log")"

start_tagged "$TAG" env TMPDIR="$T/storm"
P=${APP_PIDS[$TAG]}
wait_journal attach 1 20 "\"pid\":$P," || fail "the real process was not attached during the storm"
tagged_cmd "$TAG" "loh 150"
wait_journal dump 1 30 "\"pid\":$P," || fail "the real process was not dumped during the storm"
wait_for "grep -q done '$T/storm.log'" 60 || fail "the storm did not end"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC"
elapsed=$((SECONDS - t0 + 1))

d=$(grep '"event":"stop"' "$JOURNAL" | tail -1 | jq -c '.discovery')
[ "$d" != null ] || fail "the stop record has no discovery counters"
get() { echo "$d" | jq ".$1"; }
names=$(get socket_names) full=$(get full_scans) outside=$(get listings_outside_full_scans) checks=$(get pid_checks)
((names >= 3000)) || fail "the guard saw $names names of the storm: $d"
((outside == 0)) || fail "$outside directory listings outside full scans: $d"
((full <= 2 + elapsed / 5)) || fail "$full full scans in $elapsed s: $d"
((checks <= names)) || fail "$checks pid checks for $names names: $d"
jq -c . "$JOURNAL" >/dev/null || fail "the journal does not parse"
echo "PASS: $(tail -1 "$T/storm.log"); real process attached and dumped;" \
	"$names names seen, $full full scans, $checks pid checks, no listing outside full scans ($d)"
