/* Fuzz target: what s3.c reads of a server's answer, which a hostile or
 * broken endpoint chooses: the bounded XML field extraction (s3_xml_text),
 * a header line (s3_header_value), the ETag grammar (s3_etag_check) and the
 * verdict with its sentence (s3_judge_response). Checked: every output is
 * NUL-terminated within its buffer, a header value's length is what was
 * copied, an ETag taken holds only bytes that are safe inside XML, the
 * sentence is one line without control characters, and each verdict is one
 * of the documented ones. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/s3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const tags[] = {"Code", "Message", "UploadId", "ETag", "Error"};
	static const long statuses[] = {200, 204, 301, 403, 404, 429, 500, 503};
	char *body = malloc(size ? size : 1), out[64], err[512];

	if (!body)
		return 0;
	memcpy(body, data, size);
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		memset(out, 0x55, sizeof(out));
		int r = s3_xml_text(body, size, tags[i], out, sizeof(out));
		if (r != 0 && r != -ENOENT && r != -EBADMSG)
			abort();
		if (r == 0 && !memchr(out, '\0', sizeof(out)))
			abort();
	}
	memset(out, 0x55, sizeof(out));
	int h = s3_header_value(body, size, "ETag", out, sizeof(out));
	if (h < 0 && h != -ENOENT && h != -E2BIG)
		abort();
	if (h >= 0 && ((size_t)h >= sizeof(out) || out[h] != '\0'))
		abort();
	/* The ETag check, on the value when there is one, else on the input. */
	const char *tag = h >= 0 ? out : body;
	size_t tag_len = h >= 0 ? (size_t)h : size;
	int e = s3_etag_check(tag, tag_len);
	if (e != 0 && e != -E2BIG && e != -EBADMSG)
		abort();
	if (e == 0) {
		if (tag_len == 0 || tag_len > S3_ETAG_MAX)
			abort();
		size_t a = tag[0] == '"' ? 1 : 0, z = tag_len - a; /* quoted: both ends */
		if (a && (tag_len < 3 || tag[z] != '"'))
			abort();
		for (size_t i = a; i < z; i++)
			if ((unsigned char)tag[i] <= 0x20 || (unsigned char)tag[i] >= 0x7f || tag[i] == '"' ||
			    tag[i] == '<' || tag[i] == '>' || tag[i] == '&')
				abort();
	}
	long status = statuses[size % (sizeof(statuses) / sizeof(statuses[0]))];
	memset(err, 0x55, sizeof(err));
	err[0] = '\0';
	int v = s3_judge_response(status, body, size, "PUT of b/k", err, sizeof(err));
	if (v != 0 && v != -EAGAIN && v != -EACCES && v != -ENOENT && v != -EIO)
		abort();
	if (!memchr(err, '\0', sizeof(err)))
		abort();
	for (const char *p = err; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			abort();
	free(body);
	return 0;
}
