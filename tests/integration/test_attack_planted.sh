#!/usr/bin/env bash
# Planted sockets: a victim's .NET process is started stopped before its
# runtime exists (sh -c 'kill -STOP $$; exec ...'), so its pid and start time
# are known while it has no socket yet, and the guard, already running with a
# rule that matches it, sees it in that gap.
# 1. Another user (the attacker) plants socket files under the victim's pid
#    in its socket directory (a 1777 directory, like /tmp): one nobody
#    listens on, one the attacker listens on, and a symbolic link to that
#    one. None is a candidate (not the victim's uid, or not a socket): the
#    guard never connects to them, says so (once per path), and when the
#    process is continued it attaches to its real socket and dumps it.
# 2. The same with sockets of the victim's own uid, one dead and one served by
#    another of its processes: the guard tries them, is refused, and does not
#    keep them; the real socket that comes later is attached.
# (The runtime's own name, {pid}-{starttime}, cannot be planted to any
# effect but blinding the runtime itself: the runtime does not replace a file
# that has its name, in /tmp or elsewhere, and runs without a diagnostics
# port. The guard then says once that the socket under that name belongs to
# another user.)
source "$(dirname "$0")/lib.sh"

make_user ATTACKER
make_user VICTIM
TAG="planted$$"
mkdir -m 1777 "$T/shared"
cat >"$RULES/r.json" <<JSON
{ "name": "planted-loh", "process": { "cmdline": "*--tag $TAG-*" }, "when": "loh-size > 100MB",
  "dump": { "type": "triage" } }
JSON
start_guard --socket-dir "$T/shared"

# The planter (tests/tools/planter.py), readable by the users who run it.
install -m 0644 "$DW_SOURCE_DIR/tests/tools/planter.py" "$T/planter.py"

# start_stopped NAME: the victim's MemSpike --tag $TAG-NAME, stopped before
# its exec; sets VPID and VSTART (its pid and start time).
start_stopped() {
	local name=$1 fd
	mkfifo -m 0666 "$T/$name.cmd"
	exec {fd}<>"$T/$name.cmd"
	APP_FD[$name]=$fd
	: >"$T/$name.out"
	chmod 0666 "$T/$name.out"
	# setpriv itself (not as_user, a function): $! must be the process.
	setpriv --reuid="$VICTIM_UID" --regid="$VICTIM_GID" --clear-groups env TMPDIR="$T/shared" \
		sh -c 'kill -STOP $$; exec "$0" "$@"' "$APP" --tag "$TAG-$name" <"$T/$name.cmd" >"$T/$name.out" 2>&1 &
	VPID=$!
	PIDS+=("$VPID")
	wait_for "[ \"\$(awk '{print \$3}' /proc/$VPID/stat 2>/dev/null)\" = T ]" 10 || fail "$name did not stop"
	VSTART=$(awk '{print $22}' "/proc/$VPID/stat")
}
# plant ROLE LOG ITEMS...: runs the planter as that user; waits until it is ready.
plant() {
	local role=$1 log=$2
	shift 2
	: >"$log"
	chmod 0666 "$log"
	as_user "$role" /usr/bin/python3 "$T/planter.py" "$log" "$@" &
	PIDS+=("$!")
	wait_for "grep -q ready '$log'" 10 || fail "the planter did not start: $(cat "$log")"
}
# resume NAME PID: continues the stopped process; waits for its runtime.
resume() {
	kill -CONT "$2"
	wait_for "grep -q ready '$T/$1.out'" 15 || fail "$1 did not start: $(cat "$T/$1.out")"
}
sock() { echo "$T/shared/dotnet-diagnostic-$1-$2-socket"; }

# 1. The attacker's sockets under the victim's pid.
start_stopped one
P1=$VPID S1=$VSTART
DEAD1=$(sock "$P1" $((S1 + 1))) LIVE1=$(sock "$P1" $((S1 + 2))) LINK1=$(sock "$P1" $((S1 + 3)))
plant ATTACKER "$T/planter1.log" "dead:$DEAD1" "live:$LIVE1" "link:$LINK1:$LIVE1"
# The guard sees the names while the process has no runtime yet, and says
# so (one line per process and path: one of the two suffices to warn).
wait_for "grep -qE 'pid $P1: ignoring ($DEAD1|$LIVE1): that socket belongs to uid $ATTACKER_UID, not to uid $VICTIM_UID of process $P1' '$T/dw.out'" 10 ||
	fail "the guard did not see the planted sockets"
resume one "$P1"
wait_journal attach 1 20 "\"pid\":$P1," || fail "1: the real runtime was not attached"
echo "loh 150" >&"${APP_FD[one]}"
wait_journal dump 1 30 "\"pid\":$P1," || fail "1: the victim was not dumped"
[ "$(journal_count_with attach-failed "\"pid\":$P1,")" -eq 0 ] || fail "1: the guard tried a planted socket"
if grep -q "^connection from $DW_PID " "$T/planter1.log"; then
	fail "1: the guard connected to the attacker's socket: $(cat "$T/planter1.log")"
fi
for s in "$DEAD1" "$LIVE1"; do
	[ "$(grep -cF "pid $P1: ignoring $s:" "$T/dw.out")" -le 1 ] || fail "1: $s logged more than once"
done
grep -qF "$LINK1" "$T/dw.out" && fail "1: the symbolic link was taken for a socket"
echo "1: attacker's dead, live and linked sockets under pid $P1 skipped and said; real runtime attached and dumped"

# 2. Sockets of the victim's own uid under its pid, one dead, one served by
# another of its processes: tried, refused, not kept.
start_stopped two
P2=$VPID S2=$VSTART
DEAD2=$(sock "$P2" $((S2 + 1))) LIVE2=$(sock "$P2" $((S2 + 2)))
plant VICTIM "$T/planter2.log" "dead:$DEAD2"
plant VICTIM "$T/planter3.log" "live:$LIVE2"
wait_for "grep -qF 'pid $P2: ' '$T/dw.out' && grep -qF 'refusing $LIVE2: it is served by pid' '$T/dw.out'" 10 ||
	fail "the guard did not try the other process's socket"
resume two "$P2"
wait_journal attach 1 20 "\"pid\":$P2," || fail "2: the real runtime was not attached"
echo "loh 150" >&"${APP_FD[two]}"
wait_journal dump 1 30 "\"pid\":$P2," || fail "2: the victim was not dumped"
if grep "^connection from $DW_PID " "$T/planter3.log" | grep_q -v ": 0 bytes$"; then
	fail "2: bytes reached the other process's socket: $(cat "$T/planter3.log")"
fi
[ "$(grep -cF "refusing $LIVE2:" "$T/dw.out")" -eq 1 ] || fail "2: the refusal was not logged exactly once"

kill -0 "$DW_PID" || fail "guard died"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC"
jq -c . "$JOURNAL" >/dev/null || fail "the journal does not parse"
echo "PASS: planted sockets never shadowed the real ones: two victims attached and dumped" \
	"($(grep -c "^connection from $DW_PID " "$T/planter1.log") connections to the attacker's listener," \
	"$(grep -c "^connection from $DW_PID " "$T/planter3.log") refused connections to the same-uid one, 0 bytes)"
