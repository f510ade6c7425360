#!/usr/bin/env bash
# s3.c against a hostile S3 endpoint (tests/tools/s3hostile.py; the bucket's
# name chooses how it misbehaves). Each answer ends in one bounded line of
# printable text and the right exit status of dw_s3put: 75 (retryable) for all
# but the answers that say a retry cannot help (1), and every failed multipart
# upload is aborted.
# - What the server says is escaped: an error body forging log lines.
# - Bodies are bounded: an endless error body; a "200 OK" to a PUT, and to
#   each call of a multipart upload (initiate, part, complete, abort), followed
#   by a body announced as 4 GiB, or endless in chunks, is no success, and
#   less than 64 MiB of it is sent before the client hangs up (the socket
#   buffers; the client keeps 64 KiB).
# - ETags are checked: one of 200 KB (more than libcurl takes), one of 1000
#   bytes, one with an escape sequence, '<' and a Latin-1 byte, in a single
#   PUT and in a part; a part without one.
# - Header blocks are bounded: 5000 lines, 80 KB.
# - Malformed answers: an UploadId missing, a CompleteMultipartUpload answered
#   200 with an error inside or with nothing.
# - The verdict: a payload hash mismatch, a skewed clock, an upload the server
#   forgot (NoSuchUpload), SlowDown and a silent server are retried; a bucket
#   moved for good and refused credentials are not.
set -euo pipefail
: "${DW_S3PUT:?set by ctest: path of dw_s3put}"
: "${DW_SOURCE_DIR:?set by ctest}"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed"; exit 77; }
T=$(mktemp -d /tmp/dw-s3h.XXXXXX)
SERVER_PID=
cleanup() {
	if [ -n "$SERVER_PID" ]; then
		kill "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	echo "--- dw_s3put stdout"; cat -A "$T/out" 2>/dev/null || true
	echo "--- dw_s3put stderr"; cat -A "$T/err" 2>/dev/null || true
	echo "--- server"; tail -n 30 "$T/server.log" 2>/dev/null || true
	echo "FAIL: $*"
	exit 1
}
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy AWS_SESSION_TOKEN
export AWS_ACCESS_KEY_ID=AKID AWS_SECRET_ACCESS_KEY=SECRETKEY

python3 "$DW_SOURCE_DIR/tests/tools/s3hostile.py" >"$T/port" 2>"$T/server.log" &
SERVER_PID=$!
for _ in $(seq 1 100); do [ -s "$T/port" ] && break; sleep 0.1; done
[ -s "$T/port" ] || fail "the server did not start"
EP=http://127.0.0.1:$(cat "$T/port")

head -c 1000 /dev/urandom >"$T/small"
head -c 11000000 /dev/urandom >"$T/big"

put() { # EXIT-STATUS WORD -- ARGS...: runs dw_s3put against EP, checks one line with WORD
	local want=$1 word=$2 rc=0
	shift 3
	timeout 60 "$DW_S3PUT" --endpoint "$EP" "$@" >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" -eq "$want" ] || fail "$*: exit status $rc, expected $want"
	[ "$(wc -l <"$T/err")" -eq 1 ] || fail "$*: expected one line on stderr"
	[ ! -s "$T/out" ] || fail "$*: a failed upload printed a result"
	grep -qF -- "$word" "$T/err" || fail "$*: stderr does not say $word"
	! LC_ALL=C grep -q "[[:cntrl:]]" <(tr -d '\n' <"$T/err") || fail "$*: a control character on stderr"
	[ "$(wc -c <"$T/err")" -lt 1024 ] || fail "$*: more than 1 KiB on stderr"
	! grep -q SECRETKEY "$T/err" || fail "$*: the secret on stderr"
}
small() { put "$1" "$2" -- --bucket "$3" "$T/small" k; }
big() { put "$1" "$2" -- --bucket "$3" --part-size 5242880 "$T/big" k; }
aborted() { # BUCKET
	grep -q "^ABORT /$1/k?uploadId=id-1\$" "$T/server.log" || fail "the failed upload to $1 was not aborted"
}
# An endless answer: the server logs what it sent once the client hung up.
bounded() { # BUCKET
	local sent
	for _ in $(seq 1 300); do grep -q "^SENT $1 " "$T/server.log" && break; sleep 0.1; done
	sent=$(sed -n "s/^SENT $1 //p" "$T/server.log" | sort -n | tail -1)
	[ -n "$sent" ] || fail "$1: the client did not hang up on the endless answer"
	[ "$sent" -lt $((64 << 20)) ] || fail "$1: $sent bytes of the endless answer were taken"
}

