#!/usr/bin/env bash
# Discovery with the real runtime: `dumpwatch ps` lists a plain process, one
# with its own TMPDIR, and one in its own pid and mount namespace with a
# private socket directory (as in a container); the namespaced one is watched and dumped
# by its host pid. A user who may not reach a process's socket gets one clear
# line and exit 2.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for namespaces and another user"; exit 77; }

start_app
PLAIN=$APP_PID

mkdir -m 0777 "$T/tmpdir"
mkfifo "$T/cmd2"
exec 4<>"$T/cmd2"
TMPDIR="$T/tmpdir" "$APP" <"$T/cmd2" >"$T/app2.out" 2>&1 &
OWN_TMP=$!
PIDS+=("$OWN_TMP")
wait_for "ls '$T/tmpdir'/dotnet-diagnostic-$OWN_TMP-*-socket >/dev/null 2>&1" 10 || fail "no socket in own TMPDIR"

mkfifo "$T/cmd3"
exec 5<>"$T/cmd3"
# Its socket directory is a tmpfs mounted inside its own mount namespace, so
# from here the directory looks empty and the socket is reachable only through
# /proc/PID/root. (Not over /tmp itself: the program may live under /tmp.)
mkdir -m 0777 "$T/nstmp"
unshare --fork --pid --mount --mount-proc sh -c 'mount -t tmpfs tmpfs "$1" && TMPDIR="$1" exec "$0"' "$APP" \
	"$T/nstmp" <"$T/cmd3" >"$T/app3.out" 2>&1 &
UNSHARE=$!
PIDS+=("$UNSHARE")
wait_for "grep -q ready '$T/app3.out'" 10 || fail "namespaced MemSpike did not start"
# unshare's child (the shell that exec'd MemSpike): pid 1 of its namespace.
CONTAINED=""
for p in $(pgrep -P "$UNSHARE"); do
	grep -qE '^NSpid:.*[[:space:]]1$' "/proc/$p/status" 2>/dev/null && CONTAINED=$p
done
[ -n "$CONTAINED" ] || fail "the namespaced MemSpike was not found"
PIDS+=("$CONTAINED")
grep -q 'ready pid=1 ' "$T/app3.out" || fail "not pid 1 in its namespace: $(cat "$T/app3.out")"
[ -z "$(ls -A "$T/nstmp")" ] || fail "the namespaced socket directory is visible from here"

wait_for "'$DUMPWATCH' ps --json | grep_q '\"pid\":$CONTAINED,'" 10 || fail "ps did not list the namespaced process"
"$DUMPWATCH" ps --json >"$T/ps.json"
"$DUMPWATCH" ps >"$T/ps.txt"
grep -q "\"pid\":$PLAIN,.*\"name\":\"MemSpike\".*\"runtime_version\":\"10\." "$T/ps.json" || fail "plain process: $(cat "$T/ps.json")"
grep "\"pid\":$OWN_TMP," "$T/ps.json" | grep_q "\"socket\":\"$T/tmpdir/dotnet-diagnostic-$OWN_TMP-" ||
	fail "own TMPDIR process: $(cat "$T/ps.json")"
grep "\"pid\":$CONTAINED," "$T/ps.json" | grep_q '"nspid":1,' || fail "namespaced process nspid: $(cat "$T/ps.json")"
grep -q "^$PLAIN  *MemSpike  *10\." "$T/ps.txt" || fail "table: $(cat "$T/ps.txt")"

# Watch and dump the namespaced process by its host pid: its runtime writes
# the dump in a directory dumpwatch makes in its own TMPDIR, which is moved
# into the store and removed.
start_dw --pid "$CONTAINED" --when 'loh-size > 100MB' --dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
echo "loh 150" >&5
wait_dw 30
[ "$DW_RC" -eq 0 ] || fail "namespaced target: exit $DW_RC"
core=$(find "$DUMPS" -name '*.core')
[ -n "$core" ] || fail "no dump of the namespaced process"
"$DW_CORECHECK" "$core" 1 >/dev/null || "$DW_CORECHECK" "$core" "$CONTAINED" >/dev/null || fail "bad core"
check_dump --type triage "$core" "1,$CONTAINED" # its runtime's path may not exist here: the DAC is found by build id
grep '"event":"dump"' "$JOURNAL" | grep_q '"via":"runtime"' || fail "expected the runtime path"
[ "$(stat -c '%U %a %h' "$core")" = "root 600 1" ] || fail "dump is $(stat -c '%U %a %h' "$core")"
[ -z "$(ls -A "/proc/$CONTAINED/root$T/nstmp" | grep '^\.dumpwatch-')" ] ||
	fail "left in the process's TMPDIR: $(ls -A "/proc/$CONTAINED/root$T/nstmp")"

# A user that may not connect to root's socket.
set +e
install -m 0755 "$DUMPWATCH" "$T/dumpwatch" # the checkout may sit where nobody cannot read
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$T/dumpwatch" "$PLAIN" 500 2>&1)
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "unreachable socket: exit $rc ($out)"
[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "expected one line: $out"
echo "$out" | grep_q -i "permission\|not allowed\|as root" || fail "unreachable message: $out"
echo "PASS: ps finds plain, own-TMPDIR and namespaced processes; namespaced one dumped; unreachable socket refused ($out)"
