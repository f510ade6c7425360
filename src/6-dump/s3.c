/* A client for S3-compatible object storage: what the daemon's upload child
 * runs to put a dump into a bucket (s3.h has the contracts).
 *
 * Design: every request is signed with AWS Signature Version 4 in its header
 * form, with the payload's real SHA-256 in x-amz-content-sha256 (computed by a
 * first pass over the bytes, so it works with every S3-compatible server,
 * including those that refuse UNSIGNED-PAYLOAD over plain HTTP). A file
 * larger than one part goes up as a multipart upload; any failure after the
 * upload was created aborts it, so no invisible parts are left to bill. The
 * server is not trusted: its header lines and bodies are read up to fixed
 * bounds (s3.h) and an answer past one fails the request, retryable; the few
 * fields read are found by a bounded scan (no XML library) and checked (the
 * ETag against its grammar) before they are kept or sent back; what of them
 * reaches an error sentence is escaped into one line. */
#include "dumpwatch/s3.h"

#include "dumpwatch/sha256.h"
#include "dumpwatch/text.h"
#include "dumpwatch/trust.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CRED_FILE_MAX (64 * 1024) /* a credentials file holds three lines */
#define SIGN_HEADERS_MAX 16
#define CANON_MAX (32 * 1024)
#define READ_CHUNK (1024 * 1024)

__attribute__((format(printf, 3, 4))) static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int is_unreserved(unsigned char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
	       ch == '_' || ch == '.' || ch == '~';
}

int s3_uri_encode(const char *s, size_t len, int keep_slash, char *out, size_t outlen)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (is_unreserved(ch) || (keep_slash && ch == '/')) {
			if (o + 1 >= outlen)
				return -ENAMETOOLONG;
			out[o++] = (char)ch;
		} else {
			if (o + 3 >= outlen)
				return -ENAMETOOLONG;
			out[o++] = '%';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		}
	}
	if (o >= outlen || o > INT_MAX)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return (int)o;
}

/* ---- configuration and URLs ---- */

/* The endpoint split: scheme ("http" or "https"), authority as sent in Host
 * (host[:port], lower case) and the host alone. */
struct endpoint {
	char scheme[6];
	char authority[256];
	char host[256];
};

static int endpoint_parse(const char *url, struct endpoint *ep, char *err, size_t errlen)
{
	char esc[160];
	const char *rest;
	if (!url || !*url) {
		seterr(err, errlen, "s3: no endpoint given: give one such as https://s3.eu-west-1.amazonaws.com");
		return -EINVAL;
	}
	if (strncasecmp(url, "https://", 8) == 0) {
		strcpy(ep->scheme, "https");
		rest = url + 8;
	} else if (strncasecmp(url, "http://", 7) == 0) {
		strcpy(ep->scheme, "http");
		rest = url + 7;
	} else {
		seterr(err, errlen, "s3: endpoint \"%s\" does not begin with http:// or https://",
		       text_escape_str(url, esc, sizeof(esc)));
		return -EINVAL;
	}
	size_t n = strlen(rest);
	if (n > 0 && rest[n - 1] == '/')
		n--;
	if (n == 0 || n >= sizeof(ep->authority)) {
		seterr(err, errlen, "s3: endpoint \"%s\" has no host or too long a one",
		       text_escape_str(url, esc, sizeof(esc)));
		return -EINVAL;
	}
	/* Only a host (name, IPv4 or [IPv6]) and a port: no user, path, query. */
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)rest[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
		      ch == '-' || ch == ':' || ch == '[' || ch == ']')) {
			seterr(err, errlen,
			       "s3: endpoint \"%s\" must be only http[s]://HOST[:PORT], with no user, path or query",
			       text_escape_str(url, esc, sizeof(esc)));
			return -EINVAL;
		}
		ep->authority[i] = text_lower((char)ch);
	}
	ep->authority[n] = '\0';
	/* The host without the port: up to ']' for IPv6, else up to ':'. */
	const char *end = ep->authority[0] == '[' ? strchr(ep->authority, ']') : strchr(ep->authority, ':');
	size_t hl = end ? (size_t)(end - ep->authority) + (ep->authority[0] == '[') : n;
	memcpy(ep->host, ep->authority, hl);
	ep->host[hl] = '\0';
	if (hl == 0) {
		seterr(err, errlen, "s3: endpoint \"%s\" has no host", text_escape_str(url, esc, sizeof(esc)));
		return -EINVAL;
	}
	return 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int use_vhost(const struct s3_config *c, const struct endpoint *ep)
{
	if (c->addressing == S3_ADDRESSING_AUTO)
		return ends_with(ep->host, ".amazonaws.com") || strcmp(ep->host, "amazonaws.com") == 0;
	return c->addressing == S3_ADDRESSING_VHOST;
}

static int printable_token(const char *s, size_t max)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (n >= max || (unsigned char)s[n] <= 0x20 || (unsigned char)s[n] >= 0x7f)
			return 0;
	return n > 0;
}

