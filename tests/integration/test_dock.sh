#!/usr/bin/env bash
# The launcher entry on a real dock: Plank on Xvfb, as a test user with a
# private session bus and dumpwatch.desktop docked, and a sudo watch of a
# real .NET process, as `sudo dumpwatch --max-dumps 0 --cooldown 1h PID 300`
# would run from that user's desktop (the watch goes on after its dump, so
# the badge can be looked at; the process's exit ends it). Screenshots,
# compared with the one taken before the watch (tests/tools/dockshot.py):
#  - while the dump is written (createdump held with SIGSTOP for each
#    picture): a progress bar on the icon, no badge; and once more after
#    100 MB more were written, the bar filled further;
#  - after the dump: a count badge, the bar gone. Plank drops an Update that
#    comes within 32 ms of the one before and is followed by another (see
#    launcher.h): sent as an Update of its own between "progress 1" and
#    "progress -", the count is lost and the badge never appears;
#  - after the watch ends: the dock as it was before.
# Plank shows nothing for urgent without windows or a compositor: not checked.
# DW_DOCK_SHOTS=DIR keeps the screenshots there (they go with the test's
# directory otherwise).
source "$(dirname "$0")/lib.sh"
"$DUMPWATCH" --version | grep_q 'desktop launcher entry: dumpwatch-launcher at' ||
	skip "no launcher helper beside dumpwatch (DUMPWATCH_LAUNCHER=off or no libunity-dev): $("$DUMPWATCH" --version)"
for p in Xvfb plank dbus-daemon import; do
	command -v "$p" >/dev/null || skip "no $p (the dock test needs plank, xvfb, imagemagick and dbus-x11; scripts/setup.sh installs them)"
done
/usr/bin/python3 -c 'import PIL' 2>/dev/null || skip "no python3-pil (scripts/setup.sh installs it)"
DESKTOP_FILE="$(dirname "$DUMPWATCH")/dumpwatch.desktop"
[ -f "$DESKTOP_FILE" ] || fail "no $DESKTOP_FILE beside dumpwatch"
DOCKSHOT="/usr/bin/python3 $DW_SOURCE_DIR/tests/tools/dockshot.py"
make_user DESK

# The test user's home: the desktop file and its icon where a user installs
# them, the dock's one launcher, a runtime directory for the bus.
H="$T/home"
mkdir -p "$H/.local/share/applications" "$H/.local/share/icons/hicolor/scalable/apps" \
	"$H/.config/plank/dock1/launchers" "$H/run" "$T/shots"
cp "$DESKTOP_FILE" "$H/.local/share/applications/dumpwatch.desktop"
cp "$DW_SOURCE_DIR/scripts/dumpwatch.svg" "$H/.local/share/icons/hicolor/scalable/apps/dumpwatch.svg"
printf '[PlankDockItemPreferences]\nLauncher=file://%s\n' "$H/.local/share/applications/dumpwatch.desktop" \
	>"$H/.config/plank/dock1/launchers/dumpwatch.dockitem"
chown -R "$DESK:$DESK" "$H"
chmod 0700 "$H" "$H/run"

# Stopped with SIGTERM before lib.sh's cleanup, so that the X server
# removes its lock file and socket.
DESKTOP_PIDS=()
stop_desktop() {
	local p
	for p in "${DESKTOP_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${DESKTOP_PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	done
}
trap 'stop_desktop; cleanup' EXIT

# The X server: the first free display, told on a descriptor once it
# accepts connections.
as_user DESK Xvfb -displayfd 9 -screen 0 640x480x24 -nolisten tcp 9>"$T/display" >"$T/xvfb.out" 2>&1 &
DESKTOP_PIDS+=("$!")
PIDS+=("$!")
wait_for "[ -s '$T/display' ]" 30 || fail "Xvfb did not start: $(cat "$T/xvfb.out")"
DISPLAY_X=":$(head -1 "$T/display")"

# The session bus: no service activation, so that nothing starts on it but
# what the test starts.
cat >"$T/bus.conf" <<XML
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=$H/run/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
XML
chmod 0644 "$T/bus.conf"
BUS="unix:path=$H/run/bus"
as_user DESK dbus-daemon --config-file="$T/bus.conf" --nofork --nopidfile >"$T/bus.out" 2>&1 &
DESKTOP_PIDS+=("$!")
PIDS+=("$!")
wait_for "[ -S '$H/run/bus' ]" 10 || fail "the test user's session bus did not start: $(cat "$T/bus.out")"

# The dock, with the environment of a desktop session and settings kept in
# memory (its defaults: icons of 48 px at the bottom of the screen).
as_user DESK env -i HOME="$H" USER="$DESK" DISPLAY="$DISPLAY_X" DBUS_SESSION_BUS_ADDRESS="$BUS" \
	XDG_RUNTIME_DIR="$H/run" GSETTINGS_BACKEND=memory NO_AT_BRIDGE=1 LANG=C.UTF-8 PATH=/usr/bin:/bin \
	plank >"$T/plank.out" 2>&1 &
