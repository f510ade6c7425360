/* The upload helper's S3 client: see s3client.h.
 *
 * Design: every request carries the payload's real SHA-256 in
 * x-amz-content-sha256 (computed by a first pass over the bytes, so it works
 * with every S3-compatible server, including those that refuse
 * UNSIGNED-PAYLOAD over plain HTTP). A file larger than one part goes up as a
 * multipart upload; any failure after the upload was created aborts it, so
 * no invisible parts are left to bill. The server is not trusted: its header
 * lines and bodies are read up to fixed bounds (s3.h) and an answer past one
 * fails the request, retryable; the few fields read are found by a bounded
 * scan (s3.h) and checked (the ETag against its grammar) before they are
 * kept or sent back; what of them reaches an error sentence is escaped into
 * one line. */
#include "s3client.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dumpwatch/text.h"

#define SIGN_HEADERS_MAX 16
#define CANON_MAX (32 * 1024)
#define READ_CHUNK (1024 * 1024)

/* ---- signing (AWS Signature Version 4, header form) ---- */

static int amz_date_ok(const char *d)
{
	if (!d || strlen(d) != 16 || d[8] != 'T' || d[15] != 'Z')
		return 0;
	for (int i = 0; i < 15; i++)
		if (i != 8 && (d[i] < '0' || d[i] > '9'))
			return 0;
	return 1;
}

static void hex_of(const unsigned char *d, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * n] = '\0';
}

int s3_sha256_hex(const void *p, size_t len, char out[S3_SHA256_HEX])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned dl = 0;

	if (EVP_Digest(p, len, d, &dl, EVP_sha256(), NULL) != 1 || dl != 32)
		return -ENOMEM;
	hex_of(d, dl, out);
	return 0;
}

/* HMAC-SHA256 of the NUL-terminated msg under key into out (32 bytes). */
static int hmac_str(const unsigned char *key, size_t keylen, const char *msg, unsigned char out[32])
{
	size_t n = 0;

	if (!EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key, keylen, (const unsigned char *)msg, strlen(msg), out,
	               32, &n) ||
	    n != 32)
		return -ENOMEM;
	return 0;
}

/* A header as signed: its name in lower case, its value trimmed with runs of
 * spaces made one. */
struct canon_header {
	char name[64];
	const char *value;
};

