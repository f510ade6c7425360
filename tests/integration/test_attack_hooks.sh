#!/usr/bin/env bash
# Hooks, attacked by a local user.
# (a) The dump a hook holds on descriptor 3 is root's (0600). An attacker
#     running as nobody, and one running as another user, try to take it
#     from the running hook (pidfd_getfd, /proc/PID/fd/3, /proc/PID/environ,
#     ptrace): every way fails, because the hook runs under a uid of its own
#     that no other process has. Root doing the same gets the dump, so the
#     attempt is aimed right. --hook-user nobody is refused at start; a named
#     user other processes run as is warned about.
# (b) A hook that leaves processes behind (setsid, a double fork with
#     setsid, a plain child) and exits, and one that does the same and hangs
#     until its timeout: by the time the run is journaled, nothing of either
#     is left, with a transient uid and with a named user.
# (c) 17 fake runtimes of the attacker, matched by a rule whose on-fire hook
#     holds its slot, do not keep the victim's hook from running: slots are
#     shared by the owners of the processes; the attacker's excess waits or
#     is dropped, journaled with the reason.
source "$(dirname "$0")/lib.sh"
: "${DW_FAKERT:?set by ctest: path of dw_fakert}"
[ "$(id -u)" -eq 0 ] || skip "needs root: hooks run as other users"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "needs Debian's python3 (/usr/bin/python3) for the attacker's system calls"
make_user ATTACKER
make_user HOOKER
ID="77$$"
HOOKS="$T/hooks"
mkdir -m 0755 "$HOOKS"
cat >"$HOOKS/hold.sh" <<EOF
#!/bin/sh
# Holds the dump (fd 3) and its context (fd 4) while the attacker tries.
echo "holding"
exec sleep 600.$ID
EOF
cat >"$HOOKS/leave.sh" <<EOF
#!/bin/sh
# Leaves three processes behind and exits at once: one in a session of its
# own, one double-forked into a session of its own (its parent, the
# subshell, is gone before the script goes on), one plain child.
setsid sleep 901.$ID </dev/null >/dev/null 2>&1 &
( setsid sleep 902.$ID </dev/null >/dev/null 2>&1 & )
sleep 903.$ID </dev/null >/dev/null 2>&1 &
echo "left three"
EOF
cat >"$HOOKS/hang.sh" <<EOF
#!/bin/sh
# Leaves two behind likewise and hangs until its timeout.
setsid sleep 904.$ID </dev/null >/dev/null 2>&1 &
( setsid sleep 905.$ID </dev/null >/dev/null 2>&1 & )
exec sleep 906.$ID
EOF
cat >"$HOOKS/quick.sh" <<'EOF'
#!/bin/sh
echo "victim's hook ran for $DUMPWATCH_PID"
EOF
chmod 0755 "$HOOKS"/*.sh
# The attacker's tools, where the attacker may read them.
mkdir -m 0755 "$T/bin"
cat >"$T/bin/steal.py" <<'EOF'
# steal.py PID [no-ptrace]: every way of taking fd 3 (the dump) of PID.
# Prints one line per way: "took N bytes MAGIC" or "refused: ERROR".
import ctypes, errno, os, sys
pid = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
SYS_pidfd_open, SYS_pidfd_getfd, PTRACE_ATTACH = 434, 438, 16
def took(fd, how):
    # From offset 0: a descriptor taken with pidfd_getfd shares its offset
    # with the hook's, which an earlier reader may have moved.
    data = b""
    while True:
        b = os.pread(fd, 1 << 20, len(data))
        if not b: break
        data += b
    print(f"{how}: took {len(data)} bytes {data[:4]!r}")
pidfd = libc.syscall(SYS_pidfd_open, pid, 0)
if pidfd < 0:
    print("pidfd_getfd: refused: pidfd_open: " + os.strerror(ctypes.get_errno()))
else:
    fd = libc.syscall(SYS_pidfd_getfd, pidfd, 3, 0)
    if fd < 0: print("pidfd_getfd: refused: " + os.strerror(ctypes.get_errno()))
    else: took(fd, "pidfd_getfd")
for how, path in (("proc fd", f"/proc/{pid}/fd/3"), ("environ", f"/proc/{pid}/environ")):
    try:
        fd = os.open(path, os.O_RDONLY)
        took(fd, how)
    except OSError as e:
        print(f"{how}: refused: {e.strerror}")
if len(sys.argv) > 2 and sys.argv[2] == "no-ptrace":
    pass
elif libc.ptrace(PTRACE_ATTACH, pid, None, None) < 0:
    print("ptrace: refused: " + os.strerror(ctypes.get_errno()))
else:
    print("ptrace: attached")
EOF
chmod 0644 "$T/bin/steal.py"
# survivors [DIGITS]: processes left by the hooks below (sleep 9NN.ID, N one of DIGITS).
survivors() { pgrep -fc "sleep 9[0-9][${1:-0-9}]\.$ID" || true; }

# (a) The default: a uid of its own per run.
start_tagged victim
VICTIM=${APP_PIDS[victim]}
cat >"$RULES/hold.json" <<EOF
{"name": "hold", "process": {"pid": $VICTIM}, "when": "loh-size > 200MB", "dump": {"type": "triage"},
 "limits": {"max-dumps": 1}, "hooks": {"on-dump": ["$HOOKS/hold.sh"], "timeout": "10m"}}
EOF
start_guard --stop-timeout 3s
wait_journal attach 1 30 "\"pid\":$VICTIM," || fail "(a) the guard did not attach"
tagged_cmd victim "spike 300 6000"
wait_journal dump 1 90 || fail "(a) no dump"
wait_for "pgrep -f 'sleep 600.$ID' >/dev/null" 30 || fail "(a) the hook did not start"
HOOK_PID=$(pgrep -f "sleep 600.$ID")
hook_uid=$(awk '/^Uid:/ {print $2}' "/proc/$HOOK_PID/status")
((hook_uid >= 2102853632 && hook_uid < 2102853632 + 65536)) || fail "(a) the hook runs as uid $hook_uid, not a transient one"
[ "$(ps -e -o uid= | awk -v u="$hook_uid" '$1 == u' | wc -l)" -eq 1 ] || fail "(a) another process shares the hook's uid"
grep_q "started as uid $hook_uid" "$T/dw.out" || fail "(a) the log does not name the hook's uid"
# Root may: the attempt is aimed at the dump.
"$PY" "$T/bin/steal.py" "$HOOK_PID" no-ptrace >"$T/root.steal" 2>&1
grep_q "^pidfd_getfd: took [1-9][0-9]* bytes b'\\\\x7fELF'" "$T/root.steal" || fail "(a) root could not take the dump: $(cat "$T/root.steal")"
core=$(find "$DUMPS" -maxdepth 1 -name '*.core' | head -1)
grep_q "^pidfd_getfd: took $(stat -c %s "$core") bytes" "$T/root.steal" || fail "(a) fd 3 is not the whole dump"
# nobody and the attacker may not.
for who in nobody ATTACKER; do
	if [ "$who" = nobody ]; then
		setpriv --reuid=nobody --regid=nogroup --clear-groups "$PY" "$T/bin/steal.py" "$HOOK_PID" >"$T/$who.steal" 2>&1 || true
	else
		as_user ATTACKER "$PY" "$T/bin/steal.py" "$HOOK_PID" >"$T/$who.steal" 2>&1 || true
	fi
	for how in pidfd_getfd "proc fd" environ ptrace; do
		grep_q "^$how: refused" "$T/$who.steal" || fail "(a) $who: $how was not refused: $(cat "$T/$who.steal")"
	done
done
stop_guard 30
[ "$DW_RC" -eq 0 ] || fail "(a) guard exit status $DW_RC"
[ "$(journal_count_with hook-failed 'dumpwatch stopped')" -eq 1 ] || fail "(a) the held hook's end is not journaled"
grep '"event":"hook-failed"' "$JOURNAL" | grep_q "\"uid\":$hook_uid" || fail "(a) the journal does not name the hook's uid"
[ "$(pgrep -fc "sleep 600.$ID" || true)" -eq 0 ] || fail "(a) the held hook outlived the guard"

# nobody is refused; a named user with processes of its own is warned about.
set +e
"$DUMPWATCH" --rules-dir "$RULES" --dump-dir "$DUMPS" --hook-user nobody >"$T/nobody.out" 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] && grep_q "hooks do not run as nobody: .*take the dump" "$T/nobody.out" ||
	fail "(a) --hook-user nobody: exit $rc: $(cat "$T/nobody.out")"
as_user HOOKER sleep 907.$ID &
PIDS+=("$!")
wait_for "pgrep -f 'sleep 907.$ID' >/dev/null" 10 || fail "(a) the hook user's process did not start"
before=$(wc -l <"$T/dw.out")
start_guard --hook-user "$HOOKER" --stop-timeout 3s
tail -n +"$((before + 1))" "$T/dw.out" | grep_q "hook user $HOOKER (uid $HOOKER_UID) runs at least 1 other process.*take the dump" ||
	fail "(a) no warning about the hook user's other processes"
stop_guard 30
kill -9 "$(pgrep -f "sleep 907.$ID")"

# (b) Leftovers, with a transient uid and with a named user.
for mode in transient named; do
	rm -f "$RULES"/*.json "$DUMPS"/*
	: >"$JOURNAL"
	start_tagged "b$mode"
	P=${APP_PIDS[b$mode]}
	cat >"$RULES/leave.json" <<EOF
{"name": "leave", "process": {"pid": $P}, "when": "loh-size > 200MB", "dump": {"type": "triage"},
 "limits": {"max-dumps": 1}, "hooks": {"on-fire": ["$HOOKS/leave.sh"]}}
EOF
	cat >"$RULES/hang.json" <<EOF
{"name": "hang", "process": {"pid": $P}, "when": "loh-size > 200MB", "dump": {"type": "triage"},
 "limits": {"max-dumps": 1}, "hooks": {"on-fire": ["$HOOKS/hang.sh"], "timeout": "2s"}}
EOF
	if [ "$mode" = named ]; then start_guard --hook-user "$HOOKER"; else start_guard; fi
	wait_journal attach 1 30 "\"pid\":$P," || fail "(b $mode) the guard did not attach"
	tagged_cmd "b$mode" "spike 300 6000"
	wait_journal hook 1 60 '"rule":"leave"' || fail "(b $mode) the leaving hook's run is not journaled"
	# Journaled once the supervisor has killed and reaped what it left.
	n=$(survivors 123)
	[ "$n" -eq 0 ] || fail "(b $mode) $n process(es) the hook left outlived it: $(pgrep -af "sleep 90[123]\.$ID")"
	grep '"event":"hook"' "$JOURNAL" | grep '"rule":"leave"' | grep_q '"killed_left_running":3' ||
		fail "(b $mode) the journal does not say three were killed"
	wait_journal hook-failed 1 60 '"rule":"hang"' || fail "(b $mode) the hanging hook's end is not journaled"
	grep '"event":"hook-failed"' "$JOURNAL" | grep '"rule":"hang"' | grep_q 'timed out after 2.0 s' ||
		fail "(b $mode) the hanging hook did not time out"
	n=$(survivors 456)
	[ "$n" -eq 0 ] || fail "(b $mode) $n process(es) of the timed-out hook outlived it: $(pgrep -af "sleep 90[456]\.$ID")"
	stop_guard 30
done

# (c) 17 fakes of the attacker's hold hooks; the victim's still runs.
rm -f "$RULES"/*.json "$DUMPS"/*
: >"$JOURNAL"
mkdir -m 1777 "$T/sock"
install -m 0755 "$DW_FAKERT" "$T/bin/fakert"
cat >"$RULES/fakes.json" <<EOF
{"name": "fakes", "process": {"cmdline": "*$ID-fake*"}, "when": "rss > 1KB", "dump": {"type": "triage"},
 "limits": {"max-dumps": 1}, "hooks": {"on-fire": ["$HOOKS/hold.sh"], "timeout": "10m"}}
EOF
start_guard --socket-dir "$T/sock" --stop-timeout 3s
as_user ATTACKER env TMPDIR="$T/sock" bash -c '
	for i in $(seq 17); do "$1" --mode idle --entry "$2-fake" --cmdline "$2-fake" </dev/null >/dev/null 2>&1 & done' \
	_ "$T/bin/fakert" "$ID"
wait_journal fire 17 90 '"rule":"fakes"' || fail "(c) the attacker's 17 processes did not all fire"
wait_for "[ \$(pgrep -fc 'sleep 600.$ID') -ge 4 ]" 30 || fail "(c) the attacker's hooks did not start"
wait_for "[ \$(journal_count_with hook-failed '\"dropped\":true') -ge 5 ]" 30 || fail "(c) the attacker's excess hooks were not dropped"
[ "$(pgrep -fc "sleep 600.$ID")" -eq 4 ] || fail "(c) the attacker's processes run $(pgrep -fc "sleep 600.$ID") hooks, not 4"
grep '"event":"hook-failed"' "$JOURNAL" | grep '"dropped":true' | head -1 |
	grep_q "dropped: 4 hooks run (4 for the processes of uid $ATTACKER_UID) and 8 wait" ||
	fail "(c) the drop does not say why"
cat >"$RULES/victim.json" <<EOF
{"name": "victim", "process": {"pid": $VICTIM}, "when": "loh-size > 200MB", "dump": {"type": "triage"},
 "limits": {"max-dumps": 1}, "hooks": {"on-dump": ["$HOOKS/quick.sh"]}}
EOF
wait_journal attach 1 30 "\"pid\":$VICTIM," || fail "(c) the guard did not attach to the victim"
tagged_cmd victim "spike 300 6000"
wait_journal hook 1 90 "\"pid\":$VICTIM," || fail "(c) the victim's hook did not run while the attacker's held their slots"
grep '"event":"hook"' "$JOURNAL" | grep "\"pid\":$VICTIM," | grep_q "\"output\":\"victim's hook ran for $VICTIM\"" ||
	fail "(c) the victim's hook record is wrong"
[ "$(journal_count_with hook-failed "\"pid\":$VICTIM,")" -eq 0 ] || fail "(c) a hook of the victim's failed"
stop_guard 30
[ "$DW_RC" -eq 0 ] || fail "(c) guard exit status $DW_RC"
[ "$(journal_count_with hook-failed 'dumpwatch stopped before a slot was free')" -eq 8 ] ||
	fail "(c) the 8 waiting hooks are not journaled as not run"
jq -e . "$JOURNAL" >/dev/null || fail "(c) the journal does not parse"
echo "PASS: hooks keep their dump from other users, take what they left with them, and share their slots fairly"
