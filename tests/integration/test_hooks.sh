#!/usr/bin/env bash
# Hooks: --on-fire / --on-dump and a rule file's "hooks" run as the named
# unprivileged user, without a shell, with DUMPWATCH_* in a clean environment
# (nothing of dumpwatch's own, such as credentials) and the dump readable on
# descriptor 3; a hook that hangs is killed with its whole process group at
# its timeout; a hook that fails is journaled with its status and last line;
# a hook program that someone other than root could change is refused.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root: hooks run as another user"
make_user HOOKER
HOOKS="$T/hooks"
mkdir -m 0755 "$HOOKS"
OUT="$T/out"
mkdir -m 0700 "$OUT"
chown "$HOOKER_UID:$HOOKER_GID" "$OUT"

cat >"$HOOKS/record.sh" <<'EOF'
#!/bin/sh
# record.sh OUTDIR: what the hook sees, written where its user may write.
out="$1/$DUMPWATCH_EVENT"
id -u >"$out.uid"
env | sort >"$out.env"
ls -l /proc/self/fd >"$out.fds" 2>&1
if [ -n "${DUMPWATCH_DUMP_FD:-}" ]; then
	head -c 4 <&3 | od -An -c | tr -d ' ' >"$out.magic"
	wc -c <&3 >/dev/null
