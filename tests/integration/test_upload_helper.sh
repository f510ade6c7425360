#!/usr/bin/env bash
# The upload helper (dumpwatch-upload), seen from outside:
# (a) while an upload is under way (to a server that never answers), the
#     connection to the server is owned by a process that is not the guard
#     and not root: the helper, under a transient uid that no other process
#     has, holding the file and nothing else of the daemon's; the guard maps
#     neither libcurl nor libcrypto nor TLS, then or ever.
# (b) a guard whose helper is missing, or is owned by another user: one
#     journaled line saying so, permanent, with the dump kept.
source "$(dirname "$0")/lib.sh"
: "${DW_SOURCE_DIR:?set by ctest}"
[ "$(id -u)" -eq 0 ] || skip "needs root: the helper runs as a transient uid"
command -v python3 >/dev/null || skip "python3 is needed"
HELPER=$(dirname "$DUMPWATCH")/dumpwatch-upload
[ -x "$HELPER" ] || fail "$HELPER is not built"
SERVER_PID=
trap 'if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi; cleanup' EXIT
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy AWS_SESSION_TOKEN
export AWS_ACCESS_KEY_ID=AKID AWS_SECRET_ACCESS_KEY=the-secret-that-no-log-shows
python3 "$DW_SOURCE_DIR/tests/tools/s3hostile.py" >"$T/port" 2>"$T/server.log" &
SERVER_PID=$!
wait_for "[ -s '$T/port' ]" 10 || fail "the hostile server did not start"
SPORT=$(cat "$T/port")
EP=http://127.0.0.1:$SPORT
STATE="$T/state"
mkdir -m 0700 "$STATE" "$STATE/uploads"
head -c 100000 /dev/urandom >"$DUMPS/app.core"
SEQ=0
# queue BUCKET: an upload of app.core queued for BUCKET, as a stop leaves it.
queue() {
	SEQ=$((SEQ + 1))
	printf '{"files":[{"path":"%s","key":"k","done":false}],"keep_local":true,"pid":1,"process":"app",%s\n' \
		"$DUMPS/app.core" '"rule":"r","attempts":0,"queued_unix_us":0}' \
		>"$STATE/uploads/$(printf %016d "$SEQ").json"
	chmod 0600 "$STATE/uploads/$(printf %016d "$SEQ").json"
}

# (a) The stall bucket holds the connection open.
queue
start_guard --state-dir "$STATE" --upload s3://stall --upload-endpoint "$EP"
wait_for "ss -Htnp state established '( dport = :$SPORT )' | grep -q users" 30 ||
	fail "(a) no connection to the server"
conn=$(ss -Htnpe state established "( dport = :$SPORT )" | head -1)
owner_pid=$(sed -n 's/.*pid=\([0-9]*\).*/\1/p' <<<"$conn")
# ss -e shows uid:N for a socket of a uid other than 0.
owner_uid=$(sed -n 's/.* uid:\([0-9]*\) .*/\1/p' <<<"$conn")
owner_uid=${owner_uid:-0}
[ -n "$owner_pid" ] || fail "(a) cannot read the connection's owner: $conn"
[ "$owner_pid" != "$DW_PID" ] || fail "(a) the guard itself holds the connection"
[ "$owner_uid" != 0 ] || fail "(a) the connection's socket is root's"
[ "$(readlink "/proc/$owner_pid/exe")" = "$(readlink -f "$HELPER")" ] ||
	fail "(a) the connection is held by $(readlink "/proc/$owner_pid/exe"), not the helper"
read -r _ ruid euid suid fsuid < <(grep '^Uid:' "/proc/$owner_pid/status")
((ruid >= 2102853632 && ruid < 2102853632 + 65536)) && [ "$ruid" = "$euid" ] && [ "$ruid" = "$suid" ] &&
	[ "$ruid" = "$fsuid" ] || fail "(a) the helper runs as uids $ruid $euid $suid $fsuid, not one transient uid"