int s3_sign_v4(const struct s3_sign_input *in, char *out, size_t outlen)
{
	struct canon_header h[SIGN_HEADERS_MAX];
	size_t order[SIGN_HEADERS_MAX];
	if (!amz_date_ok(in->amz_date) || in->nheaders > SIGN_HEADERS_MAX || in->nquery > SIGN_HEADERS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < in->nheaders; i++) {
		size_t n = strlen(in->headers[i].name);
		if (n == 0 || n >= sizeof(h[i].name))
			return -EINVAL;
		for (size_t k = 0; k <= n; k++)
			h[i].name[k] = text_lower(in->headers[i].name[k]);
		h[i].value = in->headers[i].value ? in->headers[i].value : "";
		size_t j = i;
		for (; j > 0 && strcmp(h[order[j - 1]].name, h[i].name) > 0; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}

	/* Task 1: the canonical request. Its parts are ours (the method, the
	 * encoded path and query, the headers we send), each bounded. */
	char qs[CANON_MAX], signed_headers[SIGN_HEADERS_MAX * 65] = "";
	if (s3_query_string(in->query, in->nquery, qs, sizeof(qs)) < 0)
		return -ENAMETOOLONG;
	char *canon = NULL;
	size_t canon_len = 0;
	FILE *cr = open_memstream(&canon, &canon_len);
	if (!cr)
		return -ENOMEM;
	fprintf(cr, "%s\n%s\n%s\n", in->method, in->canonical_uri, qs);
	size_t shl = 0;
	for (size_t i = 0; i < in->nheaders; i++) {
		const struct canon_header *ch = &h[order[i]];
		fprintf(cr, "%s:", ch->name);
		const char *v = ch->value;
		while (*v == ' ' || *v == '\t')
			v++;
		size_t vl = strlen(v);
		while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
			vl--;
		for (size_t k = 0; k < vl; k++) {
			if ((v[k] == ' ' || v[k] == '\t') && k > 0 && (v[k - 1] == ' ' || v[k - 1] == '\t'))
				continue;
			fputc(v[k] == '\t' ? ' ' : v[k], cr);
		}
		fputc('\n', cr);
		shl += (size_t)snprintf(signed_headers + shl, sizeof(signed_headers) - shl, "%s%s", i ? ";" : "",
		                        ch->name);
	}
	fprintf(cr, "\n%s\n%s", signed_headers, in->payload_hash);
	if (fclose(cr) != 0) {
		free(canon);
		return -ENOMEM;
	}
	char canon_hex[S3_SHA256_HEX];
	int r = s3_sha256_hex(canon, canon_len, canon_hex);
	free(canon);
	if (r < 0)
		return r;

	/* Task 2: the string to sign. */
	const char *service = in->service ? in->service : "s3";
	char date8[9], scope[160], sts[320];
	memcpy(date8, in->amz_date, 8);
	date8[8] = '\0';
	int n = snprintf(scope, sizeof(scope), "%s/%s/%s/aws4_request", date8, in->region, service);
	if (n < 0 || (size_t)n >= sizeof(scope))
		return -ENAMETOOLONG;
	snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%s\n%s", in->amz_date, scope, canon_hex);

	/* Task 3: the signing key and the signature. */
	char ksecret[4 + 256];
	unsigned char k[32], d[32];
	n = snprintf(ksecret, sizeof(ksecret), "AWS4%s", in->secret_access_key);
	if (n < 0 || (size_t)n >= sizeof(ksecret)) {
		explicit_bzero(ksecret, sizeof(ksecret));
		return -EINVAL;
	}
	r = hmac_str((const unsigned char *)ksecret, (size_t)n, date8, k);
	explicit_bzero(ksecret, sizeof(ksecret));
	if (r == 0)
		r = hmac_str(k, sizeof(k), in->region, k);
	if (r == 0)
		r = hmac_str(k, sizeof(k), service, k);
	if (r == 0)
		r = hmac_str(k, sizeof(k), "aws4_request", k);
	if (r == 0)
		r = hmac_str(k, sizeof(k), sts, d);
	explicit_bzero(k, sizeof(k));
	if (r < 0)
		return r;
	char sig[S3_SHA256_HEX];
	hex_of(d, sizeof(d), sig);
	n = snprintf(out, outlen, "AWS4-HMAC-SHA256 Credential=%s/%s,SignedHeaders=%s,Signature=%s", in->access_key_id,
	             scope, signed_headers, sig);
	explicit_bzero(sig, sizeof(sig));
	if (n < 0 || (size_t)n >= outlen) {
		explicit_bzero(out, outlen);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* ---- requests (libcurl) ---- */

/* One upload: the handle (its connection reused from request to request),
 * the target and what is read back. */
struct upload {
	const struct s3_config *c;
	CURL *curl;
	struct s3_target t;
	const char *key; /* prefix included */
	char ekey[160];  /* bucket/key escaped and cut, for sentences */
	char region[65];
	uint8_t *chunk; /* READ_CHUNK bytes, for hashing */
	/* the answer, as far as it is read */
	long status;
	char body[S3_BODY_MAX];
	size_t body_len;
	int body_over;                 /* more than S3_BODY_MAX bytes came, or were announced */
	size_t head_lines, head_bytes; /* of the whole exchange, interim answers included */
	enum { HEAD_OK, HEAD_LINES, HEAD_BYTES } head_over;
	long head_status; /* of the answer whose header lines are coming */
	int head_done;    /* a final answer's header block has ended */
	enum { ETAG_NONE, ETAG_SET, ETAG_LONG } etag_state;
	char etag[S3_ETAG_MAX + 1];
	size_t etag_len; /* it may hold a NUL, which s3_etag_check refuses */
	/* the request body when read from the file */
	int fd;
	uint64_t off, left;
	int read_err; /* -errno of a failed read, -ENODATA when the file ended early */
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct upload *u = ud;
	size_t len = size * n;
	if (len > S3_BODY_MAX - u->body_len) {
		/* More than any S3 document: stop reading (libcurl fails with
		 * CURLE_WRITE_ERROR), and the request with it. */
		u->body_over = 1;
		return 0;
	}
	memcpy(u->body + u->body_len, p, len);
	u->body_len += len;
	return len;
}

/* The status of a status line ("HTTP/1.1 200 OK"), 0 when it has none. */
static long status_of(const char *p, size_t len)
{
	const char *sp = memchr(p, ' ', len);
	long status = 0;
	if (!sp || (size_t)(sp - p) + 4 > len)
		return 0;
	for (int i = 1; i <= 3; i++) {
		if (sp[i] < '0' || sp[i] > '9')
			return 0;
		status = status * 10 + (sp[i] - '0');
	}
	return status;
}

/* libcurl hands over each header line whole, status lines included, up to
 * its own limit of 100 KiB a line (beyond it, it fails the transfer). */
static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct upload *u = ud;
	size_t len = size * n;
	u->head_lines++;
	u->head_bytes += len;
	if (u->head_lines > S3_HEADER_LINES_MAX || u->head_bytes > S3_HEADER_BYTES_MAX) {
		u->head_over = u->head_lines > S3_HEADER_LINES_MAX ? HEAD_LINES : HEAD_BYTES;
		return 0; /* libcurl stops: CURLE_WRITE_ERROR */
	}
	if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) { /* a new answer (after 100 Continue) */
		u->head_status = status_of(p, len);
		u->etag_state = ETAG_NONE;
		u->etag[0] = '\0';
		u->etag_len = 0;
		return len;
	}
	if (len == 0 || p[0] == '\r' || p[0] == '\n') { /* the blank line that ends a header block */
		if (u->head_status >= 200)
			u->head_done = 1;
		return len;
	}
	int r = s3_header_value(p, len, "ETag", u->etag, sizeof(u->etag));
	if (r >= 0) {
		u->etag_state = ETAG_SET;
		u->etag_len = (size_t)r;
	} else if (r == -E2BIG) {
		u->etag_state = ETAG_LONG;
		u->etag[0] = '\0';
		u->etag_len = 0;
	}
	return len;
}

static size_t on_read(char *p, size_t size, size_t n, void *ud)
{
	struct upload *u = ud;
	size_t want = size * n;
	if (want > u->left)
		want = (size_t)u->left;
	if (want == 0)
		return 0;
	for (;;) {
		ssize_t got = pread(u->fd, p, want, (off_t)u->off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			u->read_err = got < 0 ? -errno : -ENODATA;
			return CURL_READFUNC_ABORT;
		}
		u->off += (uint64_t)got;
		u->left -= (uint64_t)got;
		return (size_t)got;
	}
}

/* SHA-256 of len bytes of the file from off, as hex. */
static int hash_range(struct upload *u, uint64_t off, uint64_t len, char hex[S3_SHA256_HEX], char *err, size_t errlen)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned dl = 0;
	int r = 0;

	if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		snprintf(err, errlen, "s3: cannot hash the file to upload as %s: libcrypto has no SHA-256", u->ekey);
		EVP_MD_CTX_free(ctx);
		return -ENOMEM;
	}
	while (len > 0) {
		size_t want = len < READ_CHUNK ? (size_t)len : READ_CHUNK;
		ssize_t got = pread(u->fd, u->chunk, want, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			int e = got < 0 ? errno : ENODATA;
			snprintf(err, errlen, "s3: reading the file to upload as %s at offset %llu failed: %s", u->ekey,
			         (unsigned long long)off, got < 0 ? strerror(e) : "it ended early (was it truncated?)");
			r = e == ENODATA ? -EIO : -e;
			break;
		}
		EVP_DigestUpdate(ctx, u->chunk, (size_t)got);
		off += (uint64_t)got;
		len -= (uint64_t)got;
	}
	if (r == 0 && EVP_DigestFinal_ex(ctx, d, &dl) == 1)
		hex_of(d, dl, hex);
	EVP_MD_CTX_free(ctx);
	return r;
}

