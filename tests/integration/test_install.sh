#!/usr/bin/env bash
# scripts/install.sh staged under a directory: the files and modes it lays
# down (the launcher helper in libexec/dumpwatch; dumpwatch itself linking no
# libunity, GLib or ICU); the daemon started exactly as the systemd unit's ExecStart says (paths
# moved under the stage) guards a process of another user, whose runtime writes
# the dump into its own staging directory below the 0711 store (then linked
# into the store as root's, mode 0600); SIGTERM ends it cleanly; scripts/uninstall.sh keeps
# rules and data unless --purge.
source "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (the service's directories are root's)"; exit 77; }

R="$T/root"
DW_INSTALL_BUILD="$T/build" "$SRC/scripts/install.sh" --root "$R" --example loh-balloon >"$T/install.out" 2>&1 ||
	{ cat "$T/install.out"; fail "install.sh failed"; }
UNIT="$R/usr/local/lib/systemd/system/dumpwatch.service"
BIN="$R/usr/local/sbin/dumpwatch"
mode() { stat -c '%a %U' "$1"; }
[ -x "$BIN" ] || fail "no $BIN"
HELPER="$R/usr/local/libexec/dumpwatch/dumpwatch-upload"
[ -x "$HELPER" ] && [ "$(mode "$HELPER")" = "755 root" ] || fail "the upload helper is not installed as $HELPER (root's, 0755)"
[ -f "$UNIT" ] || fail "no $UNIT"
[ -f "$R/usr/local/share/dumpwatch/examples/dumpwatch-rules.schema.json" ] || fail "schema not installed"
[ -f "$R/usr/local/share/dumpwatch/examples/dump-context.schema.json" ] || fail "the dump context schema not installed"
DESKTOP="$R/usr/local/share/applications/dumpwatch.desktop"
ICON="$R/usr/local/share/icons/hicolor/scalable/apps/dumpwatch.svg"
[ -f "$DESKTOP" ] && [ -f "$ICON" ] || fail "the launcher's desktop file or icon is not installed"
HELPER="$R/usr/local/libexec/dumpwatch/dumpwatch-launcher"
[ -x "$HELPER" ] || fail "the launcher helper is not installed in $R/usr/local/libexec/dumpwatch"
! ldd "$BIN" | grep -E 'lib(unity|glib-2\.0|gio-2\.0|icu[a-z]*|stdc\+\+)\.so' || fail "the installed dumpwatch links the desktop's libraries"
grep -q '^Icon=dumpwatch$' "$DESKTOP" || fail "the desktop file does not name its icon"
grep -q '^Exec=/usr/local/sbin/dumpwatch --help$' "$DESKTOP" || fail "the desktop file does not name the installed binary"
if command -v desktop-file-validate >/dev/null; then
	desktop-file-validate "$DESKTOP" || fail "the desktop file does not validate"
fi
[ -f "$R/usr/local/share/man/man8/dumpwatch.8" ] && [ -f "$R/usr/local/share/man/man5/dumpwatch-rules.5" ] ||
	fail "the man pages are not installed"
[ -f "$R/usr/local/share/bash-completion/completions/dumpwatch" ] || fail "the bash completion is not installed"
[ "$(mode "$R/etc/dumpwatch/rules.d")" = "755 root" ] || fail "rules.d: $(mode "$R/etc/dumpwatch/rules.d")"
[ "$(mode "$R/var/lib/dumpwatch")" = "711 root" ] || fail "state dir: $(mode "$R/var/lib/dumpwatch")"
[ "$(mode "$R/var/lib/dumpwatch/dumps")" = "711 root" ] || fail "dump dir: $(mode "$R/var/lib/dumpwatch/dumps")"
[ -f "$R/etc/dumpwatch/rules.d/loh-balloon.json" ] || fail "--example not copied"
grep -q "loh-balloon.json: 1 rule OK" "$T/install.out" || fail "install.sh did not check the rules"
grep -q "^ExecStart=/usr/local/sbin/dumpwatch --rules-dir" "$UNIT" || fail "ExecStart does not name the installed binary"
if command -v systemd-analyze >/dev/null; then
	sed "s|/usr/local/sbin/dumpwatch|$BIN|" "$UNIT" >"$T/dumpwatch.service"
	systemd-analyze verify "$T/dumpwatch.service" >"$T/verify.out" 2>&1 || { cat "$T/verify.out"; fail "unit does not verify"; }