[ "$(ps -e -o uid= | awk -v u="$ruid" '$1 == u' | wc -l)" -eq 1 ] || fail "(a) another process has the helper's uid"
grep_q '^NoNewPrivs:[[:space:]]*1' "/proc/$owner_pid/status" || fail "(a) the helper may gain privileges"
[ "$(readlink "/proc/$owner_pid/fd/0")" = "$DUMPS/app.core" ] || fail "(a) fd 0 is not the file"
# Nothing else of the daemon's: stdio, the socket, libcurl's own (an epoll,
# an eventfd or a pipe), and no other file.
files=$(ls -l "/proc/$owner_pid/fd" | awk '/->/ {print $NF}' | grep '^/' | grep -v '^/dev/null$' || true)
[ "$files" = "$DUMPS/app.core" ] || fail "(a) the helper holds other files: $files"
# The guard maps none of the network libraries.
! grep -E 'libcurl|libssl|libcrypto|libgnutls|libmicrohttpd' "/proc/$DW_PID/maps" >/dev/null ||
	fail "(a) the guard maps $(grep -oE 'lib(curl|ssl|crypto|gnutls|microhttpd)[^ ]*' "/proc/$DW_PID/maps" | sort -u | tr '\n' ' ')"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "(a) the guard exited with status $DW_RC"
wait_for "! kill -0 $owner_pid 2>/dev/null" 10 || fail "(a) the helper outlived the guard"
rm -f "$STATE"/uploads/*.json

# (b) A guard without its helper, and one whose helper another user owns.
make_user ATTACKER
mkdir -m 0755 "$T/bare" "$T/theirs"
cp "$DUMPWATCH" "$T/bare/dumpwatch"
cp "$DUMPWATCH" "$HELPER" "$T/theirs/"
chown "$ATTACKER_UID" "$T/theirs/dumpwatch-upload"
for variant in bare theirs; do
	if [ "$variant" = bare ] && [ -e /usr/local/libexec/dumpwatch/dumpwatch-upload ]; then
		echo "(b) bare: skipped, an installed helper is in /usr/local/libexec/dumpwatch"
		continue
	fi
	: >"$JOURNAL"
	queue
	DUMPWATCH="$T/$variant/dumpwatch" start_guard --state-dir "$STATE" --upload s3://dumps --upload-endpoint "$EP"
	wait_journal upload-failed 1 30 || fail "(b) $variant: no failure journaled"
	rec=$(grep '"event":"upload-failed"' "$JOURNAL" | head -1)
	jq -e '.permanent == true and .local == "kept"' <<<"$rec" >/dev/null ||
		fail "(b) $variant: not one permanent failure with the dump kept: $rec"
	if [ "$variant" = bare ]; then
		jq -r .error <<<"$rec" | grep_q "helper program dumpwatch-upload not found in .* nor beside $T/bare" ||
			fail "(b) bare: the error does not say the helper is missing: $rec"
	else
		jq -r .error <<<"$rec" | grep_q "refusing to execute $T/theirs/dumpwatch-upload: .*owned by uid $ATTACKER_UID" ||
			fail "(b) theirs: the error does not say the helper is refused: $rec"
	fi
	[ -f "$DUMPS/app.core" ] || fail "(b) $variant: the dump is gone"
	grep -c "upload of $DUMPS/app.core failed and is not retried" "$T/dw.out" | grep_q -x 1 ||
		fail "(b) $variant: not one log line"
	! grep -q "^PUT\|^POST" "$T/server.log" || fail "(b) $variant: something was sent"
	stop_guard
	rm -f "$STATE"/uploads/*.json
	: >"$T/dw.out"
done
! grep -rqF the-secret-that-no-log-shows "$T/dw.out" "$JOURNAL" || fail "the secret reached a log line or the journal"
echo "PASS: the upload runs in its helper under a transient uid, not in the guard; a missing or foreign helper is one permanent line"