int s3_transport_verdict(int curl_code)
{
	switch ((CURLcode)curl_code) {
	case CURLE_OK:
		return 0;
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_NOT_BUILT_IN:
	case CURLE_BAD_FUNCTION_ARGUMENT:
	case CURLE_UNKNOWN_OPTION:
		return -EINVAL;
	default:
		return -EAGAIN;
	}
}

/* One request. body: NULL to send part of the file (u->fd from off, len
 * bytes), else len bytes at body. Returns 0 with the answer in u, or
 * -errno with a sentence. */
enum etag_need {
	ETAG_IGNORED,  /* whatever the answer's ETag header, it is not used */
	ETAG_OPTIONAL, /* a PUT: checked when given */
	ETAG_REQUIRED, /* a part: CompleteMultipartUpload names it */
};
struct request {
	const char *method; /* PUT, POST, DELETE */
	const char *what;   /* for sentences: "PUT of" ... */
	const struct s3_param *query;
	size_t nquery;
	const char *content_type; /* NULL: none sent */
	int sign_here;            /* signed by s3_sign_v4, not by libcurl */
	const char *body;
	uint64_t off, len;
	enum etag_need etag;
};

/* Judges what came back for a request: libcurl's code rc (with its error
 * text cerr), the bounds the callbacks kept, the status and the body, and the
 * ETag when q needs one. An answer past a bound or malformed is a failed
 * attempt, retryable. Returns 0, or -errno with a sentence. */
