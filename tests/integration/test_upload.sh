#!/usr/bin/env bash
# Uploads against a real S3-compatible server (s3rver): the guard ships each
# dump and its context files under the configured prefix with the right sizes
# (the dump, larger than the part size, in parts); with the server down the
# upload is retried until it is back, once per file; a restart with an upload
# queued finishes it; a missing bucket and refused credentials are one clear
# line each, with the local dump kept; the secret reaches no log line.
source "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
trap 's3rver_stop; cleanup' EXIT
s3rver_install
S3DIR="$T/s3"
s3rver_start "$S3DIR" dumps
PORT=$S3RVER_PORT
s3rver_restart() {
	node "$S3RVER_JS" -d "$S3DIR/data" -a 127.0.0.1 -p "$PORT" -s --configure-bucket dumps \
		>>"$S3DIR/s3rver.log" 2>&1 &
	S3RVER_PID=$!
	wait_for "curl -s -o /dev/null --max-time 2 '$S3_ENDPOINT/'" 20 || fail "s3rver did not start again"
}
SECRET=the-secret-that-no-log-shows
printf 'AWS_ACCESS_KEY_ID=S3RVER\nAWS_SECRET_ACCESS_KEY=%s\n' "$SECRET" >"$T/creds"
chmod 0600 "$T/creds"
STATE="$T/state"

start_app
cat >"$RULES/spike.json" <<EOF
{"name": "spike", "process": {"pid": $APP_PID}, "when": "loh-size > 200MB", "dump": {"type": "triage"},
 "limits": {"max-dumps": 10, "cooldown": "2s"}}
EOF
guard() { # ARGS...: the guard with the upload options of this test
	local attached
	attached=$(journal_count attach)
	start_guard --state-dir "$STATE" --upload-endpoint "$S3_ENDPOINT" --upload-credentials "$T/creds" \
		--upload-part-size 5MiB "$@"
	wait_journal attach "$((attached + 1))" 15 || fail "the guard did not attach"
}
# One dump per spike: it comes after the cooldown, and is held far less than
# the cooldown even with the dump's pause in it (the process is suspended
# while its dump is written).
spike() {
	sleep 2.5
	app_cmd "spike 300 500"
}
object() { echo "$S3DIR/data/dumps/$1._S3rver_object"; }

# 1. A dump and its context files arrive under node1/, the dump in parts.
guard --upload s3://dumps/node1
spike
wait_journal upload 1 60 || fail "no upload record"
core=$(find "$DUMPS" -maxdepth 1 -name '*.core' | head -1)
name=$(basename "$core" .core)
[ "$(stat -c %s "$core")" -gt $((5 * 1024 * 1024)) ] || fail "the dump is not larger than the part size"
for ext in core json svg; do
	curl -sf -o "$T/back.$ext" "$S3_ENDPOINT/dumps/node1/$name.$ext" || fail "node1/$name.$ext is not in the bucket"
	cmp "$DUMPS/$name.$ext" "$T/back.$ext" || fail "node1/$name.$ext differs from the local file"
done
grep '"event":"upload"' "$JOURNAL" | grep "\"key\":\"node1/$name.core\"" |
	grep_q "\"bytes\":$(stat -c %s "$core")}" || fail "the upload record does not name the key and size"
grep '"event":"upload"' "$JOURNAL" | grep_q '"local":"kept"' || fail "the local copy is not kept by default"
[ -z "$(ls -A "$STATE/uploads")" ] || fail "the queue is not empty after the upload: $(ls "$STATE/uploads")"

