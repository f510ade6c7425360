/* The classes that declare a heap snapshot's static roots, found in the
 * metadata of the assemblies the process has mapped (clrmeta.h), so that a
 * path reads "Cache.s_entries (static) -> List<Byte[]>" and not only
 * "s_entries (static)".
 *
 * The assemblies are the files /proc/PID/maps names ending in .dll or
 * .exe, opened through /proc/PID/map_files (root) or as the process sees
 * them (below /proc/PID/root, never through a symbolic link), kept only when
 * device and inode are the mapping's, and read, never mapped or run; their
 * names are the target's words and are escaped where shown. A static is
 * named only when one class fits: among the static fields of that name,
 * those declared with the type of the object the root holds come first;
 * when several classes are left, it stays unnamed. */
#ifndef DUMPWATCH_HEAPSTATICS_H
#define DUMPWATCH_HEAPSTATICS_H

#include <stddef.h>
#include <sys/types.h>

#include "dumpwatch/heapgraph.h"

/* At most this many assemblies, and metadata of at most this many bytes
 * each, are read. */
#define HEAPSTATICS_MAX_FILES 4096
#define HEAPSTATICS_MAX_METADATA (256u << 20)

struct heapstatics_result {
	size_t files;     /* assemblies whose metadata was read */
	size_t unread;    /* files that could not be opened or read as assemblies */
	size_t named;     /* static roots given their class */
	size_t ambiguous; /* static roots whose field several classes declare */
	size_t unknown;   /* static roots whose field no assembly read declares */
};

/* Names the class of each static root of g (hg_root_set_owner) from the
 * assemblies process pid has mapped. 0 (what could not be read is counted,
 * not an error), -ENOMEM, or -errno when /proc/PID/maps cannot be read
 * (the process is gone). */
int heapstatics_name(pid_t pid, struct heapgraph *g, struct heapstatics_result *out);

/* The same over metadata already in memory (for tests): mds[i] of
 * lens[i] bytes each. */
int heapstatics_name_from(struct heapgraph *g, const uint8_t *const *mds, const size_t *lens, size_t n,
                          struct heapstatics_result *out);

#endif