static int answer_judge(struct upload *u, const struct request *q, CURLcode rc, const char *cerr, const char *what,
                        char *err, size_t errlen)
{
	u->status = 0;
	curl_easy_getinfo(u->curl, CURLINFO_RESPONSE_CODE, &u->status);
	if (rc == CURLE_ABORTED_BY_CALLBACK || u->read_err) {
		int e = u->read_err ? u->read_err : -EIO;
		snprintf(err, errlen, "s3: reading the file for the %s failed: %s", what,
		         e == -ENODATA ? "it ended early (was it truncated?)" : strerror(-e));
		return e == -ENODATA ? -EIO : e;
	}
	if (u->head_over == HEAD_LINES) {
		snprintf(err, errlen,
		         "s3: %s failed: HTTP %ld with more than %d header lines, more than any S3 answer has "
		         "(retry later)",
		         what, u->status, S3_HEADER_LINES_MAX);
		return -EAGAIN;
	}
	if (u->head_over == HEAD_BYTES) {
		snprintf(err, errlen,
		         "s3: %s failed: HTTP %ld with more than %d bytes of header lines, more than any S3 "
		         "answer has (retry later)",
		         what, u->status, S3_HEADER_BYTES_MAX);
		return -EAGAIN;
	}
	if (u->body_over || rc == CURLE_FILESIZE_EXCEEDED) {
		snprintf(err, errlen,
		         "s3: %s failed: HTTP %ld with a body longer than %d bytes, more than any S3 answer "
		         "has: not read further (retry later)",
		         what, u->status, S3_BODY_MAX);
		return -EAGAIN;
	}
	if (rc != CURLE_OK) {
		char ecerr[CURL_ERROR_SIZE * 2];
		text_escape_str(cerr[0] ? cerr : curl_easy_strerror(rc), ecerr, sizeof(ecerr));
#if LIBCURL_VERSION_NUM >= 0x080600
		int too_large = rc == CURLE_TOO_LARGE;
#else
		int too_large = 0;
#endif
		/* libcurl 7.x fails a header line over its 100 KiB with
		 * CURLE_OUT_OF_MEMORY (8.6 on with CURLE_TOO_LARGE): said as what
		 * it most likely is while an answer's header block is coming. */
		if ((rc == CURLE_OUT_OF_MEMORY || too_large) && !u->head_done) {
			snprintf(err, errlen,
			         "s3: %s failed: the answer's header lines exceed a limit of libcurl's (a line of "
			         "more than 100 KiB), or libcurl ran out of memory: %s (retry later)",
			         what, ecerr);
			return -EAGAIN;
		}
		int v = s3_transport_verdict(rc);
		snprintf(err, errlen, "s3: %s failed: %s%s", what, ecerr, v == -EAGAIN ? " (retry later)" : "");
		return v;
	}
	int r = s3_judge_response(u->status, u->body, u->body_len, what, err, errlen);
	if (r < 0 || q->etag == ETAG_IGNORED)
		return r;
	if (u->etag_state == ETAG_NONE) {
		if (q->etag == ETAG_OPTIONAL)
			return 0;
		snprintf(err, errlen, "s3: %s failed: HTTP %ld with no ETag (retry later)", what, u->status);
		return -EAGAIN;
	}
	if (u->etag_state == ETAG_LONG) {
		snprintf(err, errlen, "s3: %s failed: HTTP %ld with an ETag longer than %d bytes (retry later)", what,
		         u->status, S3_ETAG_MAX);
		return -EAGAIN;
	}
	if (s3_etag_check(u->etag, u->etag_len) < 0) {
		char eetag[4 * S3_ETAG_MAX + 1];
		text_escape(u->etag, u->etag_len, eetag, sizeof(eetag));
		snprintf(err, errlen, "s3: %s failed: HTTP %ld with an ETag outside its grammar: %s (retry later)",
		         what, u->status, eetag);
		return -EAGAIN;
	}
	return 0;
}