fi

# ExecStart as systemd would run it (continuation lines joined), under the stage.
cmd=$(sed -n '/^ExecStart=/,/[^\\]$/p' "$UNIT" | sed 's/^ExecStart=//; s/\\$//' | tr -d '\t\n')
cmd=${cmd//\/usr\/local\/sbin\/dumpwatch/$BIN}
cmd=${cmd//\/etc\/dumpwatch/$R\/etc\/dumpwatch}
cmd=${cmd//\/var\/lib\/dumpwatch/$R\/var\/lib\/dumpwatch}
J="$R/var/lib/dumpwatch/journal.jsonl"
A="svc$$"
chmod 0755 "$R" # mktemp made $T 0700 before lib.sh opened it; the target must reach the dump directory
start_tagged "$A" as_nobody
P=${APP_PIDS[$A]}
cat >"$R/etc/dumpwatch/rules.d/svc.json" <<JSON
{ "name": "svc-loh", "process": { "cmdline": "*--tag $A", "user": "nobody" }, "when": "loh-size > 200MB",
  "dump": { "type": "triage" }, "limits": { "max-dumps": 1 } }
JSON
read -r -a argv <<<"$cmd"
JOURNAL_STREAM=1:1 "${argv[@]}" >>"$T/dw.out" 2>&1 &
DW_PID=$!
PIDS+=("$DW_PID")
JOURNAL=$J
wait_journal attach 1 10 "\"pid\":$P" || fail "the service command line did not attach to pid $P"
grep -q '^<[0-7]>' "$T/dw.out" || fail "--log journald: no priority prefixes"
tagged_cmd "$A" "spike 300 400"
wait_journal dump 1 30 "\"pid\":$P" || fail "no dump from the service command line"
f=$(find "$R/var/lib/dumpwatch/dumps" -maxdepth 1 -name "MemSpike-$P-svc-loh-*.core")
[ -n "$f" ] || fail "dump file not in the service's dump directory"
[ "$(stat -c '%U %a' "$f")" = "root 600" ] || fail "dump is $(stat -c '%U %a' "$f"), expected root 600"
check_dump --type triage "$f" "$P"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC after SIGTERM"
[ -f "$R/var/lib/dumpwatch/state.json" ] || fail "no state.json beside the journal"

"$SRC/scripts/uninstall.sh" --root "$R" >/dev/null
[ ! -e "$BIN" ] && [ ! -e "$UNIT" ] || fail "uninstall left the program or the unit"
[ ! -e "$DESKTOP" ] && [ ! -e "$ICON" ] || fail "uninstall left the desktop file or the icon"
[ ! -e "$R/usr/local/libexec/dumpwatch" ] || fail "uninstall left the helpers"
[ -z "$(find "$R/usr/local" -type f)" ] || fail "uninstall left files: $(find "$R/usr/local" -type f)"
[ -f "$R/etc/dumpwatch/rules.d/svc.json" ] && [ -f "$J" ] || fail "uninstall removed rules or the journal"
"$SRC/scripts/uninstall.sh" --root "$R" --purge >/dev/null
[ ! -e "$R/etc/dumpwatch" ] && [ ! -e "$R/var/lib/dumpwatch" ] || fail "--purge left data"
echo "PASS: install.sh layout and modes; the unit's ExecStart guards and dumps a process of another user; uninstall"