# 2. The server goes down: the upload is retried until it is back, and each
# file arrives once. The local copies go once uploaded (--upload-keep no).
stop_guard
guard --upload s3://dumps/node1 --upload-keep no
s3rver_stop
spike
wait_journal dump 2 60 || fail "no second dump"
wait_journal upload-failed 1 30 || fail "no failed upload while the server is down"
grep '"event":"upload-failed"' "$JOURNAL" | grep_q '"retry_in_s":5' || fail "the failure is not retried in 5 s"
[ "$(ls "$STATE/uploads" | wc -l)" -eq 1 ] || fail "the upload is not queued on disk"
"$DUMPWATCH" status --json --state-dir "$STATE" >"$T/status.json" || fail "dumpwatch status failed"
[ "$(jq .uploads_queued "$T/status.json")" = 1 ] || fail "status does not show the queued upload: $(cat "$T/status.json")"
s3rver_restart
wait_journal upload 2 60 || fail "the upload did not go on once the server was back"
# The dump whose upload failed while the server was down (a later one, if a
# busy machine made the spike outlast the cooldown, is not this one).
second=$(grep '"event":"upload-failed"' "$JOURNAL" | head -1 | jq -r .dump)
name2=$(basename "$second" .core)
for ext in core json svg; do
	curl -sf -o /dev/null "$S3_ENDPOINT/dumps/node1/$name2.$ext" || fail "node1/$name2.$ext missing after the retry"
	[ ! -e "$DUMPS/$name2.$ext" ] || fail "$name2.$ext kept with --upload-keep no"
done
[ "$(grep '"event":"upload"' "$JOURNAL" | grep -c "$name2.core")" -eq 1 ] || fail "the retried dump was journaled twice"
# Each file once: the attempts were one failed try and one try per file.
grep '"event":"upload"' "$JOURNAL" | grep "$name2.core" | grep_q '"attempts":4' ||
	fail "expected 4 attempts (one failed, one per file): $(grep '"event":"upload"' "$JOURNAL" | grep "$name2.core")"

# 3. A restart with an upload queued: it is finished by the next start.
s3rver_stop
spike
wait_journal dump 3 60 || fail "no third dump"
wait_journal upload-failed 2 30 || fail "no failed upload before the restart"
stop_guard
[ "$(ls "$STATE/uploads" | wc -l)" -eq 1 ] || fail "nothing queued across the restart"
s3rver_restart
guard --upload s3://dumps/node1
wait_journal upload 3 60 || fail "the queued upload was not finished after the restart"
grep_q "1 upload(s) queued before the last stop" "$T/dw.out" || fail "the restart does not say it took the queue over"
third=$(grep '"event":"dump"' "$JOURNAL" | tail -1 | jq -r .path)
curl -sf -o /dev/null "$S3_ENDPOINT/dumps/node1/$(basename "$third")" || fail "the queued dump is not in the bucket"
stop_guard

# 4. A missing bucket: one clear line, not retried, the dump kept.
guard --upload s3://nosuch/node1
spike
wait_journal upload-failed 3 60 || fail "no failure for a missing bucket"
grep '"event":"upload-failed"' "$JOURNAL" | tail -1 | grep '"permanent":true' | grep '"local":"kept"' |
	grep_q NoSuchBucket || fail "the missing bucket is not said"
last=$(grep '"event":"dump"' "$JOURNAL" | tail -1 | jq -r .path)
[ -f "$last" ] || fail "the dump was not kept after a permanent failure"
grep_q "failed and is not retried (the local files are kept): .*NoSuchBucket" "$T/dw.out" || fail "no log line"
stop_guard

# 5. Refused credentials: the same.
printf 'AWS_ACCESS_KEY_ID=NOTAKEY\nAWS_SECRET_ACCESS_KEY=%s\n' "$SECRET" >"$T/creds"
guard --upload s3://dumps/node1
spike
wait_journal upload-failed 4 60 || fail "no failure for refused credentials"
grep '"event":"upload-failed"' "$JOURNAL" | tail -1 | grep '"permanent":true' |
	grep_q InvalidAccessKeyId || fail "the refused key is not said"
stop_guard
# A credentials file others may read is refused at start.
chmod 0644 "$T/creds"
set +e
"$DUMPWATCH" --rules-dir "$RULES" --dump-dir "$DUMPS" --upload s3://dumps --upload-credentials "$T/creds" \
	--upload-endpoint "$S3_ENDPOINT" >"$T/creds.out" 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] && grep_q "chmod 0600 $T/creds" "$T/creds.out" || fail "a readable credentials file: $(cat "$T/creds.out")"

! grep -rqF "$SECRET" "$T/dw.out" "$JOURNAL" "$T/creds.out" || fail "the secret reached a log line or the journal"
[ "$(grep -c '"event":"upload"' "$JOURNAL")" -eq 3 ] || fail "expected exactly three uploads"
echo "PASS: uploads to s3rver: parts, retries, a restart with a queue, a missing bucket, refused credentials"