DESKTOP_PIDS+=("$!")
PIDS+=("$!")

# shot NAME: a screenshot of the whole screen into $T/shots/NAME.png.
shot() {
	DISPLAY=$DISPLAY_X import -window root "$T/shots/$1.png" 2>>"$T/import.out" ||
		fail "import could not take a screenshot: $(cat "$T/import.out")"
}
# keep_shots: copies the screenshots to DW_DOCK_SHOTS, when set.
keep_shots() {
	[ -z "${DW_DOCK_SHOTS:-}" ] || { mkdir -p "$DW_DOCK_SHOTS" && cp "$T"/shots/*.png "$DW_DOCK_SHOTS/"; }
}
# until_shot KIND NAME SECONDS [ARG]: screenshots until one shows KIND (bar,
# badge, clear; dockshot.py, with ARG) against the one before the watch;
# fails with what the last one showed.
until_shot() {
	local deadline=$((SECONDS + $3))
	until shot "$2" && $DOCKSHOT "$1" "$T/shots/0-before.png" "$T/shots/$2.png" ${4:-} >"$T/dockshot.out"; do
		((SECONDS < deadline)) || { keep_shots; fail "$2: no $1 ${4:-}on the dock after $3 s: $(cat "$T/dockshot.out")"; }
		sleep 0.2
	done
	echo "dock: $2: $1 ${4:-}: $(cat "$T/dockshot.out")"
}
# partial_bytes: the size of the dump being written (0: none).
partial_bytes() {
	find "$DUMPS" -name '.*.partial' -printf '%s\n' 2>/dev/null | sort -n | tail -1 | grep . || echo 0
}

# Before: the dock drawn, and drawn still (two screenshots the same).
deadline=$((SECONDS + 60))
until shot a && $DOCKSHOT drawn "$T/shots/a.png" >/dev/null && sleep 0.5 && shot b &&
	$DOCKSHOT same "$T/shots/a.png" "$T/shots/b.png" >/dev/null; do
	((SECONDS < deadline)) || fail "Plank did not draw a still dock: $(cat "$T/plank.out")"
	sleep 0.3
done
mv "$T/shots/b.png" "$T/shots/0-before.png"
rm -f "$T/shots/a.png"

start_app
app_cmd "loh 350"
wait_for "grep -q 'done loh 350' '$T/app.out'" 60 || fail "MemSpike did not allocate"
env SUDO_UID="$DESK_UID" SUDO_GID="$DESK_GID" SUDO_USER="$DESK" DBUS_SESSION_BUS_ADDRESS="$BUS" \
	"$DUMPWATCH" -v --max-dumps 0 --cooldown 1h --dump-dir "$DUMPS" --journal "$JOURNAL" "$APP_PID" 300 \
	>"$T/dw.out" 2>&1 &
DW_PID=$!
PIDS+=("$DW_PID")

# During: the runtime's createdump held while the bar is looked for.
wait_for "pgrep -x createdump -P '$APP_PID' >/dev/null" 60 || fail "no createdump under pid $APP_PID"
CREATEDUMP=$(pgrep -x createdump -P "$APP_PID")
PIDS+=("$CREATEDUMP")
kill -STOP "$CREATEDUMP"
until_shot bar 1-during 30
# The bar grows: createdump let run in short steps until it wrote 100 MB
# more (of some 450), then held for another look.
start_bytes=$(partial_bytes)
fill=$(jq .fill "$T/dockshot.out")
grown=0
for _ in $(seq 400); do
	kill -CONT "$CREATEDUMP" 2>/dev/null || break
	sleep 0.05
	kill -STOP "$CREATEDUMP" 2>/dev/null || break
	if [ "$(partial_bytes)" -ge $((start_bytes + 100000000)) ]; then
		grown=1
		break
	fi
done
if ((grown)); then
	until_shot bar 1-during-later 30 $((fill + 1))
else
	echo "dock: createdump finished before a second look at the bar (left at $(partial_bytes) bytes); its growth not checked"
fi
kill -CONT "$CREATEDUMP" 2>/dev/null || true
wait_journal dump 1 60 || fail "no dump"

# After the dump: the count.
until_shot badge 2-after-dump 30

# After the watch: the process exits, the watch ends, the dock is as before.
app_cmd "exit"
wait_dw 60
[ "$DW_RC" -eq 0 ] || fail "dumpwatch exited $DW_RC"
until_shot clear 3-after-watch 30
keep_shots
[ "$(count_dumps)" -eq 1 ] || fail "expected one dump, found $(count_dumps)"
grep_q 'launcher: showing dumps on the launcher entry of dumpwatch.desktop' "$T/dw.out" || fail "no launcher line"
echo "PASS: on Plank, a progress bar while the dump was written, the count badge after it, all cleared at the end"