static int request(struct upload *u, const struct request *q, char *err, size_t errlen)
{
	const struct s3_credentials *cr = u->c->creds;
	char what[256];
	snprintf(what, sizeof(what), "%s %s", q->what, u->ekey);

	char hash[S3_SHA256_HEX], date[17];
	if (q->body) {
		if (s3_sha256_hex(q->body, (size_t)q->len, hash) < 0) {
			snprintf(err, errlen, "s3: cannot hash the %s", what);
			return -ENOMEM;
		}
	} else {
		int r = hash_range(u, q->off, q->len, hash, err, errlen);
		if (r < 0)
			return r;
	}

	/* The headers to send. libcurl signs what it is given and adds
	 * Authorization and X-Amz-Date (with the host); a request it cannot
	 * sign (q->sign_here) is signed here over the same headers, host and
	 * date included. */
	struct s3_param h[5];
	size_t nh = 0;
	if (q->sign_here) {
		s3_amz_date(time(NULL), date);
		h[nh++] = (struct s3_param){"host", u->t.host};
		h[nh++] = (struct s3_param){"x-amz-date", date};
	}
	h[nh++] = (struct s3_param){"x-amz-content-sha256", hash};
	if (cr->session_token[0])
		h[nh++] = (struct s3_param){"x-amz-security-token", cr->session_token};
	if (q->content_type)
		h[nh++] = (struct s3_param){"content-type", q->content_type};
	char auth[1024];
	if (q->sign_here) {
		struct s3_sign_input in = {
		    .method = q->method,
		    .canonical_uri = u->t.uri,
		    .query = q->query,
		    .nquery = q->nquery,
		    .headers = h,
		    .nheaders = nh,
		    .payload_hash = hash,
		    .amz_date = date,
		    .region = u->region,
		    .service = "s3",
		    .access_key_id = cr->access_key_id,
		    .secret_access_key = cr->secret_access_key,
		};
		int r = s3_sign_v4(&in, auth, sizeof(auth));
		if (r < 0) {
			snprintf(err, errlen, "s3: cannot sign the %s: %s", what, strerror(-r));
			return r;
		}
	}

	/* The headers as sent: each "Name: value" line. A blank "Name:" line
	 * (which tells libcurl to send none of its own) is never given when
	 * libcurl signs: 7.88 would sign the name without sending it. */
	struct curl_slist *hl = NULL, *tmp;
	char line[sizeof(cr->session_token) + 64];
	int ok = 1;
	for (size_t i = 0; ok && i < nh; i++) {
		snprintf(line, sizeof(line), "%s: %s", h[i].name, h[i].value);
		ok = (tmp = curl_slist_append(hl, line)) != NULL;
		if (ok)
			hl = tmp;
	}
	if (q->sign_here) {
		snprintf(line, sizeof(line), "Authorization: %s", auth);
		explicit_bzero(auth, sizeof(auth));
		if (ok)
			ok = (tmp = curl_slist_append(hl, line)) != NULL;
		if (ok)
			hl = tmp;
		explicit_bzero(line, sizeof(line));
		if (ok && !q->content_type)
			ok = (tmp = curl_slist_append(hl, "Content-Type:")) != NULL; /* none of libcurl's own */
		if (ok)
			hl = tmp;
	}
	if (!ok) {
		curl_slist_free_all(hl);
		snprintf(err, errlen, "s3: out of memory preparing the %s", what);
		return -ENOMEM;
	}
	/* The query as signed (s3_sign_v4 succeeded, so it fits). */
	char url[sizeof(u->t.url) + 4096], qs[4096];
	if (s3_query_string(q->query, q->nquery, qs, sizeof(qs)) < 0 ||
	    snprintf(url, sizeof(url), "%s%s%s", u->t.url, q->nquery ? "?" : "", qs) >= (int)sizeof(url)) {
		curl_slist_free_all(hl);
		snprintf(err, errlen, "s3: the URL of the %s is too long", what);
		return -ENAMETOOLONG;
	}

	CURL *c = u->curl;
	char cerr[CURL_ERROR_SIZE] = "", sigv4[160];
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (!q->sign_here) {
		/* All four fields: a missing service or region is guessed from
		 * the host name. */
		snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", u->region);
		curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4);
		curl_easy_setopt(c, CURLOPT_USERNAME, cr->access_key_id);
		curl_easy_setopt(c, CURLOPT_PASSWORD, cr->secret_access_key);
	}
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L); /* a key's "/../" is a key, not a path to tidy */
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, u);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, u);
	/* A Content-Length past the bound fails at once, without reading. */
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)S3_BODY_MAX);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
	                 u->c->connect_timeout_ms > 0 ? u->c->connect_timeout_ms : 10000L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
	                 u->c->request_timeout_ms > 0 ? u->c->request_timeout_ms : 30L * 60 * 1000);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT,
	                 u->c->low_speed_bytes_per_sec > 0 ? u->c->low_speed_bytes_per_sec : 1024L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, u->c->low_speed_time_s > 0 ? u->c->low_speed_time_s : 60L);
	if (strcmp(q->method, "PUT") == 0) {
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, u);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)q->len);
	} else if (strcmp(q->method, "POST") == 0) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, q->body ? q->body : "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->len);
	} else {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
	}
	u->body_len = 0;
	u->body_over = 0;
	u->head_lines = u->head_bytes = 0;
	u->head_over = HEAD_OK;
	u->head_status = 0;
	u->head_done = 0;
	u->etag_state = ETAG_NONE;
	u->etag[0] = '\0';
	u->etag_len = 0;
	u->off = q->off;
	u->left = q->body ? 0 : q->len;
	u->read_err = 0;

	CURLcode rc = curl_easy_perform(c);
	curl_slist_free_all(hl);
	return answer_judge(u, q, rc, cerr, what, err, errlen);
}

