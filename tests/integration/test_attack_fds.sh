#!/usr/bin/env bash
# Descriptors: an unprivileged user starts a few hundred tiny fake runtimes
# (tests/tools/fakert.c, --mode idle) that a rule matches, so that the guard
# attaches to each (an event stream and a pidfd: two descriptors apiece).
# (a) Soft limit low, hard limit high (prlimit): the guard raises its soft
#     limit, and a real process started after the fakes is attached and
#     dumped on its spike.
# (b) Soft limit = hard limit, low: a real process attached before the flood
#     is still served and dumped on a spike after it; the guard logs and
#     journals once (attach-paused) that it keeps its reserve, and once
#     (attach-resumed) when the fakes are gone; a process started then is
#     attached; the journal is complete and parses.
source "$(dirname "$0")/lib.sh"
: "${DW_FAKERT:?set by ctest: path of dw_fakert}"

make_user ATTACKER
TAG="fds$$"
# The attacker's fakes report the rule's name and live in a socket directory
# of their own, not in /tmp.
mkdir -m 1777 "$T/sock"
install -m 0755 "$DW_FAKERT" "$T/fakert" # the checkout may sit where the attacker cannot read
cat >"$RULES/r.json" <<JSON
{ "name": "fds-loh", "process": { "cmdline": "*$TAG*" }, "when": "loh-size > 100MB",
  "dump": { "type": "triage" }, "limits": { "max-dumps": 0, "cooldown": "1s" } }
JSON

# start_fakes N: N fakes as the attacker; waits until they all listen.
start_fakes() {
	local before
	before=$(find "$T/sock" -name 'dotnet-diagnostic-*' | wc -l)
	as_user ATTACKER env TMPDIR="$T/sock" bash -c '
		for i in $(seq "$1"); do "$2" --mode idle --entry "$3-fake" --cmdline "$3-fake" </dev/null >/dev/null 2>&1 & done' \
		_ "$1" "$T/fakert" "$TAG"
	wait_for "[ \$(find '$T/sock' -name 'dotnet-diagnostic-*' | wc -l) -ge $((before + $1)) ]" 60 ||
		fail "the fakes did not start"
}
stop_fakes() {
	pkill -KILL -U "$ATTACKER" 2>/dev/null || true
	wait_for "! pgrep -U '$ATTACKER' >/dev/null" 10 || fail "the fakes did not stop"
	rm -f "$T"/sock/dotnet-diagnostic-*
}
# start_limited NOFILE: the guard under prlimit --nofile=NOFILE.
start_limited() {
	cat >"$T/dw-limited" <<SH
#!/bin/sh
exec prlimit --nofile=$1 "$DUMPWATCH" "\$@"
SH
	chmod 0755 "$T/dw-limited"
	DUMPWATCH="$T/dw-limited" start_guard --socket-dir "$T/sock"
	grep -q "open files: soft limit" "$T/dw.out" || true
}
attached() { journal_count_with attach "\"pid\":$1,"; }

# (a) 128 open files at first, 4096 allowed; 150 fakes.
start_limited 128:4096
start_fakes 150
start_tagged "$TAG-a"
wait_journal attach 1 30 "\"pid\":${APP_PIDS[$TAG-a]}," || fail "(a) the real process was not attached"
grep -q "open files: soft limit 4096 (was 128)" "$T/dw.out" || fail "(a) the soft limit was not raised"
wait_for "[ \$(grep -c '\"event\":\"attach\"' '$JOURNAL') -ge 151 ]" 30 || fail "(a) the fakes were not all attached"
tagged_cmd "$TAG-a" "loh 150"
wait_journal dump 1 30 "\"pid\":${APP_PIDS[$TAG-a]}," || fail "(a) the real process was not dumped"
tagged_cmd "$TAG-a" "release"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "(a) exit status $DW_RC"
stop_fakes
echo "(a) soft limit raised from 128 to 4096: 150 fakes and the real process attached, the real one dumped"

# (b) 100 open files, no more allowed; a real process first, then 100 fakes.
# A journal and log of its own, so that a failure shows (b)'s alone.
: >"$JOURNAL"
cp "$T/dw.out" "$T/dw-a.out"
: >"$T/dw.out"
start_tagged "$TAG-b"
start_limited 100:100
wait_journal attach 1 15 "\"pid\":${APP_PIDS[$TAG-b]}," || fail "(b) the real process was not attached"
start_fakes 100
wait_journal attach-paused 1 30 || fail "(b) the reserve was not journaled"
wait_for "grep -q 'descriptors: .* not attaching pid' '$T/dw.out'" 10 || fail "(b) the reserve was not logged"
# Once the attachments under way have ended, the reserve is still whole: at
# most 100 - 32 open (attachments allowed together must not take more
# between them than was allowed).
settled=-1
for _ in $(seq 50); do
	n=$(grep -c '"event":"attach"' "$JOURNAL")
	[ "$n" -eq "$settled" ] && break
	settled=$n
	sleep 0.5
done
open_fds=$(find "/proc/$DW_PID/fd" -mindepth 1 -maxdepth 1 | wc -l)
[ "$open_fds" -le 68 ] || fail "(b) $open_fds descriptors open of 100 after the flood: the reserve of 32 was eaten into"
tagged_cmd "$TAG-b" "loh 150"
wait_journal dump 1 30 "\"pid\":${APP_PIDS[$TAG-b]}," || fail "(b) the real process was not dumped after the flood"
tagged_cmd "$TAG-b" "release"
fakes_attached=$(($(grep -c '"event":"attach"' "$JOURNAL") - 1))
stop_fakes
wait_journal attach-resumed 1 30 || fail "(b) attaching did not resume when the fakes were gone"
start_tagged "$TAG-c"
wait_journal attach 1 30 "\"pid\":${APP_PIDS[$TAG-c]}," || fail "(b) a process started after the flood was not attached"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "(b) exit status $DW_RC"
[ "$(journal_count attach-paused)" -eq 1 ] || fail "(b) attach-paused journaled $(journal_count attach-paused) times"
[ "$(journal_count attach-resumed)" -eq 1 ] || fail "(b) attach-resumed journaled $(journal_count attach-resumed) times"
[ "$(grep -c 'descriptors: .* not attaching pid' "$T/dw.out")" -eq 1 ] || fail "(b) the reserve was logged more than once"
[ "$(grep -c 'descriptors: .* attaching new processes again' "$T/dw.out")" -eq 1 ] || fail "(b) the resumption was not logged once"
jq -c . "$JOURNAL" >/dev/null || fail "(b) the journal does not parse"
tail -1 "$JOURNAL" | grep_q '"event":"stop"' || fail "(b) stop is not the last record"
[ "$(journal_count attach)" -eq "$(journal_count detach)" ] ||
	fail "(b) $(journal_count attach) attach records but $(journal_count detach) detach records"
[ "$(journal_count dump-failed)" -eq 0 ] || fail "(b) a dump failed"
echo "PASS: (a) soft limit raised, real process dumped beside 150 fakes; (b) at 100 descriptors," \
	"$fakes_attached fakes attached, $open_fds open, the reserve kept (paused and resumed once), the real process served and dumped"
