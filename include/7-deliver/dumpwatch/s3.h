/* S3-compatible object storage, what the daemon itself needs of it: the
 * configuration (endpoint, bucket, prefix, addressing, part size) checked,
 * the request targets it names, the credentials read from the environment
 * or a root-only file, and the pure parts of the protocol shared with the
 * upload helper (src/helpers/upload/s3client.h, which makes the requests):
 * URI and query encoding, the date, and the bounded reading of an answer.
 *
 * An answer is taken on trust in nothing: its header lines, its body and
 * its ETag have bounds (below), and an answer beyond one, or malformed,
 * fails the request as retryable; what of it reaches an error sentence is
 * escaped into one line. Retryable or permanent is decided by the S3 error
 * code, else the HTTP status (s3_judge_response): permanent only when a
 * retry cannot help (the bucket, the credentials, the region or the part
 * size is wrong), everything else retryable.
 *
 * All of it is pure (no sockets, no clock, no globals) but the credentials'
 * loading, and unit-tested. */
#ifndef DUMPWATCH_S3_H
#define DUMPWATCH_S3_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define S3_DEFAULT_REGION "us-east-1"
#define S3_PART_MIN (5ULL << 20) /* S3's smallest part (all but the last) */
#define S3_PART_MAX (5ULL << 30) /* and largest */
#define S3_PART_DEFAULT (64ULL << 20)
#define S3_PARTS_MAX 10000         /* parts in one multipart upload */
#define S3_OBJECT_MAX (5ULL << 40) /* S3's largest object, 5 TiB */
#define S3_KEY_MAX 1024            /* bytes of a key, prefix included */
#define S3_ETAG_MAX 128            /* longest ETag taken from a server (S3's: 34 to 40 bytes) */

/* What of one answer is read: S3's error and result documents are under
 * 2 KiB, the header blocks it documents about ten lines, well under 1 KiB;
 * the bounds leave room for proxies in between. Past a bound the answer is
 * not read further and the request fails, retryable. The bounds on header
 * lines count every answer of a request (a 100 Continue included). */
#define S3_BODY_MAX (64 * 1024)         /* bytes of a body */
#define S3_HEADER_BYTES_MAX (64 * 1024) /* bytes of header lines, status lines included */
#define S3_HEADER_LINES_MAX 100         /* header lines, status lines and blank lines included */

struct s3_credentials {
	char access_key_id[128];
	char secret_access_key[128];
	char session_token[4096]; /* "" when none; sent as x-amz-security-token */
};

enum s3_addressing {
	S3_ADDRESSING_AUTO = 0, /* virtual-hosted when the host ends in amazonaws.com, else path-style */
	S3_ADDRESSING_PATH,     /* http://HOST/BUCKET/KEY */
	S3_ADDRESSING_VHOST,    /* http://BUCKET.HOST/KEY */
};

/* Where and how to upload. Zero values take the defaults. The strings are
 * the caller's and must outlive the call. */
struct s3_config {
	const char *endpoint; /* "http[s]://HOST[:PORT]" with no path, e.g. "https://s3.eu-west-1.amazonaws.com" */
	const char *region;   /* NULL or "": us-east-1 */
	const char *bucket;   /* letters, digits, '.', '-', '_'; 1-255 bytes */
	const char *prefix;   /* NULL or "": none; put before every key as it is (e.g. "dumps/host1/") */
	enum s3_addressing addressing;
	uint64_t part_size;           /* 0: 64 MiB; 5 MiB to 5 GiB; grown to keep a file within 10000 parts */
	long connect_timeout_ms;      /* 0: 10 s */
	long request_timeout_ms;      /* 0: 30 min; the whole of one request (one part) */
	long low_speed_bytes_per_sec; /* 0: 1024; a request slower than this ... */
	long low_speed_time_s;        /* 0: 60; ... for this long is abandoned (retryable) */
	const struct s3_credentials *creds;
};

/* Checks c (endpoint form, bucket name, region, part size, credentials).
 * Returns 0, or -EINVAL with a sentence. */
int s3_config_check(const struct s3_config *c, char *err, size_t errlen);

/* The part size an upload of size bytes uses: configured (0: the default)
 * clamped to 5 MiB..5 GiB, then doubled until size fits in 10000 parts. */
uint64_t s3_part_size(uint64_t configured, uint64_t size);

/* URI-encodes len bytes at s as SigV4 wants for S3: A-Z a-z 0-9 - _ . ~ kept,
 * '/' kept when keep_slash, every other byte %XX (upper-case hex). Writes a
 * NUL-terminated result into out. Returns its length, or -ENAMETOOLONG when
 * it does not fit in outlen. */
int s3_uri_encode(const char *s, size_t len, int keep_slash, char *out, size_t outlen);

/* The request target of an object (key NULL: of the bucket itself, for
 * nothing yet): the full URL without query, the Host header value, and the
 * canonical URI (the encoded path) that is signed. Path-style or
 * virtual-hosted as c says. Returns 0, -EINVAL (bad endpoint or key, with a
 * sentence) or -ENAMETOOLONG. */