static int put_single(struct upload *u, uint64_t size, const char *content_type, char *err, size_t errlen)
{
	struct request q = {.method = "PUT",
	                    .what = "PUT of",
	                    .content_type = content_type,
	                    .off = 0,
	                    .len = size,
	                    .etag = ETAG_OPTIONAL};
	return request(u, &q, err, errlen);
}

/* The CompleteMultipartUpload document: its parts in order with their ETags
 * (checked by s3_etag_check: nothing to escape). */
static char *complete_xml(char (*etags)[S3_ETAG_MAX + 1], unsigned nparts, size_t *ret_len)
{
	size_t cap = 128 + (size_t)nparts * (64 + S3_ETAG_MAX), len = 0;
	char *x = malloc(cap);
	if (!x)
		return NULL;
	len += (size_t)snprintf(x, cap, "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	for (unsigned i = 0; i < nparts; i++)
		len += (size_t)snprintf(x + len, cap - len, "<Part><PartNumber>%u</PartNumber><ETag>%s</ETag></Part>",
		                        i + 1, etags[i]);
	len += (size_t)snprintf(x + len, cap - len, "</CompleteMultipartUpload>");
	*ret_len = len;
	return x;
}

static int put_multipart(struct upload *u, uint64_t size, uint64_t part, const char *content_type,
                         struct s3_result *out, char *err, size_t errlen)
{
	unsigned nparts = (unsigned)((size + part - 1) / part);
	char upload_id[1024];
	struct s3_param create_q[] = {{"uploads", ""}};
	struct request q = {.method = "POST",
	                    .what = "CreateMultipartUpload for",
	                    .query = create_q,
	                    .nquery = 1,
	                    .sign_here = 1,
	                    .content_type = content_type,
	                    .body = "",
	                    .len = 0};
	int r = request(u, &q, err, errlen);
	if (r < 0)
		return r;
	if (s3_xml_text(u->body, u->body_len, "UploadId", upload_id, sizeof(upload_id)) < 0 ||
	    !s3_printable(upload_id, sizeof(upload_id) - 2)) {
		snprintf(err, errlen,
		         "s3: CreateMultipartUpload for %s failed: HTTP %ld, the answer holds no usable UploadId "
		         "(retry later)",
		         u->ekey, u->status);
		return -EAGAIN;
	}
	char(*etags)[S3_ETAG_MAX + 1] = calloc(nparts, sizeof(*etags));
	if (!etags) {
		r = -ENOMEM;
		snprintf(err, errlen, "s3: out of memory for the %u parts of %s", nparts, u->ekey);
		goto abort;
	}
	for (unsigned i = 0; i < nparts; i++) {
		char pn[16], what[64];
		snprintf(pn, sizeof(pn), "%u", i + 1);
		snprintf(what, sizeof(what), "UploadPart %u of %u of", i + 1, nparts);
		struct s3_param part_q[] = {{"partNumber", pn}, {"uploadId", upload_id}};
		uint64_t off = (uint64_t)i * part;
		struct request pq = {.method = "PUT",
		                     .what = what,
		                     .query = part_q,
		                     .nquery = 2,
		                     .off = off,
		                     .len = size - off < part ? size - off : part,
		                     .etag = ETAG_REQUIRED};
		r = request(u, &pq, err, errlen);
		if (r < 0)
			goto abort;
		memcpy(etags[i], u->etag, sizeof(u->etag));
	}
	size_t xl;
	char *xml = complete_xml(etags, nparts, &xl);
	if (!xml) {
		r = -ENOMEM;
		snprintf(err, errlen, "s3: out of memory for the CompleteMultipartUpload of %s", u->ekey);
		goto abort;
	}
	struct s3_param done_q[] = {{"uploadId", upload_id}};
	struct request cq = {.method = "POST",
	                     .what = "CompleteMultipartUpload of",
	                     .query = done_q,
	                     .nquery = 1,
	                     .content_type = "application/xml",
	                     .body = xml,
	                     .len = xl};
	r = request(u, &cq, err, errlen);
	free(xml);
	if (r < 0)
		goto abort;
	/* A 200 may come before the work is done, the verdict in the body
	 * (an <Error>, judged above, or the result): no result, no upload. */
	if (!memmem(u->body, u->body_len, "<CompleteMultipartUploadResult", 30)) {
		snprintf(err, errlen,
		         "s3: CompleteMultipartUpload of %s failed: HTTP %ld without a CompleteMultipartUploadResult "
		         "(retry later)",
		         u->ekey, u->status);
		r = -EAGAIN;
		goto abort;
	}
	/* Room for far more than an ETag may have: cut (on a character
	 * boundary) only when it is far too long, and then still seen so. */
	char etag[4 * S3_ETAG_MAX];
	int x = s3_xml_text(u->body, u->body_len, "ETag", etag, sizeof(etag));
	if (x == -ENOENT) {
		etag[0] = '\0';
	} else if (x < 0 || s3_etag_check(etag, strlen(etag)) < 0) {
		char why[4 * sizeof(etag) + 32], eetag[4 * sizeof(etag)];
		if (x == 0 && strlen(etag) > S3_ETAG_MAX)
			snprintf(why, sizeof(why), "longer than %d bytes", S3_ETAG_MAX);
		else
			snprintf(why, sizeof(why), "outside its grammar: %s",
			         text_escape_str(etag, eetag, sizeof(eetag)));
		snprintf(err, errlen,
		         "s3: CompleteMultipartUpload of %s failed: HTTP %ld with an ETag %s in its "
		         "CompleteMultipartUploadResult (retry later)",
		         u->ekey, u->status, why);
		r = -EAGAIN;
		goto abort;
	}
	if (out) {
		snprintf(out->etag, sizeof(out->etag), "%s", etag);
		out->parts = nparts;
	}
	free(etags);
	return 0;
abort:
	free(etags);
	{
		/* Best effort: the first failure is the one to tell. */
		char ignored[256];
		struct s3_param abort_q[] = {{"uploadId", upload_id}};
		struct request aq = {.method = "DELETE",
		                     .what = "AbortMultipartUpload of",
		                     .query = abort_q,
		                     .nquery = 1,
		                     .body = "",
		                     .len = 0};
		(void)request(u, &aq, ignored, sizeof(ignored));
	}
	return r;
}

int s3_put_file(const struct s3_config *c, int fd, uint64_t size, const char *key, const char *content_type,
                struct s3_result *out, char *err, size_t errlen)
{
	int r = s3_config_check(c, err, errlen);
	if (r < 0)
		return r;
	if (out)
		memset(out, 0, sizeof(*out));
	struct upload *u = calloc(1, sizeof(*u));
	char fkey[S3_KEY_MAX + 1];
	if (!u)
		return -ENOMEM;
	r = s3_full_key(c, key, fkey, err, errlen);
	if (r < 0)
		goto done;
	u->c = c;
	u->fd = fd;
	u->key = fkey;
	snprintf(u->region, sizeof(u->region), "%s", c->region && *c->region ? c->region : S3_DEFAULT_REGION);
	{
		char bk[S3_KEY_MAX + 300];
		snprintf(bk, sizeof(bk), "%s/%s", c->bucket, fkey);
		text_escape_str(bk, u->ekey, sizeof(u->ekey));
	}
	r = s3_target_build(c, fkey, &u->t, err, errlen);
	if (r < 0) {
		if (r == -ENAMETOOLONG)
			snprintf(err, errlen, "s3: the URL of %s is too long", u->ekey);
		goto done;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(err, errlen, "s3: the file to upload as %s: %s", u->ekey, strerror(-r));
		goto done;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < size) {
		snprintf(err, errlen, "s3: the file to upload as %s is not a regular file of at least %llu bytes",
		         u->ekey, (unsigned long long)size);
		r = -EINVAL;
		goto done;
	}
	if (size > S3_OBJECT_MAX) {
		snprintf(err, errlen, "s3: %s: %llu bytes is more than the 5 TiB an object may hold", u->ekey,
		         (unsigned long long)size);
		r = -EFBIG;
		goto done;
	}
	u->chunk = malloc(READ_CHUNK);
	u->curl = curl_easy_init();
	if (!u->chunk || !u->curl) {
		snprintf(err, errlen, "s3: out of memory starting the upload of %s", u->ekey);
		r = -ENOMEM;
		goto done;
	}
	const char *ct = content_type && *content_type ? content_type : "application/octet-stream";
	uint64_t part = s3_part_size(c->part_size, size);
	if (size <= part) {
		r = put_single(u, size, ct, err, errlen);
		if (r == 0 && out)
			snprintf(out->etag, sizeof(out->etag), "%s", u->etag);
	} else {
		r = put_multipart(u, size, part, ct, out, err, errlen);
	}
	if (r == 0 && out) {
		snprintf(out->key, sizeof(out->key), "%s", fkey);
		out->size = size;
	}
done:
	if (u->curl)
		curl_easy_cleanup(u->curl);
	free(u->chunk);
	free(u);
	return r;
}
