#!/usr/bin/env bash
# The two dump paths and their guards, with the real runtime:
# - a target running as another user (nobody) and a store it cannot reach
#   (root 0700): refused before the request, one line saying how to fix it,
#   exit 3, journaled; nothing left in the directory;
# - a store owned by that user: refused (dumps go only to a root-owned store);
# - the same target with a root-owned 0711 store: the runtime's createdump
#   writes as nobody in DIR/.incoming/UID, dumpwatch publishes the file into the
#   store as root-owned 0600 and leaves nothing behind in the staging directory;
# - --dump-via exec: dumpwatch runs the host's createdump itself;
#   a self-contained app (.NET 8, 9) whose runtime the host lacks: the dump
#   fails with the reason, then uses a root-owned install of that version;
# - a target on a runtime installed in a world-writable directory: --dump-via
#   exec runs the host's createdump of the same version, never the one beside
#   the target's libcoreclr.so; --createdump naming that one is refused as
#   root, with the reason.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to start a target as another user"; exit 77; }

# 1. Target as nobody, store root-owned 0700. The program runs from a
# world-readable copy: the checkout may sit where nobody cannot read.
cp -r "$(dirname "$APP")" "$T/app-copy"
chmod -R a+rX "$T/app-copy"
ROOT_APP=$APP
APP="$T/app-copy/$(basename "$APP")"
start_app as_nobody
chmod 0700 "$DUMPS"
start_dw --pid "$APP_PID" --when 'loh-size > 100MB' --dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
app_cmd "loh 150"
wait_dw 30
[ "$DW_RC" -eq 3 ] || fail "unreachable dump dir: exit $DW_RC, expected 3"
grep -q "process $APP_PID runs as uid $(id -u nobody) .* cannot reach $DUMPS (mode 0700): make it 0711" "$T/dw.out" ||
	fail "no actionable message"
