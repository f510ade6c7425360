#!/usr/bin/env bash
# (d) Targets that cannot be watched: a non-.NET process, a pid that does not
# exist, a malformed rule. Each gives one clear line and a distinct non-zero exit.
source "$(dirname "$0")/lib.sh"
sleep 60 &
SLEEP_PID=$!
PIDS+=("$SLEEP_PID")

# A stale socket under its pid, left by an earlier process that had the same
# pid and was killed: made before this process started, so not its own.
stale="/tmp/dotnet-diagnostic-$SLEEP_PID-1-socket"
/usr/bin/python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$stale"
touch -d '1 hour ago' "$stale"
trap 'rm -f "$stale"; cleanup' EXIT
set +e
out=$("$DUMPWATCH" "$SLEEP_PID" 500 2>&1); rc=$?
set -e
[ "$rc" -eq 2 ] || fail "non-.NET pid: exit $rc, expected 2 ($out)"
echo "$out" | grep_q "has no .NET diagnostics socket" || fail "non-.NET pid message: $out"
[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "expected one line, got: $out"

gone=999999
while kill -0 "$gone" 2>/dev/null; do gone=$((gone - 1)); done
set +e
out=$("$DUMPWATCH" --pid "$gone" --when 'loh-size > 1MB' 2>&1); rc=$?
set -e
[ "$rc" -eq 2 ] || fail "missing pid: exit $rc, expected 2 ($out)"
echo "$out" | grep_q "no process with pid $gone" || fail "missing pid message: $out"

set +e
out=$("$DUMPWATCH" --pid "$SLEEP_PID" --when 'loh-size > 200' 2>&1); rc=$?
set -e
[ "$rc" -eq 1 ] || fail "bad rule: exit $rc, expected 1 ($out)"
echo "$out" | grep_q "needs a unit" || fail "bad rule message: $out"

set +e
out=$("$DUMPWATCH" --pid "$SLEEP_PID" --when 'loh-szie > 200MB' 2>&1); rc=$?
set -e
[ "$rc" -eq 1 ] || fail "unknown metric: exit $rc"
echo "$out" | grep_q 'did you mean "loh-size"' || fail "unknown metric message: $out"
# A .NET process with its diagnostics port turned off.
mkfifo "$T/cmd"
exec 3<>"$T/cmd"
DOTNET_EnableDiagnostics=0 "$APP" <"$T/cmd" >"$T/app.out" 2>&1 &
APP_PID=$!
PIDS+=("$APP_PID")
wait_for "grep -q ready '$T/app.out'" 10 || fail "MemSpike did not start"
set +e
out=$("$DUMPWATCH" "$APP_PID" 500 2>&1); rc=$?
set -e
[ "$rc" -eq 2 ] || fail "diagnostics disabled: exit $rc, expected 2 ($out)"
echo "$out" | grep_q "DOTNET_EnableDiagnostics=0" || fail "diagnostics disabled message: $out"
echo "PASS: non-.NET, missing pid, diagnostics disabled and bad rules rejected with one clear line"

