/* Unit tests for s3.c and the upload helper's s3client.c without a server: AWS's published Signature Version 4
 * examples for S3 (GET Object with a Range, PUT Object, GET Bucket lifecycle,
 * List Objects), key encoding, URL building (path-style, virtual-hosted),
 * part sizes, the bounded XML and header extraction with normal, truncated
 * and hostile input, the ETag grammar, the classification of errors (by S3
 * code, HTTP status and libcurl code), and the credentials loader's
 * refusals. */
#include "dumpwatch/s3.h"

#include "s3client.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define EX_KEY "AKIAIOSFODNN7EXAMPLE"
#define EX_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

static struct s3_credentials ex_creds(void)
{
	struct s3_credentials c;
	memset(&c, 0, sizeof(c));
	strcpy(c.access_key_id, EX_KEY);
	strcpy(c.secret_access_key, EX_SECRET);
	return c;
}

/* Signs with the examples' fixed inputs: us-east-1, 20130524T000000Z,
 * examplebucket addressed virtual-hosted (as in the examples). */
static void sign_example(const char *method, const char *key, const struct s3_param *query, size_t nquery,
                         const struct s3_param *extra, size_t nextra, const char *payload_hash, char *out,
                         size_t outlen)
{
	struct s3_credentials cr = ex_creds();
	struct s3_config c = {.endpoint = "https://s3.amazonaws.com", .bucket = "examplebucket", .creds = &cr};
	struct s3_target t;
	char err[256];
	CHECK(s3_target_build(&c, key, &t, err, sizeof(err)) == 0);
	CHECK_STR(t.host, "examplebucket.s3.amazonaws.com");
	struct s3_param h[8];
	size_t nh = 0;
	h[nh++] = (struct s3_param){"Host", t.host};
	for (size_t i = 0; i < nextra; i++)
		h[nh++] = extra[i];
	h[nh++] = (struct s3_param){"x-amz-content-sha256", payload_hash};
	h[nh++] = (struct s3_param){"x-amz-date", "20130524T000000Z"};
	struct s3_sign_input in = {
	    .method = method,
	    .canonical_uri = key ? t.uri : "/",
	    .query = query,
	    .nquery = nquery,
	    .headers = h,
	    .nheaders = nh,
	    .payload_hash = payload_hash,
	    .amz_date = "20130524T000000Z",
	    .region = "us-east-1",
	    .access_key_id = cr.access_key_id,
	    .secret_access_key = cr.secret_access_key,
	};
	CHECK(s3_sign_v4(&in, out, outlen) == 0);
}

