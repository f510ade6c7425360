#!/usr/bin/env bash
# The two dump paths and their guards, with the real runtime:
# - a target running as another user (nobody) and a dump directory it cannot
#   write: refused before the request, one line saying how to fix it, exit 3,
#   journaled; nothing left in the directory;
# - the same target with a directory it can write: the runtime's createdump
#   writes as nobody, dumpwatch publishes the file as root-owned 0600;
# - --dump-via exec: dumpwatch runs the createdump beside libcoreclr.so itself;
# - --dump-via exec against a runtime installed in a world-writable directory:
#   refused as root, with the reason.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to start a target as another user"; exit 77; }

# 1. Target as nobody, dump directory root-owned 0755. The program runs from
# a world-readable copy: the checkout may sit where nobody cannot read.
cp -r "$(dirname "$APP")" "$T/app-copy"
chmod -R a+rX "$T/app-copy"
ROOT_APP=$APP
APP="$T/app-copy/$(basename "$APP")"
start_app as_nobody
start_dw --pid "$APP_PID" --when 'loh-size > 100MB' --dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
app_cmd "loh 150"
wait_dw 30
[ "$DW_RC" -eq 3 ] || fail "unwritable dump dir: exit $DW_RC, expected 3"
grep -q "is not writable by uid $(id -u nobody), the user of process $APP_PID" "$T/dw.out" ||
	fail "no actionable message"
[ "$(journal_count dump-failed)" -eq 1 ] || fail "failure not journaled"
[ -z "$(ls -A "$DUMPS")" ] || fail "something was left in the dump directory: $(ls -A "$DUMPS")"

# 2. Same target, directory writable by nobody.
chown nobody "$DUMPS"
chmod 0700 "$DUMPS"
app_cmd "release"
rm -f "$JOURNAL"
start_dw --pid "$APP_PID" --when 'loh-size > 100MB' --dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
app_cmd "loh 150"
wait_dw 30
[ "$DW_RC" -eq 0 ] || fail "runtime path as nobody: exit $DW_RC"
core=$(find "$DUMPS" -name '*.core')
[ -n "$core" ] || fail "no dump"
"$DW_CORECHECK" "$core" "$APP_PID" >/dev/null || fail "bad core"
[ "$(stat -c '%U %a' "$core")" = "root 600" ] || fail "dump is $(stat -c '%U %a' "$core"), expected root 600"
grep '"event":"dump"' "$JOURNAL" | grep -q '"via":"runtime"' || fail "not via the runtime"
app_cmd "exit"
wait "$APP_PID" 2>/dev/null || true
exec 3>&-
rm -f "$T/cmd"
rm -rf "$DUMPS" && mkdir -p "$DUMPS"

# 3. --dump-via exec on a root target: the runtime's createdump run directly.
APP=$ROOT_APP
start_app
rm -f "$JOURNAL"
start_dw --pid "$APP_PID" --when 'loh-size > 100MB' --dump-type triage --dump-via exec --dump-dir "$DUMPS" \
	--journal "$JOURNAL"
wait_attached
app_cmd "loh 150"
wait_dw 30
[ "$DW_RC" -eq 0 ] || fail "exec path: exit $DW_RC"
core=$(find "$DUMPS" -name '*.core')
"$DW_CORECHECK" "$core" "$APP_PID" >/dev/null || fail "bad core from exec path"
grep '"event":"dump"' "$JOURNAL" | grep -q '"via":"exec"' || fail "not via exec"
app_cmd "exit"
wait "$APP_PID" 2>/dev/null || true
exec 3>&-
rm -f "$T/cmd"

# 4. A runtime in a world-writable directory: exec refused as root.
src=$(dirname "$(readlink -f "$(command -v dotnet)")")
mkdir -p "$T/dotnet/shared"
cp -a "$src/host" "$T/dotnet/"
cp -a "$src/shared/Microsoft.NETCore.App" "$T/dotnet/shared/"
chmod 0777 "$T/dotnet"
start_app env DOTNET_ROOT="$T/dotnet"
grep -q "$T/dotnet/shared/Microsoft.NETCore.App/.*/libcoreclr.so" "/proc/$APP_PID/maps" ||
	fail "the copied runtime was not loaded"
rm -f "$JOURNAL"
start_dw --pid "$APP_PID" --when 'loh-size > 100MB' --dump-type triage --dump-via exec --dump-dir "$DUMPS" \
	--journal "$JOURNAL"
wait_attached
app_cmd "loh 150"
wait_dw 30
[ "$DW_RC" -eq 3 ] || fail "unsafe createdump: exit $DW_RC, expected 3"
grep -q "refusing to execute .*createdump as root: $T/dotnet is owned by uid 0 or writable by group/others" \
	"$T/dw.out" || fail "no refusal message"
[ "$(count_dumps)" -eq 1 ] || fail "a dump was taken with an unsafe createdump"
echo "PASS: runtime path as another user (refused, then published root 0600), exec path, unsafe exec refused"
