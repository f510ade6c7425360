/* The metadata of an assembly held whole in memory, found as heapstatics
 * finds it (clrmeta.h): the CLI header from the first 4 KiB, then the
 * metadata it points to. For the unit tests of the metadata reader. */
#ifndef DUMPWATCH_TEST_ASMFILE_H
#define DUMPWATCH_TEST_ASMFILE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/clrmeta.h"

/* 0 with *ret and *ret_len inside pe, or -errno. */
static inline int asm_metadata_of(const uint8_t *pe, size_t len, const uint8_t **ret, size_t *ret_len)
{
	uint64_t off;
	uint32_t size;
	size_t head = len < 4096 ? len : 4096;
	int r = clrmeta_cli_header(pe, head, &off, &size);
	if (r < 0)
		return r;
	size_t cl = size < 72 ? size : 72;
	if (off > len || len - off < cl)
		return -EBADMSG;
	if ((r = clrmeta_metadata_at(pe, head, pe + off, cl, &off, &size)) < 0)
		return r;
	if (off > len || len - off < size)
		return -EBADMSG;
	*ret = pe + off;
	*ret_len = size;
	return 0;
}

#endif
