/* Fuzz target: the ECMA-335 metadata reader (clrmeta.h), which reads the
 * assemblies a target process maps. An input that starts with "MZ" is a
 * PE file: its CLI header and metadata are found as heapstatics does, from
 * its first 4 KiB, then walked; any other input is walked as metadata.
 * Seeds: tests/data/assemblies. */
#include <stdint.h>
#include <string.h>

#include "dumpwatch/clrmeta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count(void *ctx, const char *field, const char *owner, const char *key)
{
	/* Every string must be terminated and within its bound. */
	size_t n = strlen(field) + strlen(owner) + strlen(key);
	*(size_t *)ctx += n;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	size_t total = 0;
	const uint8_t *md = data;
	size_t len = size;

	if (size >= 2 && data[0] == 'M' && data[1] == 'Z') {
		size_t head = size < 4096 ? size : 4096;
		uint64_t off;
		uint32_t n;
		if (clrmeta_cli_header(data, head, &off, &n) < 0 || off > size || size - off < 16)
			return 0;
		size_t cl = n < 72 ? n : 72;
		if (size - off < cl || clrmeta_metadata_at(data, head, data + off, cl, &off, &n) < 0)
			return 0;
		if (off > size || size - off < n)
			return 0;
		md = data + off;
		len = n;
	}
	(void)clrmeta_each_static(md, len, count, &total, err, sizeof(err));
	char key[64];
	char name[128];
	size_t k = size < sizeof(name) - 1 ? size : sizeof(name) - 1;
	memcpy(name, data, k);
	name[k] = '\0';
	clrmeta_type_key(name, key, sizeof(key));
	return 0;
}