int s3_config_check(const struct s3_config *c, char *err, size_t errlen)
{
	struct endpoint ep;
	char esc[160];
	int r = endpoint_parse(c->endpoint, &ep, err, errlen);
	if (r < 0)
		return r;
	if (use_vhost(c, &ep) && (ep.host[0] == '[' || strspn(ep.host, "0123456789.") == strlen(ep.host))) {
		seterr(err, errlen,
		       "s3: virtual-hosted addressing needs a host name, and %s is an IP address: "
		       "use path-style addressing",
		       ep.host);
		return -EINVAL;
	}
	const char *b = c->bucket ? c->bucket : "";
	size_t bl = strlen(b);
	int bad = bl == 0 || bl > 255;
	for (size_t i = 0; !bad && i < bl; i++)
		bad = !(is_unreserved((unsigned char)b[i]) && b[i] != '~');
	if (bad) {
		seterr(err, errlen,
		       "s3: bucket name \"%s\" is empty, too long or has characters other than letters, "
		       "digits, '.', '-' and '_'",
		       text_escape_str(b, esc, sizeof(esc)));
		return -EINVAL;
	}
	if (c->region && *c->region) {
		bad = strlen(c->region) > 64;
		for (const char *p = c->region; !bad && *p; p++)
			bad = !(is_unreserved((unsigned char)*p) && *p != '~' && *p != '.');
		if (bad) {
			seterr(err, errlen, "s3: region \"%s\" is not a region name such as eu-west-1",
			       text_escape_str(c->region, esc, sizeof(esc)));
			return -EINVAL;
		}
	}
	if (c->part_size != 0 && (c->part_size < S3_PART_MIN || c->part_size > S3_PART_MAX)) {
		seterr(err, errlen, "s3: part size %llu is outside 5 MiB (5242880) to 5 GiB, what S3 allows",
		       (unsigned long long)c->part_size);
		return -EINVAL;
	}
	if (c->prefix && strlen(c->prefix) > S3_KEY_MAX) {
		seterr(err, errlen, "s3: the key prefix is longer than %d bytes", S3_KEY_MAX);
		return -EINVAL;
	}
	if (!c->creds || !printable_token(c->creds->access_key_id, sizeof(c->creds->access_key_id) - 1) ||
	    !printable_token(c->creds->secret_access_key, sizeof(c->creds->secret_access_key) - 1) ||
	    (c->creds->session_token[0] &&
	     !printable_token(c->creds->session_token, sizeof(c->creds->session_token) - 1))) {
		seterr(err, errlen,
		       "s3: no usable credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
		       "(printable ASCII, no spaces)");
		return -EINVAL;
	}
	return 0;
}

uint64_t s3_part_size(uint64_t configured, uint64_t size)
{
	uint64_t part = configured ? configured : S3_PART_DEFAULT;
	if (part < S3_PART_MIN)
		part = S3_PART_MIN;
	if (part > S3_PART_MAX)
		part = S3_PART_MAX;
	while (part < S3_PART_MAX && (size + part - 1) / part > S3_PARTS_MAX)
		part = part * 2 > S3_PART_MAX ? S3_PART_MAX : part * 2;
	return part;
}

/* prefix + key into out (S3_KEY_MAX + 1 bytes): valid UTF-8, not empty. */
static int full_key(const struct s3_config *c, const char *key, char *out, char *err, size_t errlen)
{
	char esc[160];
	const char *prefix = c->prefix ? c->prefix : "";
	size_t pl = strlen(prefix), kl = key ? strlen(key) : 0;
	if (pl + kl == 0) {
		seterr(err, errlen, "s3: the object key is empty");
		return -EINVAL;
	}
	if (pl + kl > S3_KEY_MAX) {
		char ek[64];
		seterr(err, errlen, "s3: the object key \"%s%s...\" is longer than %d bytes",
		       text_escape_str(prefix, esc, sizeof(ek)), text_escape_str(key, ek, sizeof(ek)), S3_KEY_MAX);
		return -EINVAL;
	}
	memcpy(out, prefix, pl);
	if (kl)
		memcpy(out + pl, key, kl);
	out[pl + kl] = '\0';
	for (size_t i = 0; i < pl + kl;) {
		uint32_t cp;
		size_t n = text_utf8_decode((const unsigned char *)out + i, pl + kl - i, &cp);
		if (n == 0) {
			seterr(err, errlen, "s3: the object key \"%s\" is not valid UTF-8",
			       text_escape_str(out, esc, sizeof(esc)));
			return -EINVAL;
		}
		i += n;
	}
	return 0;
}

