#!/usr/bin/env bash
# The desktop launcher entry during a sudo command-line watch, on a real
# session bus: a private dbus-daemon of a test user, and tests/tools/dock.py
# (as that user) owning com.canonical.Unity and recording every
# LauncherEntry.Update. dumpwatch runs as root with SUDO_UID/SUDO_GID of that
# user, as `sudo dumpwatch PID MB` would, and dumps a process holding 350 MB:
#  - the entry is dumpwatch.desktop's; urgent when the rule fires; a progress
#    bar rising to 1 while the dump is written; count 1 after it; everything
#    cleared at the exit;
#  - every update came from a connection of the test user, never root's;
#  - dumpwatch itself never maps GLib or libunity: its child is the helper
#    dumpwatch-launcher, running as the test user with an environment of
#    the few variables it needs, none of root's LD_* or GIO/GTK modules;
#  - SIGTERM while the dump is written, and a dump that fails (urgent, no
#    count), leave the entry cleared;
#  - without a session bus the same watch dumps as before and says why there
#    is no launcher in one -v line; --launcher off starts none.
source "$(dirname "$0")/lib.sh"
"$DUMPWATCH" --version | grep_q 'desktop launcher entry: dumpwatch-launcher at' ||
	skip "no launcher helper beside dumpwatch (DUMPWATCH_LAUNCHER=off or no libunity-dev): $("$DUMPWATCH" --version)"
command -v dbus-daemon >/dev/null || skip "no dbus-daemon (scripts/setup.sh installs dbus)"
# Debian's python3, where python3-gi lives (not a python3 of PATH such as pyenv's).
/usr/bin/python3 -c 'from gi.repository import Gio' 2>/dev/null || skip "no python3-gi for the test dock (scripts/setup.sh)"
make_user DESK

BUSDIR="$T/bus"
mkdir -m 0700 "$BUSDIR"
chown "$DESK:$DESK" "$BUSDIR"
BUS="unix:path=$BUSDIR/socket"
as_user DESK dbus-daemon --session --address="$BUS" --nofork --nopidfile >"$T/bus.out" 2>&1 &
PIDS+=("$!")
wait_for "[ -S '$BUSDIR/socket' ]" 10 || fail "the test user's session bus did not start: $(cat "$T/bus.out")"
DBUS_SESSION_BUS_ADDRESS=$BUS as_user DESK /usr/bin/python3 "$DW_SOURCE_DIR/tests/tools/dock.py" >"$T/dock.out" 2>&1 &
PIDS+=("$!")
wait_for "grep -q owned '$T/dock.out'" 10 || fail "the test dock did not own com.canonical.Unity: $(cat "$T/dock.out")"

start_app
app_cmd "loh 350"
wait_for "grep -q 'done loh 350' '$T/app.out'" 60 || fail "MemSpike did not allocate"

# As `sudo dumpwatch PID 300` from the test user's desktop session.
env SUDO_UID="$DESK_UID" SUDO_GID="$DESK_GID" SUDO_USER="$DESK" DBUS_SESSION_BUS_ADDRESS="$BUS" \
	timeout 60 "$DUMPWATCH" -v --dump-dir "$DUMPS" --journal "$JOURNAL" "$APP_PID" 300 >"$T/dw.out" 2>&1 ||
	fail "dumpwatch exited $?"
[ "$(count_dumps)" -eq 1 ] || fail "expected one dump, found $(count_dumps)"
check_dump "$(find "$DUMPS" -name '*.core')" "$APP_PID" 300000000
grep_q 'launcher: showing dumps on the launcher entry of dumpwatch.desktop' "$T/dw.out" ||
	fail "no launcher line"
