/* Fuzz target: what s3.c reads of a server's answer, which a hostile or
 * broken endpoint chooses: the bounded XML field extraction (s3_xml_text),
 * a header line (s3_header_value) and the verdict with its sentence
 * (s3_judge_response). Checked: every output is NUL-terminated within its
 * buffer, the sentence is one line without control characters, and the
 * verdict is one of the documented ones. */
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
	if (h != 0 && h != -ENOENT && h != -E2BIG)
		abort();
	if (h == 0 && !memchr(out, '\0', sizeof(out)))
		abort();
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
