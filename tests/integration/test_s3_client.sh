#!/usr/bin/env bash
# s3.c against a real S3-compatible server (s3rver): a small file arrives
# under its key with its bytes; a file of three parts arrives whole through a
# multipart upload; a missing bucket, an unknown access key and a credentials
# file others may read are permanent failures (exit 1) with one line saying
# what to fix; no server at all is a retryable one (exit 75).
#
# s3rver 3.7.1 checks that the access key exists but does not verify
# Signature Version 4 signatures (its authentication.js leaves them
# unimplemented) nor the payload's hash: a wrong secret is accepted there, so
# the signing itself is tested against AWS's published examples (test_s3).
set -euo pipefail
: "${DW_S3PUT:?set by ctest: path of dw_s3put}"
. "$(dirname "$0")/s3lib.sh"

T=$(mktemp -d /tmp/dw-s3.XXXXXX)
cleanup() {
	s3rver_stop
	rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	echo "--- dw_s3put stdout"; cat "$T/out" 2>/dev/null || true
	echo "--- dw_s3put stderr"; cat "$T/err" 2>/dev/null || true
	echo "--- s3rver"; tail -n 30 "$T/s3rver.log" 2>/dev/null || true
	echo "FAIL: $*"
	exit 1
}

s3rver_install
s3rver_start "$T" dumps
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
unset AWS_SESSION_TOKEN
# libcurl would send loopback requests to a proxy from the environment.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy

put() { # ARGS...: runs dw_s3put, sets RC
	RC=0
	timeout 120 "$DW_S3PUT" "$@" >"$T/out" 2>"$T/err" || RC=$?
}

expect_one_line() { # EXIT-STATUS WORD...
	local want=$1 w
	shift
	[ "$RC" -eq "$want" ] || fail "exit status $RC, expected $want"
	[ "$(wc -l <"$T/err")" -eq 1 ] || fail "expected one line on stderr"
	for w in "$@"; do grep -qF -- "$w" "$T/err" || fail "stderr does not say $w"; done
	! grep -q S3RVER "$T/err" || fail "a credential on stderr"
	! grep -q 'Signature=' "$T/err" || fail "a signature on stderr"
}

# 1. A small file, a prefix and a key with a space.
head -c 100000 /dev/urandom >"$T/small"
put --endpoint "$S3_ENDPOINT" --bucket dumps --prefix host1/ "$T/small" "app 1.dmp"
[ "$RC" -eq 0 ] || fail "small upload: exit status $RC"
read -r _ size parts _ <"$T/out"
grep -q '^host1/app 1.dmp 100000 0 ' "$T/out" || fail "small upload: unexpected result line"
curl -sf -o "$T/small.back" "$S3_ENDPOINT/dumps/host1/app%201.dmp" || fail "small upload: cannot download it"
cmp "$T/small" "$T/small.back" || fail "small upload: the bytes differ"

# 2. 12 MB in parts of 5 MiB: a multipart upload of three parts.
head -c 12000000 /dev/urandom >"$T/big"
put --endpoint "$S3_ENDPOINT" --bucket dumps --part-size 5242880 "$T/big" big.dmp
[ "$RC" -eq 0 ] || fail "multipart upload: exit status $RC"
read -r key size parts _ <"$T/out"
[ "$key $size $parts" = "big.dmp 12000000 3" ] || fail "multipart upload: result '$key $size $parts'"
curl -sf -o "$T/big.back" "$S3_ENDPOINT/dumps/big.dmp" || fail "multipart upload: cannot download it"
cmp "$T/big" "$T/big.back" || fail "multipart upload: the bytes differ"

# 3. A missing bucket, as a single PUT and as a multipart upload.
put --endpoint "$S3_ENDPOINT" --bucket nosuch "$T/small" x.dmp
expect_one_line 1 NoSuchBucket "nosuch/x.dmp" "create the bucket"
put --endpoint "$S3_ENDPOINT" --bucket nosuch --part-size 5242880 "$T/big" x.dmp
expect_one_line 1 NoSuchBucket CreateMultipartUpload

# 4. Credentials: an access key the server does not know; a credentials file
# group and others may read.
AWS_ACCESS_KEY_ID=NOTAKEY put --endpoint "$S3_ENDPOINT" --bucket dumps "$T/small" y.dmp
expect_one_line 1 InvalidAccessKeyId AWS_ACCESS_KEY_ID
printf 'AWS_ACCESS_KEY_ID=S3RVER\nAWS_SECRET_ACCESS_KEY=S3RVER\n' >"$T/creds"
chmod 0644 "$T/creds"
put --endpoint "$S3_ENDPOINT" --bucket dumps --credentials "$T/creds" "$T/small" y.dmp
expect_one_line 1 "chmod 0600 $T/creds"
chmod 0600 "$T/creds"
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$DW_S3PUT" --endpoint "$S3_ENDPOINT" --bucket dumps \
	--credentials "$T/creds" "$T/small" z.dmp >"$T/out" 2>"$T/err" || fail "upload with a credentials file"
curl -sf -o "$T/z.back" "$S3_ENDPOINT/dumps/z.dmp" && cmp "$T/small" "$T/z.back" ||
	fail "upload with a credentials file: not there"

# 5. No server: retryable.
s3rver_stop
put --endpoint "$S3_ENDPOINT" --bucket dumps "$T/small" w.dmp
expect_one_line 75 "retry later"

echo "PASS: test_s3_client"