static void test_sign_examples(void)
{
	char auth[512];

	/* GET Object: "Range: bytes=0-9" of /test.txt. */
	struct s3_param range[] = {{"Range", "bytes=0-9"}};
	sign_example("GET", "test.txt", NULL, 0, range, 1, EMPTY_SHA, auth, sizeof(auth));
	CHECK_STR(auth, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
	                "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
	                "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");

	/* PUT Object: "Welcome to Amazon S3." as test$file.text ('$' encoded). */
	const char *body = "Welcome to Amazon S3.";
	char hash[S3_SHA256_HEX];
	CHECK(s3_sha256_hex(body, strlen(body), hash) == 0);
	CHECK_STR(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
	struct s3_param put_h[] = {{"Date", "Fri, 24 May 2013 00:00:00 GMT"},
	                           {"x-amz-storage-class", "REDUCED_REDUNDANCY"}};
	sign_example("PUT", "test$file.text", NULL, 0, put_h, 2, hash, auth, sizeof(auth));
	CHECK_STR(auth, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
	                "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
	                "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");

	/* GET Bucket lifecycle: a parameter with an empty value ("lifecycle="),
	 * as "uploads" is sent. */
	struct s3_param lifecycle[] = {{"lifecycle", ""}};
	sign_example("GET", NULL, lifecycle, 1, NULL, 0, EMPTY_SHA, auth, sizeof(auth));
	CHECK(strstr(auth, "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543") != NULL);

	/* List Objects: two parameters, given out of order. */
	struct s3_param list[] = {{"prefix", "J"}, {"max-keys", "2"}};
	sign_example("GET", NULL, list, 2, NULL, 0, EMPTY_SHA, auth, sizeof(auth));
	CHECK(strstr(auth, "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7") != NULL);

	/* Header values are trimmed and their runs of spaces made one. */
	char auth2[512];
	struct s3_param range_sp[] = {{"RANGE", "  bytes=0-9 "}};
	sign_example("GET", "test.txt", NULL, 0, range_sp, 1, EMPTY_SHA, auth2, sizeof(auth2));
	sign_example("GET", "test.txt", NULL, 0, range, 1, EMPTY_SHA, auth, sizeof(auth));
	CHECK_STR(auth2, auth);

	/* A malformed date and too small an output are refused. */
	struct s3_param h[] = {{"host", "h"}};
	struct s3_sign_input in = {.method = "GET",
	                           .canonical_uri = "/",
	                           .headers = h,
	                           .nheaders = 1,
	                           .payload_hash = EMPTY_SHA,
	                           .amz_date = "2013-05-24",
	                           .region = "us-east-1",
	                           .access_key_id = EX_KEY,
	                           .secret_access_key = EX_SECRET};
	CHECK(s3_sign_v4(&in, auth, sizeof(auth)) == -EINVAL);
	in.amz_date = "20130524T000000Z";
	CHECK(s3_sign_v4(&in, auth, 40) == -ENAMETOOLONG);
	CHECK(strstr(auth, "Signature") == NULL);

	char date[17];
	s3_amz_date(1369353600, date); /* 2013-05-24 00:00:00 UTC */
	CHECK_STR(date, "20130524T000000Z");
}

static void test_encoding(void)
{
	char out[128];
	CHECK(s3_uri_encode("a b/c~d$\xc3\xa9-_.", 13, 1, out, sizeof(out)) == 21);
	CHECK_STR(out, "a%20b/c~d%24%C3%A9-_.");
	CHECK(s3_uri_encode("a/b+c=", 6, 0, out, sizeof(out)) > 0);
	CHECK_STR(out, "a%2Fb%2Bc%3D");
	CHECK(s3_uri_encode("abc", 3, 0, out, 3) == -ENAMETOOLONG);
	CHECK(s3_uri_encode("a%", 2, 0, out, 4) == -ENAMETOOLONG);
	CHECK(s3_uri_encode("", 0, 0, out, 1) == 0);

	struct s3_param q1[] = {{"uploads", ""}};
	CHECK(s3_query_string(q1, 1, out, sizeof(out)) == 8);
	CHECK_STR(out, "uploads=");
	struct s3_param q2[] = {{"uploadId", "a/b c"}, {"partNumber", "7"}};
	CHECK(s3_query_string(q2, 2, out, sizeof(out)) > 0);
	CHECK_STR(out, "partNumber=7&uploadId=a%2Fb%20c");
	CHECK(s3_query_string(q2, 2, out, 10) == -ENAMETOOLONG);
}

static void test_urls(void)
{
	struct s3_credentials cr = ex_creds();
	struct s3_config c = {.endpoint = "http://127.0.0.1:4568", .bucket = "dumps", .creds = &cr};
	struct s3_target t;
	char err[256];

	CHECK(s3_config_check(&c, err, sizeof(err)) == 0);
	CHECK(s3_target_build(&c, "host1/app 1.dmp", &t, err, sizeof(err)) == 0);
	CHECK_STR(t.url, "http://127.0.0.1:4568/dumps/host1/app%201.dmp");
	CHECK_STR(t.host, "127.0.0.1:4568");
	CHECK_STR(t.uri, "/dumps/host1/app%201.dmp");

	/* A key's dot segments are kept as they are (curl is told not to tidy). */
	CHECK(s3_target_build(&c, "a/../b", &t, err, sizeof(err)) == 0);
	CHECK_STR(t.uri, "/dumps/a/../b");

	c.addressing = S3_ADDRESSING_VHOST;
	c.endpoint = "http://minio.local:9000";
	CHECK(s3_config_check(&c, err, sizeof(err)) == 0);
	CHECK(s3_target_build(&c, "k", &t, err, sizeof(err)) == 0);
	CHECK_STR(t.url, "http://dumps.minio.local:9000/k");
	CHECK_STR(t.host, "dumps.minio.local:9000");
	CHECK_STR(t.uri, "/k");
	/* An IP address has no subdomains. */
	c.endpoint = "http://127.0.0.1:4568";
	CHECK(s3_config_check(&c, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "use path-style") != NULL);
	c.endpoint = "http://[::1]:4568";
	CHECK(s3_config_check(&c, err, sizeof(err)) == -EINVAL);

	/* AWS endpoints are virtual-hosted by default, and may be forced path-style. */
	c.endpoint = "https://S3.eu-west-1.AmazonAWS.com/";
	c.addressing = S3_ADDRESSING_AUTO;
	CHECK(s3_target_build(&c, "x/y", &t, err, sizeof(err)) == 0);
	CHECK_STR(t.url, "https://dumps.s3.eu-west-1.amazonaws.com/x/y");
	c.addressing = S3_ADDRESSING_PATH;
	CHECK(s3_target_build(&c, "x/y", &t, err, sizeof(err)) == 0);
	CHECK_STR(t.url, "https://s3.eu-west-1.amazonaws.com/dumps/x/y");

	c.endpoint = "http://[::1]:9000";
	c.addressing = S3_ADDRESSING_AUTO;
	CHECK(s3_target_build(&c, "k", &t, err, sizeof(err)) == 0);
	CHECK_STR(t.url, "http://[::1]:9000/dumps/k");

	/* Endpoints with anything but scheme, host and port are refused. */
	const char *bad_endpoints[] = {"ftp://h",       "h:9000",       "http://",          "http://user@h",
	                               "http://h/path", "http://h?x=1", "http://h\r\nX: y", ""};
	for (size_t i = 0; i < sizeof(bad_endpoints) / sizeof(bad_endpoints[0]); i++) {
		c.endpoint = bad_endpoints[i];
		err[0] = '\0';
		CHECK_MSG(s3_config_check(&c, err, sizeof(err)) == -EINVAL, "%s", bad_endpoints[i]);
		CHECK(err[0] != '\0' && strchr(err, '\n') == NULL && strchr(err, '\r') == NULL);
	}
	c.endpoint = "http://127.0.0.1:4568";

	c.bucket = "a/b";
	CHECK(s3_config_check(&c, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "bucket name") != NULL);
	c.bucket = "dumps";
	c.part_size = 1 << 20;
	CHECK(s3_config_check(&c, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "5 MiB") != NULL);
	c.part_size = 0;
	c.region = "eu west";
	CHECK(s3_config_check(&c, err, sizeof(err)) == -EINVAL);
	c.region = NULL;
	struct s3_credentials none = {0};
	c.creds = &none;
	CHECK(s3_config_check(&c, err, sizeof(err)) == -EINVAL);
	strcpy(none.access_key_id, "AK");
	strcpy(none.secret_access_key, "a\nb");
	CHECK(s3_config_check(&c, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "a\nb") == NULL);
}

static void test_part_size(void)
{
	const uint64_t MiB = 1 << 20, GiB = 1ULL << 30, TiB = 1ULL << 40;
	CHECK(s3_part_size(0, 100) == 64 * MiB);
	CHECK(s3_part_size(1, 100) == 5 * MiB);
	CHECK(s3_part_size(6 * GiB, 100) == 5 * GiB);
	CHECK(s3_part_size(5 * MiB, 12 * MiB) == 5 * MiB);
	CHECK(s3_part_size(0, 625 * GiB) == 64 * MiB);      /* exactly 10000 parts */
	CHECK(s3_part_size(0, 625 * GiB + 1) == 128 * MiB); /* one byte more: 10001 */
	CHECK(s3_part_size(0, TiB) == 128 * MiB);           /* 8192 parts */
	CHECK(s3_part_size(5 * MiB, 5 * TiB) == 640 * MiB); /* 8192 parts */
	CHECK(s3_part_size(0, 5 * TiB) / 1 * 10000 >= 5 * TiB);
}

static void test_xml(void)
{
	char out[64];
	const char *ok = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult>"
	                 "<Bucket>b</Bucket><Key>k</Key><UploadId>VXBsb2FkIElE&amp;x</UploadId>"
	                 "</InitiateMultipartUploadResult>";
	CHECK(s3_xml_text(ok, strlen(ok), "UploadId", out, sizeof(out)) == 0);
	CHECK_STR(out, "VXBsb2FkIElE&x");
	CHECK(s3_xml_text(ok, strlen(ok), "Code", out, sizeof(out)) == -ENOENT);

	/* Truncated anywhere: never found, never read past the length. */
	for (size_t n = 0; n < strlen(ok) - strlen("</InitiateMultipartUploadResult>") - 10; n++) {
		char *cut = malloc(n ? n : 1);
		memcpy(cut, ok, n);
		int r = s3_xml_text(cut, n, "UploadId", out, sizeof(out));
		CHECK(r == -ENOENT || (r == 0 && n >= (size_t)(strstr(ok, "</UploadId>") - ok) + 11));
		free(cut);
	}

	/* Entities and character references. */
	const char *ent = "<Message>&lt;a&gt; &quot;b&quot; &apos;c&apos; &#65;&#x42;&#xe9;</Message>";
	CHECK(s3_xml_text(ent, strlen(ent), "Message", out, sizeof(out)) == 0);
	CHECK_STR(out, "<a> \"b\" 'c' AB\xc3\xa9");
	const char *bad[] = {"<Message>&bogus;</Message>",    "<Message>&#0;</Message>", "<Message>&#xD800;</Message>",
	                     "<Message>&#x110000;</Message>", "<Message>&#65</Message>", "<Message>&</Message>"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_MSG(s3_xml_text(bad[i], strlen(bad[i]), "Message", out, sizeof(out)) == -EBADMSG, "%s", bad[i]);

	/* Too long for out: cut on a character boundary. */
	char small[6];
	const char *utf = "<Code>ab\xc3\xa9\xc3\xa9</Code>";
	CHECK(s3_xml_text(utf, strlen(utf), "Code", small, sizeof(small)) == 0);
	CHECK_STR(small, "ab\xc3\xa9");

	/* ETag header lines. */
	char etag[S3_ETAG_MAX + 1];
	const char *h1 = "ETag: \"9b2cf535f27731c974343645a3985328\"\r\n";
	CHECK(s3_header_value(h1, strlen(h1), "ETag", etag, sizeof(etag)) == 34);
	CHECK_STR(etag, "\"9b2cf535f27731c974343645a3985328\"");
	CHECK(s3_header_value("etag:x\r\n", 8, "ETag", etag, sizeof(etag)) == 1);
	CHECK_STR(etag, "x");
	CHECK(s3_header_value("ETagX: y\r\n", 10, "ETag", etag, sizeof(etag)) == -ENOENT);
	CHECK(s3_header_value("ETag", 4, "ETag", etag, sizeof(etag)) == -ENOENT);
	CHECK(s3_header_value("ETag: 0123456789\r\n", 18, "ETag", etag, 8) == -E2BIG);
	/* A NUL inside is kept, and the length tells it. */
	CHECK(s3_header_value("ETag: \"a\0b\"\r\n", 13, "ETag", etag, sizeof(etag)) == 5);
	CHECK(memcmp(etag, "\"a\0b\"", 6) == 0);
	CHECK(s3_header_value("ETag:\r\n", 7, "ETag", etag, sizeof(etag)) == 0);
}

static void test_etag(void)
{
	const char *good[] = {
	    "\"9b2cf535f27731c974343645a3985328\"",    /* a PUT's: the MD5 in hex */
	    "\"d41d8cd98f00b204e9800998ecf8427e-38\"", /* a multipart upload's */
	    "9b2cf535f27731c974343645a3985328",        /* without the quotes */
	    "\"!#$%'()*+,-./:;=?@[\\]^_`{|}~\"",       /* every other etagc byte of ASCII */
	    "W/x",                                     /* a bare token that only looks weak */
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK_MSG(s3_etag_check(good[i], strlen(good[i])) == 0, "%s", good[i]);
	const char *bad[] = {
	    "",         "\"\"",          "\"",        "\"a",          "a\"",     "\"a\"b\"", "W/\"a\"", "\"a b\"",
	    "\"a\tb\"", "\"a\x1b[31m\"", "\"a\x7f\"", "\"\xc3\xa9\"", "\"a<b\"", "\"a>b\"",  "\"a&b\"", "\"a\r\n\"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_MSG(s3_etag_check(bad[i], strlen(bad[i])) == -EBADMSG, "%s", bad[i]);
	CHECK(s3_etag_check("\"a\0b\"", 5) == -EBADMSG);

	/* S3_ETAG_MAX bytes, quotes included, and one more. */
	char long_etag[S3_ETAG_MAX + 2];
	memset(long_etag, 'a', sizeof(long_etag));
	long_etag[0] = '"';
	long_etag[S3_ETAG_MAX - 1] = '"';
	CHECK(s3_etag_check(long_etag, S3_ETAG_MAX) == 0);
	long_etag[S3_ETAG_MAX - 1] = 'a';
	long_etag[S3_ETAG_MAX] = '"';
	CHECK(s3_etag_check(long_etag, S3_ETAG_MAX + 1) == -E2BIG);
	char *huge = malloc(200000);
	memset(huge, 'a', 200000);
	CHECK(s3_etag_check(huge, 200000) == -E2BIG);
	free(huge);
}

static void test_judge(void)
{
	char err[512];
	const char *what = "PUT of b/k";
	const char *nsb = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchBucket</Code>"
	                  "<Message>The specified bucket does not exist</Message><BucketName>b</BucketName></Error>";
	CHECK(s3_judge_response(404, nsb, strlen(nsb), what, err, sizeof(err)) == -ENOENT);
	CHECK_STR(err, "s3: PUT of b/k failed: HTTP 404, S3 error NoSuchBucket: The specified bucket does not exist "
	               "(create the bucket or correct its name)");

	struct {
		long status;
		const char *code;
		int want;
	} cases[] = {
	    /* Retried: the server's state, or ours, changes meanwhile. */
	    {503, "SlowDown", -EAGAIN},
	    {400, "RequestTimeout", -EAGAIN},
	    {500, "InternalError", -EAGAIN},
	    {503, "ServiceUnavailable", -EAGAIN},
	    {503, "Whatever", -EAGAIN},
	    {200, "InternalError", -EAGAIN}, /* CompleteMultipartUpload's 200 */
	    {404, "NoSuchUpload", -EAGAIN},  /* the next attempt starts another */
	    {403, "RequestTimeTooSkewed", -EAGAIN},
	    /* Codes not known, at a status that does not say "for good". */
	    {400, "InvalidArgument", -EAGAIN},
	    {400, "XAmzContentSHA256Mismatch", -EAGAIN},
	    {400, "IncompleteBody", -EAGAIN},
	    {409, "OperationAborted", -EAGAIN},
	    {200, "Whatever", -EAGAIN},
	    /* Permanent: only a change of configuration helps. */
	    {403, "AccessDenied", -EACCES},
	    {403, "InvalidAccessKeyId", -EACCES},
	    {403, "SignatureDoesNotMatch", -EACCES},
	    {400, "ExpiredToken", -EACCES},
	    {400, "InvalidToken", -EACCES},
	    {200, "AccessDenied", -EACCES},
	    {404, "NoSuchBucket", -ENOENT},
	    {301, "PermanentRedirect", -EIO},
	    {400, "AuthorizationHeaderMalformed", -EIO},
	    {400, "EntityTooSmall", -EIO},
	    {400, "EntityTooLarge", -EIO},
	    /* An unknown code at a status that says so. */
	    {403, "AllAccessDisabled", -EACCES},
	    {404, "Whatever", -ENOENT},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char body[256];
		snprintf(body, sizeof(body), "<Error><Code>%s</Code><Message>m</Message></Error>", cases[i].code);
		CHECK_MSG(s3_judge_response(cases[i].status, body, strlen(body), what, err, sizeof(err)) ==
		              cases[i].want,
		          "%s", cases[i].code);
		CHECK(strstr(err, cases[i].code) != NULL);
	}
	CHECK(s3_judge_response(200, "", 0, what, err, sizeof(err)) == 0);
	const char *result =
	    "<CompleteMultipartUploadResult><ETag>&quot;x-2&quot;</ETag></CompleteMultipartUploadResult>";
	CHECK(s3_judge_response(200, result, strlen(result), what, err, sizeof(err)) == 0);
	CHECK(s3_judge_response(204, NULL, 0, what, err, sizeof(err)) == 0);
	CHECK(s3_judge_response(500, NULL, 0, what, err, sizeof(err)) == -EAGAIN);
	CHECK(strstr(err, "HTTP 500 with no S3 error code") != NULL);
	CHECK(s3_judge_response(429, "slow down", 9, what, err, sizeof(err)) == -EAGAIN);
	CHECK(s3_judge_response(403, "<html>", 6, what, err, sizeof(err)) == -EACCES);
	CHECK(s3_judge_response(401, NULL, 0, what, err, sizeof(err)) == -EACCES);
	CHECK(s3_judge_response(404, NULL, 0, what, err, sizeof(err)) == -ENOENT);
	CHECK(s3_judge_response(301, NULL, 0, what, err, sizeof(err)) == -EIO);
	CHECK(strstr(err, "correct the endpoint") != NULL);
	/* Whatever else a server answers is tried again: it may mean anything. */
	CHECK(s3_judge_response(307, NULL, 0, what, err, sizeof(err)) == -EAGAIN);
	CHECK(strstr(err, "retry later") != NULL);
	CHECK(s3_judge_response(302, NULL, 0, what, err, sizeof(err)) == -EAGAIN);
	CHECK(s3_judge_response(400, NULL, 0, what, err, sizeof(err)) == -EAGAIN);
	CHECK(s3_judge_response(400, "<Error><Code>Bad", 16, what, err, sizeof(err)) == -EAGAIN);
	CHECK(s3_judge_response(418, NULL, 0, what, err, sizeof(err)) == -EAGAIN);
	CHECK(s3_judge_response(100, NULL, 0, what, err, sizeof(err)) == -EAGAIN);
	CHECK(s3_judge_response(0, NULL, 0, what, err, sizeof(err)) == -EAGAIN);
	CHECK(s3_judge_response(999, NULL, 0, what, err, sizeof(err)) == -EAGAIN);
	CHECK(s3_judge_response(200, "<Error>", 7, what, err, sizeof(err)) == -EAGAIN);

	/* Hostile: a message forging a log line with a newline, escapes and a
	 * reference to a newline; a code and message of megabytes. The
	 * sentence stays one line of printable text, bounded. */
	const char *forge = "<Error><Code>AccessDenied\n</Code><Message>no\n<6>dumpwatch: rule fired\x1b[2J&#10;"
	                    "\xe2\x80\xa8\xc2\x85\x80</Message></Error>";
	CHECK(s3_judge_response(403, forge, strlen(forge), what, err, sizeof(err)) == -EACCES);
	for (const char *p = err; *p; p++)
		CHECK_MSG((unsigned char)*p >= 0x20 && (unsigned char)*p != 0x7f, "control 0x%02x in %s",
		          (unsigned char)*p, err);
	CHECK(strstr(err, "\xe2\x80\xa8") == NULL && strstr(err, "\xc2\x85") == NULL);
	size_t big = 4 << 20;
	char *huge = malloc(big);
	memset(huge, 'A', big);
	memcpy(huge, "<Error><Code>", 13);
	memcpy(huge + 100, "</Code><Message>", 16);
	memcpy(huge + big - 20, "</Message></Error>", 18);
	char small[128];
	CHECK(s3_judge_response(500, huge, big, what, small, sizeof(small)) == -EAGAIN);
	CHECK(strlen(small) < sizeof(small));
	CHECK(s3_judge_response(500, huge, big, what, err, sizeof(err)) == -EAGAIN);
	CHECK(strlen(err) < 64 + 96 + 384 && strlen(err) > 100);
	free(huge);
}

/* A transfer libcurl failed: retried unless the request cannot be made here
 * at all. CURLE_OUT_OF_MEMORY is also what libcurl 7.x says of a header line
 * over 100 KiB (a server's 200 KB ETag): retried like the rest. */
static void test_transport(void)
{
	CHECK(s3_transport_verdict(CURLE_OK) == 0);
	const CURLcode again[] = {CURLE_OUT_OF_MEMORY,
	                          CURLE_COULDNT_CONNECT,
	                          CURLE_COULDNT_RESOLVE_HOST,
	                          CURLE_OPERATION_TIMEDOUT,
	                          CURLE_RECV_ERROR,
	                          CURLE_SEND_ERROR,
	                          CURLE_GOT_NOTHING,
	                          CURLE_PARTIAL_FILE,
	                          CURLE_WEIRD_SERVER_REPLY,
	                          CURLE_UNSUPPORTED_PROTOCOL + 1000, /* a code this libcurl does not have */
	                          CURLE_WRITE_ERROR,
	                          CURLE_FILESIZE_EXCEEDED,
	                          CURLE_BAD_CONTENT_ENCODING,
	                          CURLE_SSL_CONNECT_ERROR,
	                          CURLE_PEER_FAILED_VERIFICATION,
	                          CURLE_HTTP2_STREAM,
	                          CURLE_AGAIN};
	for (size_t i = 0; i < sizeof(again) / sizeof(again[0]); i++)
		CHECK_MSG(s3_transport_verdict(again[i]) == -EAGAIN, "CURLcode %d", (int)again[i]);
	const CURLcode never[] = {CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_NOT_BUILT_IN,
	                          CURLE_BAD_FUNCTION_ARGUMENT, CURLE_UNKNOWN_OPTION};
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		CHECK_MSG(s3_transport_verdict(never[i]) == -EINVAL, "CURLcode %d", (int)never[i]);
}

static char tmpdir[64];

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	CHECK(fchmod(fd, mode) == 0);
	close(fd);
}

static void test_credentials(void)
{
	struct s3_credentials cr;
	char err[1024], path[256], link[256];
	strcpy(tmpdir, "/tmp/dw-test-s3.XXXXXX");
	CHECK(mkdtemp(tmpdir) != NULL);
	snprintf(path, sizeof(path), "%s/creds", tmpdir);
	write_file(path,
	           "# for the dump uploads\n\nAWS_ACCESS_KEY_ID=AKID1\n  AWS_SECRET_ACCESS_KEY = \"s3cr3t/x+y\"  \r\n"
	           "export AWS_SESSION_TOKEN='tok=='\nAWS_REGION=eu-west-1\n",
	           0600);
	CHECK(s3_credentials_load(&cr, path, err, sizeof(err)) == 0);
	CHECK_STR(cr.access_key_id, "AKID1");
	CHECK_STR(cr.secret_access_key, "s3cr3t/x+y");
	CHECK_STR(cr.session_token, "tok==");

	/* Relative names are in $CREDENTIALS_DIRECTORY. */
	unsetenv("CREDENTIALS_DIRECTORY");
	CHECK(s3_credentials_load(&cr, "creds", err, sizeof(err)) == -ENOENT);
	CHECK(strstr(err, "CREDENTIALS_DIRECTORY") != NULL);
	setenv("CREDENTIALS_DIRECTORY", tmpdir, 1);
	CHECK(s3_credentials_load(&cr, "creds", err, sizeof(err)) == 0);
	CHECK_STR(cr.access_key_id, "AKID1");

	/* Readable by others: refused, saying what to do. */
	CHECK(chmod(path, 0644) == 0);
	CHECK(s3_credentials_load(&cr, path, err, sizeof(err)) == -EPERM);
	CHECK(strstr(err, "chmod 0600 ") != NULL && strstr(err, "mode 0644") != NULL);
	CHECK(cr.secret_access_key[0] == '\0');
	CHECK(chmod(path, 0660) == 0);
	CHECK(s3_credentials_load(&cr, path, err, sizeof(err)) == -EPERM);
	CHECK(chmod(path, 0400) == 0);
	CHECK(s3_credentials_load(&cr, path, err, sizeof(err)) == 0);

	/* A symbolic link of ours, as a Kubernetes Secret volume or systemd's
	 * credentials directory makes them: followed. One of another user's:
	 * refused, whatever it points at. */
	snprintf(link, sizeof(link), "%s/link", tmpdir);
	CHECK(symlink(path, link) == 0);
	CHECK(s3_credentials_load(&cr, link, err, sizeof(err)) == 0);
	if (geteuid() == 0) {
		CHECK(lchown(link, 65534, 65534) == 0);
		CHECK(s3_credentials_load(&cr, link, err, sizeof(err)) == -EPERM);
		CHECK_MSG(strstr(err, "symbolic link") != NULL && strstr(err, "owned by uid 65534") != NULL, "%s", err);
	}
	unlink(link);

	/* A directory, a FIFO: not regular files. */
	CHECK(s3_credentials_load(&cr, tmpdir, err, sizeof(err)) == -EPERM);
	snprintf(link, sizeof(link), "%s/fifo", tmpdir);
	CHECK(mkfifo(link, 0600) == 0);
	CHECK(s3_credentials_load(&cr, link, err, sizeof(err)) == -EPERM);
	CHECK(strstr(err, "not a regular file") != NULL);
	unlink(link);

	/* Malformed lines and values, missing names: FILE:LINE, never the value. */
	unlink(path);
	write_file(path, "AWS_ACCESS_KEY_ID=AKID1\n\nnot a line\n", 0600);
	CHECK(s3_credentials_load(&cr, path, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "creds:3: expected NAME=VALUE") != NULL);
	unlink(path);
	write_file(path, "AWS_ACCESS_KEY_ID=AKID1\nAWS_SECRET_ACCESS_KEY=top secret\n", 0600);
	CHECK(s3_credentials_load(&cr, path, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "creds:2: AWS_SECRET_ACCESS_KEY") != NULL && strstr(err, "secret\n") == NULL);
	CHECK(strstr(err, "top secret") == NULL);
	unlink(path);
	write_file(path, "AWS_ACCESS_KEY_ID=AKID1\n", 0600);
	CHECK(s3_credentials_load(&cr, path, err, sizeof(err)) == -ENOENT);
	CHECK(strstr(err, "no AWS_SECRET_ACCESS_KEY") != NULL);
	unlink(path);
	snprintf(link, sizeof(link), "%s/absent", tmpdir);
	CHECK(s3_credentials_load(&cr, link, err, sizeof(err)) == -ENOENT);

	/* The environment. */
	setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_SESSION_TOKEN");
	CHECK(s3_credentials_load(&cr, NULL, err, sizeof(err)) == -ENOENT);
	setenv("AWS_SECRET_ACCESS_KEY", "SEENV", 1);
	CHECK(s3_credentials_load(&cr, NULL, err, sizeof(err)) == 0);
	CHECK_STR(cr.access_key_id, "AKENV");
	CHECK_STR(cr.secret_access_key, "SEENV");
	CHECK_STR(cr.session_token, "");
	setenv("AWS_SESSION_TOKEN", "a\r\nX-Injected: 1", 1);
	CHECK(s3_credentials_load(&cr, NULL, err, sizeof(err)) == -EINVAL);
	s3_credentials_clear(&cr);
	CHECK(cr.access_key_id[0] == '\0');
	s3_credentials_clear(NULL);
	rmdir(tmpdir);
}

int main(void)
{
	test_sign_examples();
	test_encoding();
	test_urls();
	test_part_size();
	test_xml();
	test_etag();
	test_judge();
	test_transport();
	test_credentials();
	return check_done();
}
