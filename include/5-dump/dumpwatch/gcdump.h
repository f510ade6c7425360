/* A heap snapshot written as a .gcdump: the file dotnet-gcdump writes, which
 * `dotnet-gcdump report`, PerfView and Visual Studio open
 * (docs/gcdump-format.md has its layout).
 *
 * The graph is streamed from the heapgraph's accessors in a few passes; no
 * second copy of it is made: what is held besides the write buffer is a few
 * words per type. The objects keep their order; before them come the pseudo
 * nodes dotnet-gcdump makes for the roots ("[.NET Roots]" -> "[static vars]" ->
 * "[static var Cache.s_entries]" -> object, "[local vars]", "[other roots]" ->
 * "[strong Handles]", ...), so that retention from the roots reads the same. */
#ifndef DUMPWATCH_GCDUMP_H
#define DUMPWATCH_GCDUMP_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/heapgraph.h"

/* The first bytes of every .gcdump: "!FastSerialization.1" with its length. */
#define GCDUMP_MAGIC "\x14\x00\x00\x00!FastSerialization.1"
#define GCDUMP_MAGIC_LEN 24

/* What the writer did with the graph. */
struct gcdump_stats {
	uint64_t nodes;         /* nodes in the file, pseudo nodes included */
	uint64_t pseudo_nodes;  /* the root and root-category nodes */
	uint64_t types;         /* types in the file */
	uint64_t edges;         /* references written */
	uint64_t edges_dropped; /* to an object not in the graph */
	uint64_t roots;         /* roots written under a category */
	uint64_t roots_dropped; /* weak, or to an object not in the graph */
	uint64_t sizes_clamped; /* objects of 2 GiB or more, written as 2^31-1 bytes */
	uint64_t bytes;         /* the file's length */
};

struct gcdump_meta {
	const char *process_name; /* NULL: none */
	int32_t pid;
	const char *machine_name; /* NULL: none */
	int64_t time_unix_ns;     /* when the heap was walked; 0: unknown */
	int pointer_size;         /* 4 or 8 */
	uint64_t process_commit;  /* bytes, 0: unknown */
	uint64_t process_working_set;
	/* A module's path from its ModuleID, or NULL when unknown (then it is
	 * written "Module(0x...)", as dotnet-gcdump does). May be NULL. */
	const char *(*module_name)(void *ctx, uint64_t module_id);
	void *module_ctx;
	struct gcdump_stats *out_stats; /* filled when not NULL */
};

/* Writes the graph (after hg_finish) as a .gcdump to fd, which must be at the
 * start of an empty file. 0, or -errno with err holding a sentence: -ENOSPC
 * and the other write errors, -EFBIG when the file would pass the format's
 * 4 GiB or a count its 2^31-1, -ENOMEM. On an error the file holds a partial
 * write that no reader accepts. */
int gcdump_write(int fd, const struct heapgraph *g, const struct gcdump_meta *meta, char *err, size_t errlen);

/* The encodings, exported for their tests. */

/* Writes v as a compressed int (1-5 bytes) into out[5]; returns the length. */
size_t gcdump_cint_encode(int32_t v, uint8_t out[5]);

/* A UTF-8 string as the format's string: *ret_units is the count of UTF-16
 * units; the encoded bytes go to out when it is not NULL (room for the
 * returned length, at most 1.5 times the input plus 3 per invalid byte).
 * Invalid UTF-8 is taken as U+FFFD. Returns the encoded length. */
size_t gcdump_string_encode(const char *s, size_t len, uint8_t *out, uint32_t *ret_units);

/* A runtime type name in dotnet-gcdump's spelling: "`N" removed, '[' ']' as
 * '<' '>', then "<>" as "[]". Writes at most outlen bytes with a NUL;
 * returns the full length (as snprintf). */
size_t gcdump_type_name(const char *raw, char *out, size_t outlen);

#endif
