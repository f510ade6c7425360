#!/usr/bin/env bash
# Attack: root runs a file the user chose. An unprivileged user copies the
# .NET runtime into a directory of their own, replaces its createdump with a
# link to their own script, and starts a .NET program on that runtime
# (DOTNET_ROOT) in a user and mount namespace of their own (unshare -Ur
# --mount). The script records who ran it (a file it creates is owned by
# whoever that was, as the host sees it) and then makes a real dump.
#
# - The guard (root, default options) dumps the process through the runtime's
#   own dump command: the user's script runs, as that user, inside its
#   namespace; the store is hidden from it, so the dump is staged in a
#   directory dumpwatch made in the process's TMPDIR (through /proc/PID/root),
#   checked, moved into the store
#   as root's 0600 and the staging directory removed. Root never runs it.
# - --dump-via exec: root runs the host's createdump of the version the
#   runtime reports, never the one beside the process's libcoreclr.so.
# - --createdump naming the user's file, through /proc/PID/root or directly:
#   refused at start, one line, exit 1.
source "$(dirname "$0")/lib.sh"
make_user ATTACKER
require_userns ATTACKER

# The attacker's home: their runtime, their program, their script.
H="$T/home"
user_runtime "$H"
mkdir -p "$H/marks"
cat >"$H/evil.sh" <<SH
#!/bin/sh
# Leaves a file owned by whoever runs it, then makes a real dump.
mark=\$(mktemp "$H/marks/ran.XXXXXX")
echo "\$*" >"\$mark"
exec "$RUNTIME_DIR/createdump.real" "\$@"
SH
chmod 0755 "$H/evil.sh"
ln -s "$H/evil.sh" "$RUNTIME_DIR/createdump"
chown -R "$ATTACKER:$ATTACKER" "$H"
chmod 0755 "$H"

TAG="atk$$"
# Like a container's, its tree does not show our store: a tmpfs hides it.
start_tagged "$TAG" as_user ATTACKER env DOTNET_ROOT="$H/rt" unshare -Ur --mount -- \
	sh -c 'mount -t tmpfs tmpfs "$0" && exec "$@"' "$DUMPS"
PID=${APP_PIDS[$TAG]}
grep -q "$H/rt/shared/Microsoft.NETCore.App/.*/libcoreclr.so" "/proc/$PID/maps" ||
	fail "the attacker's runtime was not loaded"
[ "$(readlink /proc/$PID/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] || fail "not in its own mount namespace"
[ "$(stat -c %u "/proc/$PID")" = "$ATTACKER_UID" ] || fail "not running as the attacker"
[ "$(stat -c %i "/proc/$PID/root$DUMPS")" != "$(stat -c %i "$DUMPS")" ] || fail "the store is visible to the process"

# marks_by UID: how many times the script ran as that user (host view).
marks_by() { find "$H/marks" -type f -uid "$1" | wc -l; }
# staging_left: staging directories dumpwatch made for the attacker's process
# that are still there.
staging_left() { find /tmp -maxdepth 1 -name '.dumpwatch-*' -uid "$ATTACKER_UID" | wc -l; }

# 1. The guard with default options.
cat >"$RULES/attack.json" <<JSON
{ "rules": [ { "name": "loh-$TAG", "process": { "cmdline": "*--tag $TAG*" },
               "when": "loh-size > 200MB", "dump": { "type": "triage" } } ] }
JSON
start_guard
wait_journal attach 1 20 "\"pid\":$PID" || fail "the attacker's process was not attached"
tagged_cmd "$TAG" "loh 300"
wait_for "[ \$(journal_count_with dump '\"pid\":$PID') -ge 1 ] || [ \$(journal_count_with dump-failed '\"pid\":$PID') -ge 1 ]" 60 ||
	fail "no dump outcome"
[ "$(marks_by 0)" -eq 0 ] || fail "root ran the attacker's createdump: $(ls -ln "$H/marks")"
[ "$(journal_count_with dump "\"pid\":$PID")" -eq 1 ] || fail "no dump of the namespaced process"
grep '"event":"dump"' "$JOURNAL" | grep "\"pid\":$PID" | grep_q '"via":"runtime"' || fail "not via the runtime"
[ "$(marks_by "$ATTACKER_UID")" -ge 1 ] || fail "the runtime's createdump did not run as the attacker"
core=$(find "$DUMPS" -maxdepth 1 -name "*-$PID-*.core")
[ -n "$core" ] || fail "no dump file"
[ "$(stat -c '%U %a %h' "$core")" = "root 600 1" ] || fail "dump is $(stat -c '%U %a %h' "$core")"
"$DW_CORECHECK" "$core" "$PID" >/dev/null || fail "not a core of $PID"
check_dump --type triage "$core" "$PID"
[ "$(staging_left)" -eq 0 ] || fail "staging left in /tmp: $(find /tmp -maxdepth 1 -name '.dumpwatch-*' -uid "$ATTACKER_UID")"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "guard exit $DW_RC"
tagged_cmd "$TAG" "release"

# 2. --dump-via exec: the host's createdump of the reported version.
version=$(basename "$RUNTIME_DIR")
rm -f "$DUMPS"/*.core
start_dw --pid "$PID" --when 'loh-size > 200MB' --dump-type triage --dump-via exec --dump-dir "$DUMPS" \
	--journal "$JOURNAL"
wait_attached
tagged_cmd "$TAG" "loh 300"
wait_dw 60
[ "$DW_RC" -eq 0 ] || fail "exec path: exit $DW_RC"
[ "$(marks_by 0)" -eq 0 ] || fail "root ran the attacker's createdump on the exec path"
core=$(find "$DUMPS" -maxdepth 1 -name "*-$PID-*.core")
[ -n "$core" ] && "$DW_CORECHECK" "$core" "$PID" >/dev/null || fail "exec path: no good dump"
check_dump --type triage "$core" "$PID"
tail -n 3 "$JOURNAL" | grep '"event":"dump"' | grep_q '"via":"exec"' || fail "not via exec"
tagged_cmd "$TAG" "release"

# 3. --createdump pointing at the attacker's file: refused before anything.
for cd in "/proc/$PID/root$RUNTIME_DIR/createdump" "$RUNTIME_DIR/createdump" "$H/evil.sh"; do
	set +e
	out=$("$DUMPWATCH" --pid "$PID" --when 'loh-size > 200MB' --createdump "$cd" --dump-dir "$DUMPS" 2>&1)
	rc=$?
	set -e
	[ "$rc" -eq 1 ] || fail "--createdump $cd: exit $rc ($out)"
	[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "--createdump $cd: expected one line: $out"
	echo "$out" | grep_q "refusing to execute" || fail "--createdump $cd: $out"
done
[ "$(marks_by 0)" -eq 0 ] || fail "root ran the attacker's createdump"
echo "PASS: the attacker's createdump ran $(marks_by "$ATTACKER_UID") time(s), only as the attacker; never as root; namespaced process dumped via the runtime (staged and moved) and via the host's createdump $version"
