/* The S3 client of the upload helper (dumpwatch-upload): the requests of
 * an upload over libcurl, signed with AWS Signature Version 4, hashed with
 * libcrypto. Linked by the helper alone, never by the daemon (s3.h is the
 * daemon's part: configuration, credentials, the pure parts of the
 * protocol).
 *
 * Signing. libcurl 7.88 (Debian 12) signs a request itself
 * (CURLOPT_AWS_SIGV4) correctly when its query is already in AWS's
 * canonical form and every header it is given is one to send: PutObject,
 * UploadPart (?partNumber=N&uploadId=ID, sorted), CompleteMultipartUpload
 * and AbortMultipartUpload (?uploadId=ID) are signed so, with the payload's
 * hash given in x-amz-content-sha256 (it does not compute one for a
 * streamed body). CreateMultipartUpload (?uploads, a parameter without a
 * value) it signs wrongly before curl 8.5: that one is signed here
 * (s3_sign_v4, over libcrypto's HMAC; the unit tests check it against AWS's
 * published examples). A server that checks signatures (s3rver does) is
 * what checks libcurl's.
 *
 * s3_put_file blocks: the helper is a process per upload. Every request is
 * bounded by a connect timeout, a low-speed limit and a total time. */
#ifndef DUMPWATCH_S3CLIENT_H
#define DUMPWATCH_S3CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/s3.h"

#define S3_SHA256_HEX 65 /* a SHA-256 digest in hex, NUL included */

/* What a successful upload made. */
struct s3_result {
	char key[S3_KEY_MAX + 1];   /* the object's key, prefix included */
	char etag[S3_ETAG_MAX + 1]; /* as the server gave it ("" when it gave none) */
	uint64_t size;
	unsigned parts; /* 0: a single PUT */
};

/* One request to sign (AWS Signature Version 4, header form). */
struct s3_sign_input {
	const char *method;           /* "PUT" */
	const char *canonical_uri;    /* already encoded: s3_target.uri */
	const struct s3_param *query; /* raw names and values (encoded here); "uploads" takes value "" */
	size_t nquery;
	const struct s3_param *headers; /* every header to sign, host and x-amz-* included; names in any case */
	size_t nheaders;
	const char *payload_hash; /* hex SHA-256 of the body, as sent in x-amz-content-sha256 */
	const char *amz_date;     /* "YYYYMMDDTHHMMSSZ", as sent in x-amz-date */
	const char *region;
	const char *service; /* NULL: "s3" */
	const char *access_key_id;
	const char *secret_access_key;
};

/* Writes the Authorization header value ("AWS4-HMAC-SHA256 Credential=...,
 * SignedHeaders=...,Signature=...") into out. Returns 0, -EINVAL for a
 * malformed date or too many headers, -ENAMETOOLONG when out is too small. */
int s3_sign_v4(const struct s3_sign_input *in, char *out, size_t outlen);

/* The verdict on a transfer libcurl failed (curl_code, a CURLcode other than
 * CURLE_OK): -EINVAL when it says the request cannot be made here at all (an
 * unsupported protocol, a malformed URL, a feature not built in, an option
 * refused), which no retry changes; else -EAGAIN: the network, the server,
 * a timeout, a TLS failure, and CURLE_OUT_OF_MEMORY, which libcurl also
 * returns for a header line longer than it takes (100 KiB) and so says
 * nothing of this process's memory. */
int s3_transport_verdict(int curl_code);

/* Uploads size bytes of the open regular file fd, from offset 0, as
 * prefix+key, with content_type (NULL: application/octet-stream). A single
 * PUT when size <= the part size, else a multipart upload, aborted on any
 * failure. The file is read with pread only (twice: once to hash each
 * request's payload, once to send it), so fd's offset is untouched; the bytes
 * must not change meanwhile. Every answer is checked: its header lines and
 * body within the bounds above, the ETag of a PUT (optional) and of each part
 * (required) by s3_etag_check, an UploadId in CreateMultipartUpload's answer,
 * a CompleteMultipartUploadResult (its ETag checked) in
 * CompleteMultipartUpload's. Returns 0 with out filled (out may be NULL),
 * -EAGAIN for a failure worth retrying (no connection, a timeout, 5xx, 429,
 * throttling, an answer beyond a bound or malformed: see s3_judge_response
 * and s3_transport_verdict), or a permanent -errno (-EACCES, -ENOENT,
 * -EINVAL, -EIO, -EFBIG; a local file that cannot be read included), with one
 * sentence in err. */
int s3_put_file(const struct s3_config *c, int fd, uint64_t size, const char *key, const char *content_type,
                struct s3_result *out, char *err, size_t errlen);

/* The hex SHA-256 of len bytes at p (libcrypto's EVP). 0, or -ENOMEM. */
int s3_sha256_hex(const void *p, size_t len, char out[S3_SHA256_HEX]);

#endif
