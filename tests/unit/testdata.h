/* A file of tests/data (DW_TEST_DATA) read whole, for the unit tests that
 * replay what the project recorded from real runtimes. */
#ifndef DUMPWATCH_TEST_TESTDATA_H
#define DUMPWATCH_TEST_TESTDATA_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The bytes of tests/data/NAME (or of NAME when it is an absolute path),
 * *len set; NULL when it cannot be read. The caller frees them. */
static inline uint8_t *testdata_load(const char *name, size_t *len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s%s%s", name[0] == '/' ? "" : DW_TEST_DATA, name[0] == '/' ? "" : "/", name);
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = n > 0 ? malloc((size_t)n) : NULL;
	*len = b ? fread(b, 1, (size_t)n, f) : 0;
	fclose(f);
	return b;
}

#endif