fi
if [ -n "${DUMPWATCH_CONTEXT_FD:-}" ]; then head -c 200 <&4 >"$out.context"; fi
# Without a shell, this is one argument.
printf '%s\n' "$2" >"$out.arg2"
echo "recorded $DUMPWATCH_EVENT"
EOF
cat >"$HOOKS/hang.sh" <<'EOF'
#!/bin/sh
# A hook that never ends, and leaves a child behind.
sleep 300 &
echo "hanging"
sleep 300
EOF
cat >"$HOOKS/fail.sh" <<'EOF'
#!/bin/sh
echo "first line"
echo "bucket refused the upload" >&2
exit 3
EOF
chmod 0755 "$HOOKS"/*.sh

# 1. The one-process watch with both command-line hooks. A secret in
# dumpwatch's environment must not reach the hook.
start_app
AWS_SECRET_ACCESS_KEY=hook-must-not-see-this start_dw --pid "$APP_PID" --when 'loh-size > 200MB' \
	--dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL" --hook-user "$HOOKER" \
	--on-fire "$HOOKS/record.sh $OUT" --on-dump "$HOOKS/record.sh $OUT 'two words; \$(id)'"
wait_attached
app_cmd "spike 300 2000"
wait_dw 90
[ "$DW_RC" -eq 0 ] || fail "watch exit status $DW_RC"
[ "$(journal_count hook)" -eq 2 ] || fail "expected two hook records (on-fire, on-dump)"
[ "$(journal_count hook-failed)" -eq 0 ] || fail "a hook failed"
core=$(find "$DUMPS" -maxdepth 1 -name '*.core' | head -1)
[ -n "$core" ] || fail "no dump"
for ev in on-fire on-dump; do
	[ -f "$OUT/$ev.env" ] || fail "the $ev hook did not run"
	[ "$(cat "$OUT/$ev.uid")" = "$HOOKER_UID" ] || fail "$ev ran as uid $(cat "$OUT/$ev.uid"), not $HOOKER_UID"
	grep_q -x "DUMPWATCH_EVENT=$ev" "$OUT/$ev.env" || fail "$ev: DUMPWATCH_EVENT"
	grep_q -x "DUMPWATCH_PID=$APP_PID" "$OUT/$ev.env" || fail "$ev: DUMPWATCH_PID"
	grep_q -x "DUMPWATCH_PROCESS=MemSpike" "$OUT/$ev.env" || fail "$ev: DUMPWATCH_PROCESS"
	grep_q "^DUMPWATCH_RULE=loh-size" "$OUT/$ev.env" || fail "$ev: DUMPWATCH_RULE"
	grep_q "^DUMPWATCH_VALUES=.*loh-size" "$OUT/$ev.env" || fail "$ev: DUMPWATCH_VALUES"
	! grep_q "hook-must-not-see-this\|AWS_SECRET" "$OUT/$ev.env" || fail "$ev: dumpwatch's environment leaked"
done
grep_q -x "DUMPWATCH_DUMP=$core" "$OUT/on-dump.env" || fail "on-dump: DUMPWATCH_DUMP is not $core"
grep_q -x "DUMPWATCH_DUMP_BYTES=$(stat -c %s "$core")" "$OUT/on-dump.env" || fail "on-dump: DUMPWATCH_DUMP_BYTES"
! grep_q "^DUMPWATCH_DUMP=" "$OUT/on-fire.env" || fail "on-fire has a dump path before the dump"
# The dump is root's (mode 0600): the hook reads it through descriptor 3.
[ "$(stat -c %u "$core")" = 0 ] || fail "dump not root's"
[ "$(cat "$OUT/on-dump.magic")" = '177ELF' ] || fail "fd 3 is not the dump: $(cat "$OUT/on-dump.magic")"
grep_q '"dumpwatch_context"' "$OUT/on-dump.context" || fail "fd 4 is not the context"
[ "$(cat "$OUT/on-dump.arg2")" = 'two words; $(id)' ] || fail "argument split or expanded: $(cat "$OUT/on-dump.arg2")"
# Nothing else of dumpwatch's is open in the hook (0-4 and the ls itself).
nfds=$(grep -c -- '->' "$OUT/on-dump.fds")
[ "$nfds" -le 6 ] || fail "the hook inherited descriptors: $(cat "$OUT/on-dump.fds")"
grep_q '"output":"recorded on-dump"' "$JOURNAL" || fail "the hook's last line is not journaled"
grep_q "\"user\":\"$HOOKER\"" "$JOURNAL" || fail "the hook's user is not journaled"

# 2. A hook program another user can change is refused at start.
cp "$HOOKS/record.sh" "$HOOKS/theirs.sh"
chown "$HOOKER_UID" "$HOOKS/theirs.sh"
set +e
"$DUMPWATCH" --pid "$APP_PID" --when 'loh-size > 200MB' --dump-dir "$DUMPS" --on-dump "$HOOKS/theirs.sh" \
	>"$T/refused.out" 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "a hook owned by another user: exit $rc, expected 1 (usage)"
grep_q "refusing to execute $HOOKS/theirs.sh: .*owned by uid $HOOKER_UID" "$T/refused.out" ||
	fail "no clear refusal: $(cat "$T/refused.out")"
[ ! -e "$OUT/theirs" ] || fail "it ran"
# As root, root is not a hook user.
set +e
"$DUMPWATCH" --pid "$APP_PID" --when 'loh-size > 200MB' --dump-dir "$DUMPS" --on-dump "$HOOKS/record.sh" \
	--hook-user root >"$T/root.out" 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] && grep_q "unprivileged user, not root" "$T/root.out" || fail "--hook-user root accepted: $(cat "$T/root.out")"

# 3. The guard with rule files: a hook that hangs (killed at its timeout,
# with the child it left), one that fails, one someone else owns.
: >"$JOURNAL"
rm -f "$DUMPS"/*.core "$DUMPS"/*.json "$DUMPS"/*.svg "$OUT"/*
cat >"$RULES/hang.json" <<EOF
{"name": "hang", "process": {"pid": $APP_PID}, "when": "loh-size > 200MB", "dump": {"type": "triage"},
 "limits": {"max-dumps": 1}, "hooks": {"on-fire": ["$HOOKS/hang.sh"], "on-dump": ["$HOOKS/fail.sh"], "timeout": "2s"}}
EOF
cat >"$RULES/theirs.json" <<EOF
{"name": "theirs", "process": {"pid": $APP_PID}, "when": "loh-size > 200MB", "dump": {"type": "triage"},
 "limits": {"max-dumps": 1}, "hooks": {"on-fire": "$HOOKS/theirs.sh $OUT"}}
EOF
start_guard --hook-user "$HOOKER"
wait_journal attach 1 15 || fail "the guard did not attach"
app_cmd "spike 300 6000"
wait_journal dump 2 60 || fail "expected two dumps"
wait_journal hook-failed 3 30 || fail "expected three failed hooks"
grep '"event":"hook-failed"' "$JOURNAL" | grep '"hook":"on-fire"' | grep '"rule":"hang"' |
	grep_q 'timed out after 2.0 s' || fail "the hanging hook was not timed out"
grep '"event":"hook-failed"' "$JOURNAL" | grep '"hook":"on-dump"' | grep '"rule":"hang"' | grep '"exit":3' |
	grep_q '"output":"bucket refused the upload"' || fail "the failing hook's status and line are not journaled"
grep '"event":"hook-failed"' "$JOURNAL" | grep '"rule":"theirs"' |
	grep_q "refusing to execute $HOOKS/theirs.sh" || fail "the hook someone else owns was not refused"
[ ! -e "$OUT/on-fire.env" ] || fail "the refused hook ran"
# Nothing of the hanging hook is left: its child went with it.
wait_for "! pgrep -U '$HOOKER_UID' >/dev/null" 5 || fail "the hook's processes outlived its timeout: $(pgrep -a -U "$HOOKER_UID")"
grep_q "on-fire hook of rule hang for pid $APP_PID timed out" "$T/dw.out" || fail "no log line for the timeout"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "guard exit status $DW_RC"
echo "PASS: hooks run as $HOOKER with their environment and the dump on fd 3; timeout, failure and trust journaled"
