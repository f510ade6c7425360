/* S3 uploads, the daemon's part (s3.h has the contracts): the
 * configuration and the URLs it names, the credentials, and what is pure of
 * the protocol (URI and query encoding, the bounded reading of an answer:
 * its XML fields, header values, the ETag's grammar, the verdict on its
 * status). The requests themselves, with libcurl and libcrypto, are the
 * upload helper's (src/helpers/upload/), which runs unprivileged: none of
 * this file talks to a network or links either library. Nothing of what a
 * server says is trusted: the few fields read are found by a bounded scan
 * (no XML library) and checked before they are kept; what of them reaches an
 * error sentence is escaped into one line. */
#include "dumpwatch/s3.h"

#include "dumpwatch/strbuf.h"
#include "dumpwatch/text.h"
#include "dumpwatch/trust.h"

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
#define QUERY_PARAMS_MAX 16

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

static int use_vhost(const struct s3_config *c, const struct endpoint *ep)
{
	if (c->addressing == S3_ADDRESSING_AUTO)
		return text_ends_with(ep->host, strlen(ep->host), ".amazonaws.com", 0) ||
		       strcmp(ep->host, "amazonaws.com") == 0;
	return c->addressing == S3_ADDRESSING_VHOST;
}

int s3_printable(const char *s, size_t max)
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
	if (!c->creds || !s3_printable(c->creds->access_key_id, sizeof(c->creds->access_key_id) - 1) ||
	    !s3_printable(c->creds->secret_access_key, sizeof(c->creds->secret_access_key) - 1) ||
	    (c->creds->session_token[0] &&
	     !s3_printable(c->creds->session_token, sizeof(c->creds->session_token) - 1))) {
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

int s3_full_key(const struct s3_config *c, const char *key, char *out, char *err, size_t errlen)
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

/* ---- the query, the date ---- */

/* Appends s URI-encoded (s3_uri_encode) to b. */
static void add_encoded(struct strbuf *b, const char *s)
{
	char enc[3 * 1024 + 1];
	int r = s3_uri_encode(s, strlen(s), 0, enc, sizeof(enc));
	if (r < 0)
		b->failed = 1;
	else
		strbuf_add(b, enc, (size_t)r);
}

int s3_query_string(const struct s3_param *query, size_t nquery, char *out, size_t outlen)
{
	size_t order[QUERY_PARAMS_MAX];
	if (nquery > QUERY_PARAMS_MAX || outlen == 0)
		return -ENAMETOOLONG;
	/* Sorted by name (the names here are unreserved characters, so the
	 * order of the raw names is the order of the encoded ones). */
	for (size_t i = 0; i < nquery; i++) {
		size_t j = i;
		for (; j > 0 && strcmp(query[order[j - 1]].name, query[i].name) > 0; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	struct strbuf b = {.max = outlen - 1};
	for (size_t i = 0; i < nquery; i++) {
		if (i)
			strbuf_str(&b, "&");
		add_encoded(&b, query[order[i]].name);
		strbuf_str(&b, "=");
		add_encoded(&b, query[order[i]].value ? query[order[i]].value : "");
	}
	int r = b.failed || b.len > INT_MAX ? -ENAMETOOLONG : (int)b.len;
	if (r >= 0)
		memcpy(out, b.p ? b.p : "", b.len + 1);
	strbuf_free(&b);
	return r;
}

void s3_amz_date(time_t t, char out[17])
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
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
int s3_credentials_parse(struct s3_credentials *out, const char *buf, size_t len, const char *path, char *err,
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
		r = s3_credentials_parse(out, buf, len, esc, err, errlen);
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