int s3_target_build(const struct s3_config *c, const char *key, struct s3_target *out, char *err, size_t errlen)
{
	struct endpoint ep;
	int r = endpoint_parse(c->endpoint, &ep, err, errlen);
	if (r < 0)
		return r;
	const char *bucket = c->bucket ? c->bucket : "";
	char enc[3 * S3_KEY_MAX + 1] = "";
	if (key) {
		r = s3_uri_encode(key, strlen(key), 1, enc, sizeof(enc));
		if (r < 0)
			return r;
	}
	int n;
	if (use_vhost(c, &ep)) {
		n = snprintf(out->host, sizeof(out->host), "%s.%s", bucket, ep.authority);
		if (n < 0 || (size_t)n >= sizeof(out->host))
			return -ENAMETOOLONG;
		n = snprintf(out->uri, sizeof(out->uri), "/%s", enc);
	} else {
		n = snprintf(out->host, sizeof(out->host), "%s", ep.authority);
		if (n < 0 || (size_t)n >= sizeof(out->host))
			return -ENAMETOOLONG;
		n = snprintf(out->uri, sizeof(out->uri), "/%s%s%s", bucket, key ? "/" : "", enc);
	}
	if (n < 0 || (size_t)n >= sizeof(out->uri))
		return -ENAMETOOLONG;
	n = snprintf(out->url, sizeof(out->url), "%s://%s%s", ep.scheme, out->host, out->uri);
	if (n < 0 || (size_t)n >= sizeof(out->url))
		return -ENAMETOOLONG;
	return 0;
}

/* ---- signing (AWS Signature Version 4, header form) ---- */

