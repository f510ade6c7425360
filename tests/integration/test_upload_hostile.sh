#!/usr/bin/env bash
# The guard's uploads against a hostile S3 endpoint (tests/tools/s3hostile.py,
# the bucket's name choosing how it misbehaves), with an upload queued before a
# restart: a "200 OK" followed by a body announced as 4 GiB, an ETag of 200 KB
# (more than libcurl takes) and an ETag holding an escape sequence are each
# journaled as a failed attempt with retry_in_s, never as an upload nor as
# permanent, and retried; the journal and the log say why in one line, what
# came from the server escaped.
source "$(dirname "$0")/lib.sh"
: "${DW_SOURCE_DIR:?set by ctest}"
command -v python3 >/dev/null || skip "python3 is needed"
SERVER_PID=
trap 'if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi; cleanup' EXIT
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy AWS_SESSION_TOKEN
export AWS_ACCESS_KEY_ID=AKID AWS_SECRET_ACCESS_KEY=the-secret-that-no-log-shows

python3 "$DW_SOURCE_DIR/tests/tools/s3hostile.py" >"$T/port" 2>"$T/server.log" &
SERVER_PID=$!
wait_for "[ -s '$T/port' ]" 10 || fail "the hostile server did not start"
EP=http://127.0.0.1:$(cat "$T/port")

STATE="$T/state"
mkdir -m 0700 "$STATE" "$STATE/uploads"
head -c 100000 /dev/urandom >"$DUMPS/app.core"
SEQ=0
records() { local n; n=$(journal_count "$1"); echo "${n:-0}"; }

# hostile BUCKET WORD: an upload queued for BUCKET (as a stop leaves it),
# then the guard started: two failed attempts, the first retried in 5 s,
# the error saying WORD; no upload.
hostile() {
	local bucket=$1 word=$2 failed uploads rec
	SEQ=$((SEQ + 1))
	printf '{"files":[{"path":"%s","key":"k-%s","done":false}],"keep_local":true,"pid":1,"process":"app",%s\n' \
		"$DUMPS/app.core" "$bucket" '"rule":"r","attempts":0,"queued_unix_us":0}' \
		>"$STATE/uploads/$(printf %016d "$SEQ").json"
	chmod 0600 "$STATE/uploads/$(printf %016d "$SEQ").json"
	failed=$(records upload-failed)
	uploads=$(records upload)
	start_guard --state-dir "$STATE" --upload "s3://$bucket" --upload-endpoint "$EP"
	wait_for "[ \$(records upload-failed) -ge $((failed + 2)) ] || [ \$(records upload) -gt $uploads ]" 60 ||
		fail "$bucket: no second attempt within 60 s"
	[ "$(records upload)" -eq "$uploads" ] || fail "$bucket: the hostile answer was journaled as an upload"
	rec=$(grep '"event":"upload-failed"' "$JOURNAL" | sed -n "$((failed + 1))p")
	jq -e '.retry_in_s == 5 and .permanent == null and .attempts == 1' <<<"$rec" >/dev/null ||
		fail "$bucket: the first failure is not retried in 5 s: $rec"
	[ "$(jq -r .key <<<"$rec")" = "k-$bucket" ] || fail "$bucket: the record names another key: $rec"
	jq -r .error <<<"$rec" | grep_q -F -- "$word" || fail "$bucket: the error does not say $word: $rec"
	grep '"event":"upload-failed"' "$JOURNAL" | sed -n "$((failed + 2))p" | grep_q '"retry_in_s":10' ||
		fail "$bucket: the second failure is not retried in 10 s"
	# The log line is escaped once more (a backslash doubled).
	grep_q -F "upload of $DUMPS/app.core failed (attempt 1), retrying in 5 s: s3: PUT of $bucket/k-$bucket failed: ${word//\\/\\\\}" \
		"$T/dw.out" || fail "$bucket: no log line saying why and when it is retried"
	stop_guard
	[ "$DW_RC" -eq 0 ] || fail "$bucket: the guard exited with status $DW_RC"
	rm -f "$STATE/uploads/$(printf %016d "$SEQ").json"
}

hostile huge-put "HTTP 200 with a body longer than 65536 bytes"
hostile etagbig-put "the answer's header lines exceed a limit"
hostile etagbad-put 'HTTP 200 with an ETag outside its grammar: "ab\x1b[31m<x>\xff"'

! grep -rqF the-secret-that-no-log-shows "$T/dw.out" "$JOURNAL" || fail "the secret reached a log line or the journal"
! LC_ALL=C grep -q $'\x1b' "$T/dw.out" "$JOURNAL" || fail "an escape sequence from the server reached the log or the journal"
echo "PASS: test_upload_hostile: a 4 GiB answer, a 200 KB ETag, an ETag with an escape: each retried, none an upload"