# The cleared entry is the child's last word before it exits.
wait_for "[ \$(grep -c app_uri '$T/dock.out') -ge 3 ]" 5 || true
python3 - "$T/dock.out" "$DESK_UID" <<'EOF' || fail "launcher updates: $(cat "$T/dock.out")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
updates = [l for l in lines if "app_uri" in l]
want_uid = int(sys.argv[2])
assert updates, "no Update signal"
assert all(u["app_uri"] == "application://dumpwatch.desktop" for u in updates), [u["app_uri"] for u in updates]
asked = [u["uid"] for u in updates if u["uid"] is not None]
assert asked, "no sender's uid could be asked"
assert all(uid == want_uid for uid in asked), "senders' uids %r, the user's is %d" % (asked, want_uid)
# libunity sends what changed since its last Update, several changes at once.
state, states = {}, []
for u in updates:
    state.update(u["props"])
    states.append(dict(state))
first_urgent = next(i for i, s in enumerate(states) if s.get("urgent"))
shown = next((i for i, s in enumerate(states) if s.get("progress-visible")), None)
assert shown is not None and shown >= first_urgent, "the bar was not shown after the fire: %r" % states
sent = [(i, u["props"]["progress"]) for i, u in enumerate(updates) if "progress" in u["props"] and i >= first_urgent]
values = [p for _, p in sent]
assert len(values) >= 2, "the bar did not move: %r" % values
assert values == sorted(values), "progress went back: %r" % values
assert values[-1] == 1.0, "progress ended at %r" % values[-1]
counted = next(i for i, s in enumerate(states) if s.get("count-visible") and s.get("count") == 1)
assert counted >= sent[-1][0], "count 1 before the dump was written"
assert not any(s.get("count", 0) > 1 for s in states), "count above 1"
last = states[-1]
assert not last.get("count-visible") and not last.get("progress-visible") and not last.get("urgent"), \
    "not cleared at the exit: %r" % last
print("launcher: %d updates from uid %d; progress %s; count 1; cleared" %
      (len(updates), want_uid, " ".join("%.2f" % v for v in values)))
EOF