/* A bounded string being built; once over its bound it stays failed. */
struct sbuf {
	char *p;
	size_t len, cap;
	int over;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->over || b->len + n + 1 > b->cap) {
		b->over = 1;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

static void sb_enc(struct sbuf *b, const char *s)
{
	if (b->over)
		return;
	int r = s3_uri_encode(s, strlen(s), 0, b->p + b->len, b->cap - b->len);
	if (r < 0)
		b->over = 1;
	else
		b->len += (size_t)r;
}

int s3_query_string(const struct s3_param *query, size_t nquery, char *out, size_t outlen)
{
	size_t order[SIGN_HEADERS_MAX];
	if (nquery > SIGN_HEADERS_MAX || outlen == 0)
		return -ENAMETOOLONG;
	/* Sorted by name (the names here are unreserved characters, so the
	 * order of the raw names is the order of the encoded ones). */
	for (size_t i = 0; i < nquery; i++) {
		size_t j = i;
		for (; j > 0 && strcmp(query[order[j - 1]].name, query[i].name) > 0; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	struct sbuf b = {out, 0, outlen, 0};
	out[0] = '\0';
	for (size_t i = 0; i < nquery; i++) {
		if (i)
			sb_str(&b, "&");
		sb_enc(&b, query[order[i]].name);
		sb_str(&b, "=");
		sb_enc(&b, query[order[i]].value ? query[order[i]].value : "");
	}
	if (b.over || b.len > INT_MAX)
		return -ENAMETOOLONG;
	return (int)b.len;
}

void s3_amz_date(time_t t, char out[17])
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

static int amz_date_ok(const char *d)
{
	if (!d || strlen(d) != 16 || d[8] != 'T' || d[15] != 'Z')
		return 0;
	for (int i = 0; i < 15; i++)
		if (i != 8 && (d[i] < '0' || d[i] > '9'))
			return 0;
	return 1;
}

/* A header as signed: its name in lower case, its value trimmed with runs of
 * spaces made one. */
struct canon_header {
	char name[64];
	const char *value;
};

static void hmac_str(const uint8_t *key, size_t keylen, const char *msg, uint8_t out[SHA256_DIGEST_SIZE])
{
	hmac_sha256(key, keylen, msg, strlen(msg), out);
}

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

	/* Task 1: the canonical request. */
	char *canon = malloc(CANON_MAX);
	if (!canon)
		return -ENOMEM;
	struct sbuf cr = {canon, 0, CANON_MAX, 0};
	char signed_headers[SIGN_HEADERS_MAX * 65] = "";
	struct sbuf sh = {signed_headers, 0, sizeof(signed_headers), 0};
	sb_str(&cr, in->method);
	sb_str(&cr, "\n");
	sb_str(&cr, in->canonical_uri);
	sb_str(&cr, "\n");
	if (!cr.over) {
		int r = s3_query_string(in->query, in->nquery, canon + cr.len, cr.cap - cr.len);
		if (r < 0)
			cr.over = 1;
		else
			cr.len += (size_t)r;
	}
	sb_str(&cr, "\n");
	for (size_t i = 0; i < in->nheaders; i++) {
		const struct canon_header *ch = &h[order[i]];
		sb_str(&cr, ch->name);
		sb_str(&cr, ":");
		const char *v = ch->value;
		while (*v == ' ' || *v == '\t')
			v++;
		size_t vl = strlen(v);
		while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
			vl--;
		for (size_t k = 0; k < vl; k++) {
			if ((v[k] == ' ' || v[k] == '\t') && k > 0 && (v[k - 1] == ' ' || v[k - 1] == '\t'))
				continue;
			sb_add(&cr, v[k] == '\t' ? " " : &v[k], 1);
		}
		sb_str(&cr, "\n");
		if (i)
			sb_str(&sh, ";");
		sb_str(&sh, ch->name);
	}
	sb_str(&cr, "\n");
	sb_str(&cr, signed_headers);
	sb_str(&cr, "\n");
	sb_str(&cr, in->payload_hash);
	if (cr.over || sh.over) {
		free(canon);
		return -ENAMETOOLONG;
	}
	uint8_t d[SHA256_DIGEST_SIZE];
	char canon_hex[SHA256_HEX_SIZE];
	sha256_digest(canon, cr.len, d);
	sha256_hex(d, canon_hex);
	free(canon);

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
	uint8_t k[SHA256_DIGEST_SIZE];
	n = snprintf(ksecret, sizeof(ksecret), "AWS4%s", in->secret_access_key);
	if (n < 0 || (size_t)n >= sizeof(ksecret)) {
		explicit_bzero(ksecret, sizeof(ksecret));
		return -EINVAL;
	}
	hmac_str((const uint8_t *)ksecret, (size_t)n, date8, k);
	explicit_bzero(ksecret, sizeof(ksecret));
	hmac_str(k, sizeof(k), in->region, k);
	hmac_str(k, sizeof(k), service, k);
	hmac_str(k, sizeof(k), "aws4_request", k);
	hmac_str(k, sizeof(k), sts, d);
	explicit_bzero(k, sizeof(k));
	char sig[SHA256_HEX_SIZE];
	sha256_hex(d, sig);
	n = snprintf(out, outlen, "AWS4-HMAC-SHA256 Credential=%s/%s,SignedHeaders=%s,Signature=%s", in->access_key_id,
	             scope, signed_headers, sig);
	explicit_bzero(sig, sizeof(sig));
	if (n < 0 || (size_t)n >= outlen) {
		explicit_bzero(out, outlen);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* ---- what the server says ---- */

static const char *memfind(const char *hay, size_t len, const char *needle, size_t nl)
{
	return nl == 0 ? hay : memmem(hay, len, needle, nl);
}

/* XML 1.0 section 4.6 (the predefined entities) and 4.1 (character
 * references): decodes the reference at s[0..len) beginning with '&' into
 * *ret_cp; returns its length, or 0 when malformed. */
static size_t xml_ref(const char *s, size_t len, uint32_t *ret_cp)
{
	static const struct {
		const char *name;
		uint32_t cp;
	} named[] = {{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		size_t nl = strlen(named[i].name);
		if (len >= 1 + nl && memcmp(s + 1, named[i].name, nl) == 0) {
			*ret_cp = named[i].cp;
			return 1 + nl;
		}
	}
	if (len < 4 || s[1] != '#')
		return 0;
	int hex = s[2] == 'x';
	size_t i = hex ? 3 : 2, digits = 0;
	uint32_t cp = 0;
	for (; i < len && digits < 8; i++, digits++) {
		char ch = s[i];
		int v = ch >= '0' && ch <= '9'          ? ch - '0'
		        : hex && ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
		        : hex && ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
		                                        : -1;
		if (v < 0)
			break;
		cp = cp * (hex ? 16u : 10u) + (uint32_t)v;
	}
	if (digits == 0 || i >= len || s[i] != ';' || cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*ret_cp = cp;
	return i + 1;
}

int s3_xml_text(const char *body, size_t len, const char *tag, char *out, size_t outlen)
{
	char open[72], close[72];
	if (outlen == 0)
		return -EINVAL;
	out[0] = '\0';
	int ol = snprintf(open, sizeof(open), "<%s>", tag), cl = snprintf(close, sizeof(close), "</%s>", tag);
	if (ol < 0 || cl < 0 || (size_t)cl >= sizeof(close) || !body)
		return -EINVAL;
	const char *a = memfind(body, len, open, (size_t)ol);
	if (!a)
		return -ENOENT;
	a += ol;
	size_t rest = len - (size_t)(a - body);
	const char *z = memfind(a, rest, close, (size_t)cl);
	if (!z)
		return -ENOENT;
	size_t o = 0;
	for (const char *p = a; p < z;) {
		uint32_t cp;
		size_t step = 1;
		if (*p == '&') {
			step = xml_ref(p, (size_t)(z - p), &cp);
			if (step == 0) {
				out[o] = '\0';
				return -EBADMSG;
			}
			if (text_utf8_put(out, outlen, &o, cp) < 0)
				break;
		} else {
			if (o + 1 >= outlen)
				break;
			out[o++] = *p;
		}
		p += step;
	}
	o = text_utf8_trim(out, o);
	out[o] = '\0';
	return 0;
}

int s3_header_value(const char *line, size_t len, const char *name, char *out, size_t outlen)
{
	size_t nl = strlen(name);
	if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return -ENOENT;
	const char *v = line + nl + 1, *end = line + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	size_t vl = (size_t)(end - v);
	if (vl >= outlen || vl > INT_MAX)
		return -E2BIG;
	memcpy(out, v, vl);
	out[vl] = '\0';
	return (int)vl;
}

int s3_etag_check(const char *etag, size_t len)
{
	if (len > S3_ETAG_MAX)
		return -E2BIG;
	if (len >= 2 && etag[0] == '"' && etag[len - 1] == '"') {
		etag++;
		len -= 2;
	}
	if (len == 0)
		return -EBADMSG;
	/* etagc = %x21 / %x23-7E / obs-text (RFC 9110 section 8.8.3), without
	 * obs-text (8-bit bytes) and the three that XML would need escaped. */
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)etag[i];
		if (ch < 0x21 || ch > 0x7e || ch == '"' || ch == '<' || ch == '>' || ch == '&')
			return -EBADMSG;
	}
	return 0;
}

struct code_rule {
	const char *code;
	int err;
	const char *hint;
};

/* The S3 error codes whose verdict is known. A code not here is judged by
 * the status, and retried unless the status says a retry cannot help. */
static const struct code_rule code_rules[] = {
    /* The server's state, or ours, changes meanwhile. */
    {"SlowDown", -EAGAIN, "the server asks to slow down: retry later"},
    {"RequestTimeout", -EAGAIN, "the connection was too slow or idle: retry later"},
    {"InternalError", -EAGAIN, "a failure inside the server: retry later"},
    {"ServiceUnavailable", -EAGAIN, "the service is unavailable: retry later"},
    {"NoSuchUpload", -EAGAIN, "the multipart upload was aborted or expired meanwhile: the next attempt starts another"},
    {"RequestTimeTooSkewed", -EAGAIN, "set this machine's clock right (NTP); retried meanwhile"},
    /* Permanent: only a change of configuration helps. */
    {"AccessDenied", -EACCES,
     "check that these credentials may write to the bucket (the key's policy and the "
     "bucket's)"},
    {"InvalidAccessKeyId", -EACCES, "check the access key id (AWS_ACCESS_KEY_ID)"},
    {"SignatureDoesNotMatch", -EACCES, "check the secret key (AWS_SECRET_ACCESS_KEY) and the region"},
    {"ExpiredToken", -EACCES, "renew the session token (AWS_SESSION_TOKEN)"},
    {"InvalidToken", -EACCES, "check the session token (AWS_SESSION_TOKEN)"},
    {"TokenRefreshRequired", -EACCES, "renew the session token (AWS_SESSION_TOKEN)"},
    {"AccountProblem", -EACCES, "check the storage account"},
    {"NoSuchBucket", -ENOENT, "create the bucket or correct its name"},
    {"PermanentRedirect", -EIO, "the bucket is in another region: correct the endpoint and region"},
    {"AuthorizationHeaderMalformed", -EIO, "correct the region, which must be the bucket's"},
    {"EntityTooLarge", -EIO, "choose a smaller part size"},
    {"EntityTooSmall", -EIO, "choose a part size of at least 5 MiB"},
};

int s3_judge_response(long status, const char *body, size_t len, const char *what, char *err, size_t errlen)
{
	char code[64] = "", msg[256] = "", ecode[96], emsg[384];
	int has_error = body && len > 0 && memfind(body, len, "<Error>", 7) != NULL;
	if (status >= 200 && status <= 299 && !has_error)
		return 0;
	if (body && len > 0) {
		if (s3_xml_text(body, len, "Code", code, sizeof(code)) < 0)
			code[0] = '\0';
		if (s3_xml_text(body, len, "Message", msg, sizeof(msg)) < 0)
			msg[0] = '\0';
	}
	int e = -EAGAIN;
	const char *hint = "not known to be permanent: retry later";
	const struct code_rule *rule = NULL;
	for (size_t i = 0; code[0] && i < sizeof(code_rules) / sizeof(code_rules[0]); i++)
		if (strcmp(code, code_rules[i].code) == 0)
			rule = &code_rules[i];
	if (rule) {
		e = rule->err;
		hint = rule->hint;
	} else if (status >= 500 || status == 429) {
		hint = "a temporary failure of the server: retry later";
	} else if (status == 401 || status == 403) {
		e = -EACCES;
		hint = "check the credentials and the bucket's policy";
	} else if (status == 404) {
		e = -ENOENT;
		hint = "check the endpoint and the bucket name";
	} else if (status == 301) {
		e = -EIO;
		hint = "the bucket answers elsewhere: correct the endpoint, the region or the addressing style";
	} else if (status >= 300 && status <= 399) {
		hint = "a redirection, which is not followed: retry later";
	}
	text_escape_str(code, ecode, sizeof(ecode));
	text_escape_str(msg, emsg, sizeof(emsg));
	if (code[0])
		seterr(err, errlen, "s3: %s failed: HTTP %ld, S3 error %s: %s (%s)", what, status, ecode,
		       msg[0] ? emsg : "no message", hint);
	else
		seterr(err, errlen, "s3: %s failed: HTTP %ld with no S3 error code (%s)", what, status, hint);
	return e;
}

/* ---- credentials ---- */

static int cred_set(char *dst, size_t dstlen, const char *v, size_t vl, const char *name, const char *where, char *err,
                    size_t errlen)
{
	if (vl >= dstlen) {
		seterr(err, errlen, "s3: %s%s is longer than %zu bytes", where, name, dstlen - 1);
		return -EINVAL;
	}
	for (size_t i = 0; i < vl; i++)
		if ((unsigned char)v[i] <= 0x20 || (unsigned char)v[i] >= 0x7f) {
			seterr(err, errlen, "s3: %s%s holds a space, a control or a non-ASCII character", where, name);
			return -EINVAL;
		}
	memcpy(dst, v, vl);
	dst[vl] = '\0';
	return 0;
}

static int cred_complete(const struct s3_credentials *c, const char *from, char *err, size_t errlen)
{
	if (!c->access_key_id[0] || !c->secret_access_key[0]) {
		seterr(err, errlen, "s3: %s no %s: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", from,
		       !c->access_key_id[0] ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY");
		return -ENOENT;
	}
	return 0;
}

static int cred_env(struct s3_credentials *out, char *err, size_t errlen)
{
	static const char *names[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"};
	char *dst[] = {out->access_key_id, out->secret_access_key, out->session_token};
	size_t len[] = {sizeof(out->access_key_id), sizeof(out->secret_access_key), sizeof(out->session_token)};
	for (int i = 0; i < 3; i++) {
		const char *v = getenv(names[i]);
		if (!v || !*v)
			continue;
		int r = cred_set(dst[i], len[i], v, strlen(v), names[i], "the environment's ", err, errlen);
		if (r < 0)
			return r;
	}
	return cred_complete(out, "the environment has", err, errlen);
}

/* KEY=VALUE lines of buf[0..len), as s3.h describes. */
static int cred_parse(struct s3_credentials *out, const char *buf, size_t len, const char *path, char *err,
                      size_t errlen)
{
	static const char *names[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"};
	char *dst[] = {out->access_key_id, out->secret_access_key, out->session_token};
	size_t dlen[] = {sizeof(out->access_key_id), sizeof(out->secret_access_key), sizeof(out->session_token)};
	unsigned line = 0;
	for (size_t pos = 0; pos < len;) {
		const char *s = buf + pos, *nl = memchr(s, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - s) : len - pos;
		pos += n + 1;
		line++;
		while (n > 0 && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		while (n > 0 && (*s == ' ' || *s == '\t'))
			s++, n--;
		if (n == 0 || *s == '#')
			continue;
		if (n > 7 && memcmp(s, "export ", 7) == 0)
			s += 7, n -= 7;
		const char *eq = memchr(s, '=', n);
		if (!eq) {
			seterr(err, errlen, "s3: %s:%u: expected NAME=VALUE", path, line);
			return -EINVAL;
		}
		size_t kl = (size_t)(eq - s);
		while (kl > 0 && (s[kl - 1] == ' ' || s[kl - 1] == '\t'))
			kl--;
		const char *v = eq + 1;
		size_t vl = n - (size_t)(v - s);
		while (vl > 0 && (*v == ' ' || *v == '\t'))
			v++, vl--;
		if (vl >= 2 && (v[0] == '"' || v[0] == '\'') && v[vl - 1] == v[0])
			v++, vl -= 2;
		for (int i = 0; i < 3; i++) {
			if (kl != strlen(names[i]) || memcmp(s, names[i], kl) != 0)
				continue;
			char where[PATH_MAX + 32];
			snprintf(where, sizeof(where), "%s:%u: ", path, line);
			int r = cred_set(dst[i], dlen[i], v, vl, names[i], where, err, errlen);
			if (r < 0)
				return r;
		}
	}
	char from[PATH_MAX + 16];
	snprintf(from, sizeof(from), "%s has", path);
	return cred_complete(out, from, err, errlen);
}

int s3_credentials_load(struct s3_credentials *out, const char *file, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!file)
		return cred_env(out, err, errlen);
	char path[PATH_MAX], esc[PATH_MAX];
	if (file[0] != '/') {
		const char *dir = getenv("CREDENTIALS_DIRECTORY");
		if (!dir || !*dir) {
			seterr(err, errlen,
			       "s3: credentials file \"%s\" is a relative name and $CREDENTIALS_DIRECTORY is not set: "
			       "give an absolute path, or pass it with systemd's LoadCredential=",
			       text_escape_str(file, esc, sizeof(esc)));
			return -ENOENT;
		}
		int n = snprintf(path, sizeof(path), "%s/%s", dir, file);
		if (n < 0 || (size_t)n >= sizeof(path)) {
			seterr(err, errlen, "s3: the credentials file's path is too long");
			return -ENAMETOOLONG;
		}
	} else {
		if (strlen(file) >= sizeof(path)) {
			seterr(err, errlen, "s3: the credentials file's path is too long");
			return -ENAMETOOLONG;
		}
		strcpy(path, file);
	}
	text_escape_str(path, esc, sizeof(esc));
	/* Walked as a rule file is (trust_open): links are followed only when
	 * root (or we) made them, in directories no one else can change, which
	 * is how a Kubernetes Secret volume (KEY -> ..data/KEY) and systemd's
	 * $CREDENTIALS_DIRECTORY lay them out. Opened O_NONBLOCK: a FIFO
	 * planted under the name must not hang us before fstat refuses it. */
	char why[512];
	why[0] = '\0';
	int fd = trust_open(path, geteuid(), why, sizeof(why));
	if (fd == -EINVAL || fd == -EISDIR || fd == -ELOOP || fd == -ENOTDIR)
		fd = -EPERM; /* not a regular file, or no way to one we may trust */
	if (fd < 0) {
		if (fd == -EPERM)
			seterr(err, errlen, "s3: credentials file %s refused: %s", esc, why);
		else
			seterr(err, errlen, "s3: cannot open credentials file %s: %s", esc,
			       why[0] ? why : strerror(-fd));
		return fd;
	}
	struct stat st;
	int r = 0;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		seterr(err, errlen, "s3: cannot stat credentials file %s: %s", esc, strerror(-r));
	} else if (!S_ISREG(st.st_mode)) {
		seterr(err, errlen, "s3: credentials file %s is not a regular file", esc);
		r = -EPERM;
	} else if (st.st_uid != 0 && st.st_uid != geteuid()) {
		seterr(err, errlen, "s3: credentials file %s is owned by uid %u, neither root nor us: chown root %s",
		       esc, (unsigned)st.st_uid, esc);
		r = -EPERM;
	} else if (st.st_mode & 077) {
		seterr(err, errlen, "s3: credentials file %s is open to group or others (mode %04o): chmod 0600 %s",
		       esc, (unsigned)(st.st_mode & 07777), esc);
		r = -EPERM;
	} else if (st.st_size > CRED_FILE_MAX) {
		seterr(err, errlen, "s3: credentials file %s is larger than %d bytes", esc, CRED_FILE_MAX);
		r = -EFBIG;
	}
	if (r < 0) {
		close(fd);
		return r;
	}
	char *buf = malloc(CRED_FILE_MAX + 1);
	size_t len = 0;
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, CRED_FILE_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			seterr(err, errlen, "s3: cannot read credentials file %s: %s", esc, strerror(-r));
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > CRED_FILE_MAX) {
			seterr(err, errlen, "s3: credentials file %s is larger than %d bytes", esc, CRED_FILE_MAX);
			r = -EFBIG;
			break;
		}
	}
	close(fd);
	if (r == 0)
		r = cred_parse(out, buf, len, esc, err, errlen);
	explicit_bzero(buf, CRED_FILE_MAX + 1);
	free(buf);
	if (r < 0)
		s3_credentials_clear(out);
	return r;
}

void s3_credentials_clear(struct s3_credentials *c)
{
	if (c)
		explicit_bzero(c, sizeof(*c));
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
static int hash_range(struct upload *u, uint64_t off, uint64_t len, char hex[SHA256_HEX_SIZE], char *err, size_t errlen)
{
	struct sha256 s;
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_init(&s);
	while (len > 0) {
		size_t want = len < READ_CHUNK ? (size_t)len : READ_CHUNK;
		ssize_t got = pread(u->fd, u->chunk, want, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			int e = got < 0 ? errno : ENODATA;
			seterr(err, errlen, "s3: reading the file to upload as %s at offset %llu failed: %s", u->ekey,
			       (unsigned long long)off, got < 0 ? strerror(e) : "it ended early (was it truncated?)");
			return e == ENODATA ? -EIO : -e;
		}
		sha256_update(&s, u->chunk, (size_t)got);
		off += (uint64_t)got;
		len -= (uint64_t)got;
	}
	sha256_final(&s, d);
	sha256_hex(d, hex);
	return 0;
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
		seterr(err, errlen, "s3: reading the file for the %s failed: %s", what,
		       e == -ENODATA ? "it ended early (was it truncated?)" : strerror(-e));
		return e == -ENODATA ? -EIO : e;
	}
	if (u->head_over == HEAD_LINES) {
		seterr(err, errlen,
		       "s3: %s failed: HTTP %ld with more than %d header lines, more than any S3 answer has "
		       "(retry later)",
		       what, u->status, S3_HEADER_LINES_MAX);
		return -EAGAIN;
	}
	if (u->head_over == HEAD_BYTES) {
		seterr(err, errlen,
		       "s3: %s failed: HTTP %ld with more than %d bytes of header lines, more than any S3 "
		       "answer has (retry later)",
		       what, u->status, S3_HEADER_BYTES_MAX);
		return -EAGAIN;
	}
	if (u->body_over || rc == CURLE_FILESIZE_EXCEEDED) {
		seterr(err, errlen,
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
			seterr(err, errlen,
			       "s3: %s failed: the answer's header lines exceed a limit of libcurl's (a line of "
			       "more than 100 KiB), or libcurl ran out of memory: %s (retry later)",
			       what, ecerr);
			return -EAGAIN;
		}
		int v = s3_transport_verdict(rc);
		seterr(err, errlen, "s3: %s failed: %s%s", what, ecerr, v == -EAGAIN ? " (retry later)" : "");
		return v;
	}
	int r = s3_judge_response(u->status, u->body, u->body_len, what, err, errlen);
	if (r < 0 || q->etag == ETAG_IGNORED)
		return r;
	if (u->etag_state == ETAG_NONE) {
		if (q->etag == ETAG_OPTIONAL)
			return 0;
		seterr(err, errlen, "s3: %s failed: HTTP %ld with no ETag (retry later)", what, u->status);
		return -EAGAIN;
	}
	if (u->etag_state == ETAG_LONG) {
		seterr(err, errlen, "s3: %s failed: HTTP %ld with an ETag longer than %d bytes (retry later)", what,
		       u->status, S3_ETAG_MAX);
		return -EAGAIN;
	}
	if (s3_etag_check(u->etag, u->etag_len) < 0) {
		char eetag[4 * S3_ETAG_MAX + 1];
		text_escape(u->etag, u->etag_len, eetag, sizeof(eetag));
		seterr(err, errlen, "s3: %s failed: HTTP %ld with an ETag outside its grammar: %s (retry later)", what,
		       u->status, eetag);
		return -EAGAIN;
	}
	return 0;
}

static int request(struct upload *u, const struct request *q, char *err, size_t errlen)
{
	const struct s3_credentials *cr = u->c->creds;
	char what[256];
	snprintf(what, sizeof(what), "%s %s", q->what, u->ekey);

	char hash[SHA256_HEX_SIZE], date[17];
	if (q->body) {
		uint8_t d[SHA256_DIGEST_SIZE];
		sha256_digest(q->body, (size_t)q->len, d);
		sha256_hex(d, hash);
	} else {
		int r = hash_range(u, q->off, q->len, hash, err, errlen);
		if (r < 0)
			return r;
	}
	s3_amz_date(time(NULL), date);

	struct s3_param h[5];
	size_t nh = 0;
	h[nh++] = (struct s3_param){"host", u->t.host};
	h[nh++] = (struct s3_param){"x-amz-content-sha256", hash};
	h[nh++] = (struct s3_param){"x-amz-date", date};
	if (cr->session_token[0])
		h[nh++] = (struct s3_param){"x-amz-security-token", cr->session_token};
	if (q->content_type)
		h[nh++] = (struct s3_param){"content-type", q->content_type};
	char auth[1024];
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
		seterr(err, errlen, "s3: cannot sign the %s: %s", what, strerror(-r));
		return r;
	}

	/* The headers as sent: each "Name: value" line; the Host line set here
	 * so that what is sent is what was signed. */
	struct curl_slist *hl = NULL, *tmp;
	char line[sizeof(cr->session_token) + 64];
	int ok = 1;
	for (size_t i = 0; ok && i < nh; i++) {
		snprintf(line, sizeof(line), "%s: %s", h[i].name, h[i].value);
		ok = (tmp = curl_slist_append(hl, line)) != NULL;
		if (ok)
			hl = tmp;
	}
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
	if (!ok) {
		curl_slist_free_all(hl);
		seterr(err, errlen, "s3: out of memory preparing the %s", what);
		return -ENOMEM;
	}
	/* The query as signed (s3_sign_v4 succeeded, so it fits). */
	char url[sizeof(u->t.url) + 4096], qs[4096];
	if (s3_query_string(q->query, q->nquery, qs, sizeof(qs)) < 0 ||
	    snprintf(url, sizeof(url), "%s%s%s", u->t.url, q->nquery ? "?" : "", qs) >= (int)sizeof(url)) {
		curl_slist_free_all(hl);
		seterr(err, errlen, "s3: the URL of the %s is too long", what);
		return -ENAMETOOLONG;
	}

	CURL *c = u->curl;
	char cerr[CURL_ERROR_SIZE] = "";
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
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
	                    .content_type = content_type,
	                    .body = "",
	                    .len = 0};
	int r = request(u, &q, err, errlen);
	if (r < 0)
		return r;
	if (s3_xml_text(u->body, u->body_len, "UploadId", upload_id, sizeof(upload_id)) < 0 ||
	    !printable_token(upload_id, sizeof(upload_id) - 2)) {
		seterr(err, errlen,
		       "s3: CreateMultipartUpload for %s failed: HTTP %ld, the answer holds no usable UploadId "
		       "(retry later)",
		       u->ekey, u->status);
		return -EAGAIN;
	}
	char(*etags)[S3_ETAG_MAX + 1] = calloc(nparts, sizeof(*etags));
	if (!etags) {
		r = -ENOMEM;
		seterr(err, errlen, "s3: out of memory for the %u parts of %s", nparts, u->ekey);
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
		seterr(err, errlen, "s3: out of memory for the CompleteMultipartUpload of %s", u->ekey);
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
	if (!memfind(u->body, u->body_len, "<CompleteMultipartUploadResult", 30)) {
		seterr(err, errlen,
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
		seterr(err, errlen,
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
	r = full_key(c, key, fkey, err, errlen);
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
			seterr(err, errlen, "s3: the URL of %s is too long", u->ekey);
		goto done;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		seterr(err, errlen, "s3: the file to upload as %s: %s", u->ekey, strerror(-r));
		goto done;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < size) {
		seterr(err, errlen, "s3: the file to upload as %s is not a regular file of at least %llu bytes",
		       u->ekey, (unsigned long long)size);
		r = -EINVAL;
		goto done;
	}
	if (size > S3_OBJECT_MAX) {
		seterr(err, errlen, "s3: %s: %llu bytes is more than the 5 TiB an object may hold", u->ekey,
		       (unsigned long long)size);
		r = -EFBIG;
		goto done;
	}
	u->chunk = malloc(READ_CHUNK);
	u->curl = curl_easy_init();
	if (!u->chunk || !u->curl) {
		seterr(err, errlen, "s3: out of memory starting the upload of %s", u->ekey);
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