# The message is cut at its NUL; what comes before is escaped.
small 1 'no\n<3>dumpwatch: forged line\x1b[31m\r (check' forge
small 75 "HTTP 503" endless
bounded endless
put 75 "retry later" -- --bucket stall --timeout-ms 1500 "$T/small" k

# A "200 OK" with a body of 4 GiB, or endless, is a failed attempt, retried.
small 75 "HTTP 200 with a body longer than 65536 bytes" huge-put
bounded huge-put
small 75 "HTTP 200 with a body longer than 65536 bytes" chunked-put
bounded chunked-put
big 75 "CreateMultipartUpload for huge-init/k failed: HTTP 200 with a body longer than 65536 bytes" huge-init
bounded huge-init
big 75 "UploadPart 1 of 3 of huge-part/k failed: HTTP 200 with a body longer than 65536 bytes" huge-part
bounded huge-part
aborted huge-part
big 75 "CompleteMultipartUpload of huge-complete/k failed: HTTP 200 with a body longer" huge-complete
bounded huge-complete
aborted huge-complete
big 75 "CompleteMultipartUpload of chunked-complete/k failed: HTTP 200 with a body longer" chunked-complete
bounded chunked-complete
aborted chunked-complete
# The abort, answered so, neither hangs nor hides the first failure.
big 75 "UploadPart 1 of 3 of huge-abort/k failed: HTTP 503, S3 error SlowDown" huge-abort
aborted huge-abort
bounded huge-abort

# ETags: too long (libcurl's own limit, then ours), outside the grammar.
small 75 "PUT of etagbig-put/k failed: the answer's header lines exceed a limit" etagbig-put
big 75 "UploadPart 1 of 3 of etagbig-part/k failed: the answer's header lines exceed a limit" etagbig-part
aborted etagbig-part
small 75 "PUT of etaglong-put/k failed: HTTP 200 with an ETag longer than 128 bytes" etaglong-put
big 75 "UploadPart 1 of 3 of etaglong-part/k failed: HTTP 200 with an ETag longer than 128 bytes" etaglong-part
aborted etaglong-part
small 75 'HTTP 200 with an ETag outside its grammar: "ab\x1b[31m<x>\xff"' etagbad-put
big 75 'HTTP 200 with an ETag outside its grammar: "ab\x1b[31m<x>\xff"' etagbad-part
aborted etagbad-part
big 75 "UploadPart 1 of 3 of noetag/k failed: HTTP 200 with no ETag" noetag
aborted noetag

# Header blocks: too many lines, too many bytes.
small 75 "PUT of headlines-put/k failed: HTTP 200 with more than 100 header lines" headlines-put
small 75 "PUT of headbytes-put/k failed: HTTP 200 with more than 65536 bytes of header lines" headbytes-put

# Malformed answers.
big 75 "no usable UploadId" noid
big 75 "InternalError" err200
aborted err200
big 75 "CompleteMultipartUpload of noresult/k failed: HTTP 200 without a CompleteMultipartUploadResult" noresult
aborted noresult

# The verdict: by the S3 code, else by the status.
small 75 "XAmzContentSHA256Mismatch" badsha
small 75 "RequestTimeTooSkewed" skewed
big 75 "NoSuchUpload" nosuchupload
aborted nosuchupload
small 75 "SlowDown" slowdown
small 1 "PermanentRedirect" moved

echo "PASS: test_s3_hostile"