# SIGTERM while the dump is written: the entry is cleared all the same.
before=$(grep -c app_uri "$T/dock.out")
rm -f "$DUMPS"/*.core
env SUDO_UID="$DESK_UID" SUDO_GID="$DESK_GID" DBUS_SESSION_BUS_ADDRESS="$BUS" \
	LD_LIBRARY_PATH=/nonexistent GIO_MODULE_DIR=/nonexistent GTK_MODULES=evil LANG=C.UTF-8 \
	"$DUMPWATCH" -v --dump-dir "$DUMPS" "$APP_PID" 300 >"$T/dw.out" 2>&1 &
DW_PID=$!
PIDS+=("$DW_PID")
wait_for "tail -n +$((before + 1)) '$T/dock.out' | grep -q '\"progress\": 0\.[0-9]*[1-9]'" 30 ||
	fail "no progress shown before the SIGTERM: $(cat "$T/dock.out")"
# The root process: no GLib, no libunity. Its child: the helper, as the user.
! grep -E 'lib(glib|gio|gobject)-2\.0|libunity|libicu' "/proc/$DW_PID/maps" >/dev/null ||
	fail "dumpwatch maps GLib or libunity: $(grep -E -o '/[^ ]*lib(glib|gio|gobject|unity|icu)[^ ]*' "/proc/$DW_PID/maps" | sort -u)"
HELPER_PID=$(pgrep -P "$DW_PID" | head -1)
[ -n "$HELPER_PID" ] || fail "no launcher helper running under dumpwatch"
[ "$(basename "$(readlink "/proc/$HELPER_PID/exe")")" = dumpwatch-launcher ] ||
	fail "dumpwatch's child is $(readlink "/proc/$HELPER_PID/exe"), not dumpwatch-launcher"
[ "$(stat -c %u "/proc/$HELPER_PID")" = "$DESK_UID" ] || fail "the helper runs as uid $(stat -c %u "/proc/$HELPER_PID")"
helper_env=$(tr '\0' '\n' <"/proc/$HELPER_PID/environ" | cut -d= -f1 | sort | tr '\n' ' ')
[ "$helper_env" = "DBUS_SESSION_BUS_ADDRESS GIO_USE_VFS HOME LANG LOGNAME PATH USER " ] ||
	fail "the helper's environment: $helper_env"
tr '\0' '\n' <"/proc/$HELPER_PID/environ" | grep -qx "DBUS_SESSION_BUS_ADDRESS=$BUS" ||
	fail "the helper's bus: $(tr '\0' '\n' <"/proc/$HELPER_PID/environ")"
kill -TERM "$DW_PID"
wait_dw 30
[ "$DW_RC" -eq 130 ] || fail "SIGTERM during the dump: exit $DW_RC"
wait_for "tail -n 1 '$T/dock.out' | grep -q '\"urgent\": false'" 5 || true
tail -n +$((before + 1)) "$T/dock.out" | /usr/bin/python3 -c '
import json, sys
state = {}
for l in sys.stdin:
    state.update(json.loads(l)["props"])
assert not state.get("urgent") and not state.get("progress-visible") and not state.get("count-visible"), state
' || fail "SIGTERM during the dump left the entry shown: $(tail -n +$((before + 1)) "$T/dock.out")"

# A dump that fails (the disk guard refuses it): urgent, no count, cleared at the exit.
before=$(grep -c app_uri "$T/dock.out")
set +e
env SUDO_UID="$DESK_UID" SUDO_GID="$DESK_GID" DBUS_SESSION_BUS_ADDRESS="$BUS" \
	timeout 60 "$DUMPWATCH" -v --min-free 100% --dump-dir "$DUMPS" "$APP_PID" 300 >"$T/dw.out" 2>&1
rc=$?
set -e
[ "$rc" -eq 3 ] || fail "a refused dump: exit $rc, expected 3"
wait_for "tail -n 1 '$T/dock.out' | grep -q '\"urgent\": false'" 5 || true
tail -n +$((before + 1)) "$T/dock.out" | /usr/bin/python3 -c '
import json, sys
state, urgent, counted = {}, False, False
for l in sys.stdin:
    state.update(json.loads(l)["props"])
    urgent |= bool(state.get("urgent"))
    counted |= bool(state.get("count-visible"))
assert urgent and not counted, (urgent, counted)
assert not state.get("urgent") and not state.get("progress-visible"), state
' || fail "a failed dump: $(tail -n +$((before + 1)) "$T/dock.out")"

# No session bus: the same watch dumps, and says why there is no launcher.
rm -f "$DUMPS"/*.core "$DUMPS"/.*.partial
env SUDO_UID="$DESK_UID" SUDO_GID="$DESK_GID" DBUS_SESSION_BUS_ADDRESS="unix:path=$T/no-such-bus" \
	timeout 60 "$DUMPWATCH" -v --dump-type triage --dump-dir "$DUMPS" "$APP_PID" 300 >"$T/dw.out" 2>&1 ||
	fail "dumpwatch without a bus exited $?"
[ "$(count_dumps)" -eq 1 ] || fail "without a bus: expected one dump, found $(count_dumps)"
[ "$(grep -c 'launcher:' "$T/dw.out")" -eq 1 ] || fail "expected one launcher line without a bus"
grep_q 'launcher: no session bus for uid' "$T/dw.out" || fail "the launcher line does not say there is no bus"

# --launcher off: no child, no line.
rm -f "$DUMPS"/*.core
env SUDO_UID="$DESK_UID" SUDO_GID="$DESK_GID" DBUS_SESSION_BUS_ADDRESS="$BUS" \
	timeout 60 "$DUMPWATCH" -v --launcher off --dump-type triage --dump-dir "$DUMPS" "$APP_PID" 300 >"$T/dw.out" 2>&1 ||
	fail "dumpwatch --launcher off exited $?"
[ "$(grep -c 'launcher:' "$T/dw.out")" -eq 0 ] || fail "--launcher off still started a launcher"
echo "PASS: the launcher entry follows the dump as the sudo user, shown by the helper; without a bus or with --launcher off, dumps as before"