[ "$(journal_count dump-failed)" -eq 1 ] || fail "failure not journaled"
[ -z "$(not_context "$DUMPS")" ] || fail "something was left in the dump directory: $(not_context "$DUMPS")"
# The failed dump's context says what would have been dumped.
[ "$(context_outcomes "$DUMPS")" = failed ] || fail "no context of the failed dump: $(ls -A "$DUMPS")"
rm -f "$DUMPS"/*.json "$DUMPS"/*.svg

# 2. A store that the target's user owns: refused.
chown nobody "$DUMPS"
app_cmd "release"
rm -f "$JOURNAL"
start_dw --pid "$APP_PID" --when 'loh-size > 100MB' --dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
app_cmd "loh 150"
wait_dw 30
[ "$DW_RC" -eq 3 ] || fail "store owned by nobody: exit $DW_RC, expected 3"
grep -q "dump directory $DUMPS is owned by uid $(id -u nobody) with mode 0700: dumps go only to a directory owned by uid 0" \
	"$T/dw.out" || fail "no message about the store's owner"
[ -z "$(ls -A "$DUMPS")" ] || fail "something was left in the dump directory: $(ls -A "$DUMPS")"

# 2b. The same store, when it belongs to the user who ran sudo (SUDO_UID):
# `sudo dumpwatch PID MB` from that user's own directory. The runtime writes
# there as that user; the dump is published root-owned 0600.
app_cmd "release"
rm -f "$JOURNAL"
export SUDO_UID=$(id -u nobody)
start_dw --pid "$APP_PID" --when 'loh-size > 100MB' --dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
unset SUDO_UID
wait_attached
app_cmd "loh 150"
wait_dw 30
[ "$DW_RC" -eq 0 ] || fail "sudo user's own store: exit $DW_RC"
core=$(find "$DUMPS" -maxdepth 1 -name '*.core')
[ -n "$core" ] && [ "$(stat -c '%U %a' "$core")" = "root 600" ] || fail "sudo user's store: dump is $(stat -c '%U %a' "$core" 2>&1)"
"$DW_CORECHECK" "$core" "$APP_PID" >/dev/null || fail "bad core in the sudo user's store"
check_dump --type triage "$core" "$APP_PID"
[ "$(count_partials)" -eq 0 ] && [ ! -e "$DUMPS/.incoming" ] || fail "left behind: $(ls -A "$DUMPS")"
rm -f "$core"

# 3. Root-owned 0711 store: the runtime writes as nobody in its staging
# directory; the dump is published root-owned 0600.
chown root "$DUMPS"
chmod 0711 "$DUMPS"
app_cmd "release"
rm -f "$JOURNAL"
start_dw --pid "$APP_PID" --when 'loh-size > 100MB' --dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
app_cmd "loh 150"
wait_dw 30
[ "$DW_RC" -eq 0 ] || fail "runtime path as nobody: exit $DW_RC"
core=$(find "$DUMPS" -maxdepth 1 -name '*.core')
[ -n "$core" ] || fail "no dump"
"$DW_CORECHECK" "$core" "$APP_PID" >/dev/null || fail "bad core"
check_dump --type triage "$core" "$APP_PID"
[ "$(stat -c '%U %a %h' "$core")" = "root 600 1" ] || fail "dump is $(stat -c '%U %a %h' "$core"), expected root 600 1"
grep '"event":"dump"' "$JOURNAL" | grep_q '"via":"runtime"' || fail "not via the runtime"
stage="$DUMPS/.incoming/$(id -u nobody)"
[ "$(stat -c '%U %a' "$stage")" = "nobody 700" ] || fail "staging dir is $(stat -c '%U %a' "$stage")"
[ "$(stat -c '%U %a' "$DUMPS/.incoming")" = "root 711" ] || fail ".incoming is $(stat -c '%U %a' "$DUMPS/.incoming")"
[ -z "$(ls -A "$stage")" ] || fail "left in the staging directory: $(ls -A "$stage")"
app_cmd "exit"
wait "$APP_PID" 2>/dev/null || true
exec 3>&-
rm -f "$T/cmd"
rm -rf "$DUMPS" && mkdir -p "$DUMPS"

# 4. --dump-via exec on a root target: the runtime's createdump run directly.
# A self-contained app (the .NET 8 and 9 variants) runs on a runtime the host
# has not installed: the exec path has no createdump of that version and the
# dump fails, saying so, until a root-owned install of it is named by
# DOTNET_ROOT.
APP=$ROOT_APP
start_app
if [ -n "$APP_SELF_CONTAINED" ]; then
	v=$APP_SELF_CONTAINED
	rm -f "$JOURNAL"
	start_dw --pid "$APP_PID" --when 'loh-size > 100MB' --dump-type triage --dump-via exec --dump-dir "$DUMPS" \
		--journal "$JOURNAL"
	wait_attached
	app_cmd "loh 150"
	wait_dw 30
	[ "$DW_RC" -eq 3 ] || fail "exec path without a host runtime $v: exit $DW_RC, expected 3"
	grep_q "no createdump of .NET $v on this host (looked in .*): install the .NET $v runtime, pass --createdump PATH" \
		"$T/dw.out" || fail "no message about the missing runtime $v"
	[ "$(journal_count dump-failed)" -eq 1 ] || fail "failure not journaled"
	[ -z "$(not_context "$DUMPS")" ] || fail "something was left in the dump directory: $(not_context "$DUMPS")"
	[ "$(context_outcomes "$DUMPS")" = failed ] || fail "no context of the failed dump: $(ls -A "$DUMPS")"
	rm -f "$DUMPS"/*.json "$DUMPS"/*.svg
	app_cmd "release"
	# What the exec path takes from an install: createdump and the DAC it
	# loads from its own directory (without it, a dump lacks what the DAC
	# enumerates).
	mkdir -p "$T/host/shared/Microsoft.NETCore.App/$v"
	cp "$(dirname "$APP")"/{createdump,libmscordaccore.so} "$T/host/shared/Microsoft.NETCore.App/$v/"
	export DOTNET_ROOT=$T/host
fi
rm -f "$JOURNAL"
start_dw --pid "$APP_PID" --when 'loh-size > 100MB' --dump-type triage --dump-via exec --dump-dir "$DUMPS" \
	--journal "$JOURNAL"
wait_attached
app_cmd "loh 150"
wait_dw 30
[ "$DW_RC" -eq 0 ] || fail "exec path: exit $DW_RC"
core=$(find "$DUMPS" -name '*.core')
"$DW_CORECHECK" "$core" "$APP_PID" >/dev/null || fail "bad core from exec path"
check_dump --type triage "$core" "$APP_PID"
grep '"event":"dump"' "$JOURNAL" | grep_q '"via":"exec"' || fail "not via exec"
app_cmd "exit"
wait "$APP_PID" 2>/dev/null || true
exec 3>&-
rm -f "$T/cmd"

# 5. A runtime in a world-writable directory, whose createdump anyone could
# have replaced: --dump-via exec never runs it, but the host's createdump of
# the same version.
copy_runtime "$T/dotnet"
chmod 0777 "$T/dotnet"
printf '#!/bin/sh\ntouch "%s"\nexit 1\n' "$T/ran" >"$RUNTIME_DIR/createdump"
start_app env DOTNET_ROOT="$T/dotnet"
grep -q "$RUNTIME_DIR/libcoreclr.so" "/proc/$APP_PID/maps" ||
	fail "the copied runtime was not loaded"
rm -f "$JOURNAL"
rm -rf "$DUMPS" && mkdir -p "$DUMPS"
start_dw --pid "$APP_PID" --when 'loh-size > 100MB' --dump-type triage --dump-via exec --dump-dir "$DUMPS" \
	--journal "$JOURNAL"
wait_attached
app_cmd "loh 150"
wait_dw 30
[ "$DW_RC" -eq 0 ] || fail "exec path beside an unsafe runtime: exit $DW_RC"
[ ! -e "$T/ran" ] || fail "the createdump of the world-writable runtime ran"
core=$(find "$DUMPS" -name '*.core')
"$DW_CORECHECK" "$core" "$APP_PID" >/dev/null || fail "bad core from the host's createdump"
check_dump --type triage "$core" "$APP_PID"

# ... and naming it with --createdump is refused before anything runs.
set +e
out=$("$DUMPWATCH" --pid "$APP_PID" --when 'loh-size > 100MB' --createdump "$RUNTIME_DIR/createdump" \
	--dump-dir "$DUMPS" 2>&1)
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "--createdump in a world-writable directory: exit $rc ($out)"
echo "$out" | grep_q "refusing to execute $RUNTIME_DIR/createdump: $T/dotnet is owned by uid 0 or writable by group/others (mode 0777)" ||
	fail "no refusal message: $out"
[ ! -e "$T/ran" ] || fail "the createdump of the world-writable runtime ran"
echo "PASS: runtime path as another user (refused, then published root 0600), exec path, unsafe createdump never run"
