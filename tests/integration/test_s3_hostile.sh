#!/usr/bin/env bash
# s3.c against a hostile S3 endpoint (a small Python server; the bucket name
# chooses how it misbehaves): an error body forging log lines, an endless
# error body, a server that never answers, a multipart upload without an
# UploadId, a part without an ETag, and a CompleteMultipartUpload answered 200
# with an error inside. Each ends in one bounded line and the right exit
# status (75 retryable, 1 permanent), within its timeouts, and every failed
# multipart upload is aborted.
set -euo pipefail
: "${DW_S3PUT:?set by ctest: path of dw_s3put}"
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
	echo "--- dw_s3put stderr"; cat -A "$T/err" 2>/dev/null || true
	echo "--- server"; tail -n 30 "$T/server.log" 2>/dev/null || true
	echo "FAIL: $*"
	exit 1
}
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy AWS_SESSION_TOKEN
export AWS_ACCESS_KEY_ID=AKID AWS_SECRET_ACCESS_KEY=SECRETKEY

cat >"$T/server.py" <<'PY'
import http.server, sys, time

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.command, self.path))
        sys.stderr.flush()

    def drain(self):
        left = int(self.headers.get("Content-Length", "0"))
        while left > 0:
            chunk = self.rfile.read(min(left, 1 << 16))
            if not chunk:
                break
            left -= len(chunk)

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        mode = self.path.split("/")[1].split("?")[0]
        if mode == "stall":
            time.sleep(60)
            return
        self.drain()
        if self.command == "DELETE":
            sys.stderr.write("ABORT %s\n" % self.path)
            sys.stderr.flush()
            return self.reply(204)
        if mode == "forge":
            return self.reply(403, b"<Error><Code>AccessDenied</Code><Message>no\n<3>dumpwatch: forged line"
                              b"\x1b[31m\r\x00end</Message></Error>")
        if mode == "endless":
            self.send_response(503)
            self.send_header("Content-Length", str(1 << 40))
            self.end_headers()
            try:
                while True:
                    self.wfile.write(b"<Error>" * 10000)
            except OSError:
                return
        if self.command == "POST" and self.path.endswith("?uploads="):
            if mode == "noid":
                return self.reply(200, b"<InitiateMultipartUploadResult><Bucket>noid</Bucket>"
                                  b"<UploadId></UploadId></InitiateMultipartUploadResult>")
            return self.reply(200, b"<InitiateMultipartUploadResult><UploadId>id-1</UploadId>"
                              b"</InitiateMultipartUploadResult>")
        if self.command == "PUT" and "partNumber=" in self.path:
            if mode == "noetag":
                return self.reply(200)
            return self.reply(200, headers=[("ETag", '"e"')])
        if self.command == "POST" and mode == "err200":
            return self.reply(200, b"<?xml version=\"1.0\"?>\n<Error><Code>InternalError</Code>"
                              b"<Message>We encountered an internal error. Please try again.</Message></Error>")
        return self.reply(500)

    do_PUT = do_POST = do_DELETE = do_GET = handle_any

s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 "$T/server.py" >"$T/port" 2>"$T/server.log" &
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
	grep -qF -- "$word" "$T/err" || fail "$*: stderr does not say $word"
	! LC_ALL=C grep -q "[[:cntrl:]]" <(tr -d '\n' <"$T/err") || fail "$*: a control character on stderr"
	[ "$(wc -c <"$T/err")" -lt 1024 ] || fail "$*: more than 1 KiB on stderr"
	! grep -q SECRETKEY "$T/err" || fail "$*: the secret on stderr"
}

# The message is cut at its NUL; what comes before is escaped.
put 1 'no\n<3>dumpwatch: forged line\x1b[31m\r (check' -- --bucket forge "$T/small" k
put 75 "HTTP 503" -- --bucket endless "$T/small" k
put 75 "retry later" -- --bucket stall --timeout-ms 1500 "$T/small" k
put 1 "no usable UploadId" -- --bucket noid --part-size 5242880 "$T/big" k
put 1 "no ETag" -- --bucket noetag --part-size 5242880 "$T/big" k
grep -q '^ABORT /noetag/k?uploadId=id-1$' "$T/server.log" || fail "the upload without ETags was not aborted"
put 75 "InternalError" -- --bucket err200 --part-size 5242880 "$T/big" k
grep -q '^ABORT /err200/k?uploadId=id-1$' "$T/server.log" || fail "the upload completed with an error was not aborted"

echo "PASS: test_s3_hostile"