struct s3_target {
	char url[4096];
	char host[512];
	char uri[3 * S3_KEY_MAX + 512];
};
int s3_target_build(const struct s3_config *c, const char *key, struct s3_target *out, char *err, size_t errlen);

/* The object's key, c's prefix + key, into out (S3_KEY_MAX + 1 bytes): not
 * empty, at most S3_KEY_MAX bytes, valid UTF-8. 0, or -EINVAL with a
 * sentence. */
int s3_full_key(const struct s3_config *c, const char *key, char *out, char *err, size_t errlen);

/* Whether s is 1 to max bytes of visible ASCII (no blank, no control). */
int s3_printable(const char *s, size_t max);

/* A name and a value: a query parameter or a header. */
struct s3_param {
	const char *name;
	const char *value;
};

/* The query string of a request: the parameters sorted by name, names and
 * values encoded, "name=value" joined by '&' (what is signed and sent).
 * Returns its length or -ENAMETOOLONG. */
int s3_query_string(const struct s3_param *query, size_t nquery, char *out, size_t outlen);

/* x-amz-date for t: "YYYYMMDDTHHMMSSZ" (UTC). */
void s3_amz_date(time_t t, char out[17]);

/* Finds the text of the first <tag>...</tag> element in body[0..len) (no
 * attributes, no nesting inside it), decodes the predefined entities and
 * numeric character references, and writes it NUL-terminated into out, cut to
 * outlen-1 bytes. Returns 0, -ENOENT when the element is absent or not closed
 * within len, -EBADMSG for a malformed entity. Never reads past len. */
int s3_xml_text(const char *body, size_t len, const char *tag, char *out, size_t outlen);

/* When one header line (as libcurl hands it over, with or without CRLF) is
 * "name: value" with the given name (any case), copies its value, blanks
 * around it trimmed, into out, NUL-terminated. Returns the value's length
 * (the value may hold NUL bytes of its own), -ENOENT for another header,
 * -E2BIG when the value does not fit in outlen. */
int s3_header_value(const char *line, size_t len, const char *name, char *out, size_t outlen);

/* Checks len bytes at etag as an ETag a server gave (a header's value or the
 * text of a result's <ETag>), before it is kept or sent back inside XML: the
 * entity-tag of RFC 9110 section 8.8.3, an opaque-tag "..." of one or more
 * etagc bytes (visible ASCII but '"'), the quotes optional (some servers omit
 * them), without the weak prefix W/ (a weak tag names no exact bytes) and
 * without '<', '>' or '&' (never in S3's hex ETags; kept out of the XML).
 * Returns 0, -E2BIG for more than S3_ETAG_MAX bytes, -EBADMSG otherwise
 * (empty included). */
int s3_etag_check(const char *etag, size_t len);

/* Judges the answer to a request: an HTTP status and its body. Returns 0 for
 * a 2xx without an <Error> (CompleteMultipartUpload may answer 200 with one).
 * Otherwise, by the S3 error code when the body has one this knows, else by
 * the status: permanent when a retry cannot help, -EACCES (AccessDenied,
 * InvalidAccessKeyId, SignatureDoesNotMatch, expired or invalid tokens; a
 * 401 or 403), -ENOENT (NoSuchBucket; a 404) or -EIO (PermanentRedirect,
 * AuthorizationHeaderMalformed, EntityTooLarge, EntityTooSmall; a 301);
 * everything else -EAGAIN, worth retrying later (5xx, 429, SlowDown,
 * InternalError, RequestTimeout, NoSuchUpload, RequestTimeTooSkewed, a code
 * or status this does not know). Writes one sentence into err: what (e.g.
 * "PUT of mybucket/a.dmp"), the status, the S3 code and message from the
 * body (escaped, bounded) and what to do. */
int s3_judge_response(long status, const char *body, size_t len, const char *what, char *err, size_t errlen);

/* Reads credentials into out. file NULL: from AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (optional). Otherwise from the
 * file, KEY=VALUE lines with those names (blank lines, '#' comments; a value
 * may be in matching single or double quotes; other names are ignored); a
 * relative name is taken in $CREDENTIALS_DIRECTORY (systemd LoadCredential=).
 * The file must be a regular file, not a symbolic link, owned by root or the
 * effective uid, with no permission for group or others. Returns 0, -ENOENT
 * (no credentials, no file), -EPERM (a file refused: the sentence says what to
 * fix), -EINVAL (a malformed line, with FILE:LINE), or another -errno. */
int s3_credentials_load(struct s3_credentials *out, const char *file, char *err, size_t errlen);

/* Parses len bytes at buf, KEY=VALUE lines as s3_credentials_load reads a
 * file (from names the source in messages, "FILE:LINE"), into out. 0,
 * -ENOENT (no key in it), -EINVAL (a malformed line). Pure. */
int s3_credentials_parse(struct s3_credentials *out, const char *buf, size_t len, const char *from, char *err,
                         size_t errlen);

/* Overwrites the credentials (the secret stays in no freed memory). */
void s3_credentials_clear(struct s3_credentials *c);

#endif
