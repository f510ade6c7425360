#!/usr/bin/env python3
"""A hostile S3 endpoint for the upload tests (test_s3_hostile,
test_upload_hostile): path-style requests only, every request accepted
without checking its signature, and the bucket's name choosing how the
server misbehaves. It prints the port it listens on (127.0.0.1, chosen by
the kernel) on stdout, then logs each request as "METHOD PATH" on stderr,
each abort as "ABORT PATH", and, for an endless answer, "SENT BUCKET BYTES"
once the client has stopped reading it.

  s3hostile.py

Each request is one step of an upload: "put" (a single PUT), "init"
(CreateMultipartUpload), "part" (UploadPart), "complete"
(CompleteMultipartUpload) or "abort" (AbortMultipartUpload). A step the
bucket does not name is answered as S3 would answer it when all goes well.
The buckets:

  forge              403 AccessDenied whose message forges a log line
  endless            503 with an endless body
  stall              no answer for 60 s
  noid               init answered without an UploadId
  noetag             parts answered without an ETag
  err200             complete answered 200 with an <Error> (InternalError)
  noresult           complete answered 200 with an empty body
  huge-STEP          STEP answered 200 with its document (and its ETag) and
                     then an endless body announced as 4 GiB (Content-Length);
                     huge-abort answers parts 503 so that there is an abort
  chunked-STEP       the same, endless in chunks, with no length announced
  etagbig-STEP       STEP (put, part) answered 200 with an ETag of 200 KB
  etaglong-STEP      ... of 1000 bytes
  etagbad-STEP       ... holding an escape sequence, '<' and a Latin-1 byte
  headlines-put      put answered 200 with 5000 header lines
  headbytes-put      put answered 200 with 40 header lines of 2000 bytes
  badsha             put answered 400 XAmzContentSHA256Mismatch
  skewed             put answered 403 RequestTimeTooSkewed
  nosuchupload       complete answered 404 NoSuchUpload
  moved              put answered 301 PermanentRedirect
  slowdown           put answered 503 SlowDown
"""
import http.server
import sys
import time

HUGE = 4 << 30


def error_doc(code, message):
    return ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message>"
            "<RequestId>r</RequestId></Error>" % (code, message)).encode()


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def handle(self):
        # A client that stops reading is what the tests want: not an error.
        try:
            super().handle()
        except OSError:
            pass

    def log_message(self, fmt, *args):
        self.say("%s %s" % (self.command, self.path))

    def say(self, line):
        sys.stderr.write(line + "\n")
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

    def endless(self, bucket, status, doc, headers, chunked):
        """status, headers, doc, then spaces until the client goes."""
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(HUGE))
        self.end_headers()
        pad = b" " * (1 << 16)
        sent = 0
        try:
            first = doc
            while sent < HUGE:
                data = first + pad
                first = b""
                if chunked:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                else:
                    self.wfile.write(data)
                sent += len(data)
        except OSError:
            pass
        self.say("SENT %s %d" % (bucket, sent))
        self.close_connection = True

    def step(self):
        query = self.path.split("?", 1)[1] if "?" in self.path else ""
        if self.command == "DELETE":
            return "abort"
        if self.command == "POST":
            return "init" if query == "uploads=" else "complete"
        return "part" if "partNumber=" in query else "put"

    def normal(self, step):
        """What S3 answers to step when all goes well: status, body, headers."""
        if step == "init":
            return 200, (b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult>"
                         b"<Bucket>b</Bucket><Key>k</Key><UploadId>id-1</UploadId>"
                         b"</InitiateMultipartUploadResult>"), []
        if step == "complete":
            return 200, (b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUploadResult>"
                         b"<Bucket>b</Bucket><Key>k</Key><ETag>&quot;3858f62230ac3c915f300c664312c11f-3&quot;"
                         b"</ETag></CompleteMultipartUploadResult>"), []
        if step == "abort":
            return 204, b"", []
        return 200, b"", [("ETag", '"9b2cf535f27731c974343645a3985328"')]

    def handle_any(self):
        bucket = self.path.split("/")[1].split("?")[0]
        kind, _, at = bucket.partition("-")
        step = self.step()
        if bucket == "stall":
            time.sleep(60)
            return
        self.drain()
        if step == "abort":
            self.say("ABORT %s" % self.path)
        status, body, headers = self.normal(step)
        if bucket == "forge":
            return self.reply(403, b"<Error><Code>AccessDenied</Code><Message>no\n<3>dumpwatch: forged line"
                              b"\x1b[31m\r\x00end</Message></Error>")
        if bucket == "endless":
            return self.endless(bucket, 503, b"<Error>" * 10000, [], False)
        if bucket == "noid" and step == "init":
            return self.reply(200, b"<InitiateMultipartUploadResult><Bucket>noid</Bucket>"
                              b"<UploadId></UploadId></InitiateMultipartUploadResult>")
        if bucket == "noetag" and step == "part":
            return self.reply(200)
        if bucket == "err200" and step == "complete":
            return self.reply(200, b"<?xml version=\"1.0\"?>\n<Error><Code>InternalError</Code>"
                              b"<Message>We encountered an internal error. Please try again.</Message></Error>")
        if bucket == "noresult" and step == "complete":
            return self.reply(200)
        if kind in ("huge", "chunked") and at == "abort" and step == "part":
            return self.reply(503, error_doc("SlowDown", "Please reduce your request rate."))
        if kind in ("huge", "chunked") and at == step:
            return self.endless(bucket, 200, body, headers, kind == "chunked")
        if kind in ("etagbig", "etaglong", "etagbad") and at == step:
            etag = {"etagbig": '"' + "a" * 200000 + '"', "etaglong": '"' + "b" * 1000 + '"',
                    "etagbad": '"ab\x1b[31m<x>\xff"'}[kind]
            return self.reply(200, headers=[("ETag", etag)])
        if bucket == "headlines-put" and step == "put":
            return self.reply(200, headers=headers + [("X-Pad-%d" % i, "x") for i in range(5000)])
        if bucket == "headbytes-put" and step == "put":
            return self.reply(200, headers=headers + [("X-Pad-%d" % i, "y" * 2000) for i in range(40)])
        if bucket == "badsha" and step == "put":
            return self.reply(400, error_doc("XAmzContentSHA256Mismatch",
                                             "The provided 'x-amz-content-sha256' header does not match what "
                                             "was computed."))
        if bucket == "skewed" and step == "put":
            return self.reply(403, error_doc("RequestTimeTooSkewed", "The difference between the request time "
                                             "and the current time is too large."))
        if bucket == "nosuchupload" and step == "complete":
            return self.reply(404, error_doc("NoSuchUpload", "The specified upload does not exist."))
        if bucket == "moved" and step == "put":
            return self.reply(301, error_doc("PermanentRedirect", "The bucket you are attempting to access must "
                                             "be addressed using the specified endpoint."))
        if bucket == "slowdown" and step == "put":
            return self.reply(503, error_doc("SlowDown", "Please reduce your request rate."))
        return self.reply(status, body, headers)

    do_PUT = do_POST = do_DELETE = do_GET = handle_any


s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
print(s.server_address[1], flush=True)
s.serve_forever()
