/* The dump store: the directory dumps are published in, and the disk guards
 * checked before every dump (DESIGN.md "Dump safety").
 *
 * A stored dump is a regular file in the store directory whose name does not
 * start with '.', owned by us, holding an ELF core (what createdump writes);
 * nothing else there is counted or ever deleted. Before a dump, the size it
 * will take is estimated from the target's memory, and the dump is admitted
 * only if, once written, the file system keeps its minimum free space and the
 * store stays within its maximum size and count. When it would not, it is
 * skipped, or the oldest stored dumps are deleted to make room when that is
 * configured and enough. */
#ifndef DUMPWATCH_STORE_H
#define DUMPWATCH_STORE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dumpwatch/rules.h"

struct store_limits {
	uint64_t min_free_bytes; /* free space left after the dump; 0: none */
	double min_free_pct;     /* same, percent of the file system; 0: none */
	uint64_t max_bytes;      /* all stored dumps together; 0: none */
	uint32_t max_count;      /* stored dumps; 0: none */
	int delete_oldest;       /* make room by deleting the oldest dumps */
};

struct store_entry {
	char name[NAME_MAX + 1];
	uint64_t bytes; /* space it takes on disk, with its context files */
	int64_t mtime_ns;
	/* Context files (NAME.json, NAME.svg) without a dump: of a dump that
	 * was skipped or failed. name is one of them. Not a dump for
	 * max_count; deleted with the oldest all the same. */
	int context_only;
	int doomed; /* store_admit: to be deleted to make room */
};

struct store_state {
	uint64_t fs_bytes;           /* size of the file system (what unprivileged users get) */
	uint64_t free_bytes;         /* available to us */
	struct store_entry *entries; /* oldest first */
	size_t n;
	uint64_t stored_bytes;
	size_t n_context_only; /* entries that are context files only */
};

/* The context files beside a dump (dumpctx.h): NAME.json and NAME.svg for a
 * dump NAME.core, DUMP.json and DUMP.svg for a dump named otherwise (a name
 * template without ".core"); never the dump's own name. Pure. */
void store_context_names(const char *dump_name, char *json, size_t jsonlen, char *svg, size_t svglen);

/* Room a dump's context files are given when the dump is admitted. */
#define STORE_CONTEXT_ALLOWANCE (2u << 20)

/* Publishes a dump's context files beside dump_name in the store behind
 * dirfd (checked by the caller, dump_open_store): each written to a
 * temporary ".NAME.partial" (created without following links) and
 * renamed, with the owner and mode of the dump when it is there (0600 and
 * ours otherwise). Not synced: a reader sees a whole file or none, and the
 * event loop does not wait for the disk (after a dump of gigabytes, a sync
 * can wait seconds for its data); a crash may lose the newest contexts,
 * never a journal record. Refused (-ENOSPC, why) when they would leave less free
 * space than l's minimum. 0 or -errno with a sentence in err. */
int store_put_context(int dirfd, const char *dump_name, const struct store_limits *l, const char *json, size_t jsonlen,
                      const char *svg, size_t svglen, char *err, size_t errlen);

/* Deletes a stored entry (store_scan) with its context files. 0 or -errno. */
int store_delete(int dirfd, const struct store_entry *e);

/* Reads the store behind dirfd: file system figures, the stored dumps and
 * the context files (counted with their dump, or as an entry of their own
 * when it is not there). 0 or -errno. */
int store_scan(int dirfd, struct store_state *out);
void store_state_free(struct store_state *s);

/* Decides whether a dump of estimate bytes may be written. Returns 0 when it
 * may, after deleting the *ret_n_delete entries marked doomed (0 unless
 * delete_oldest): the oldest first, a context-only entry only while space,
 * not the count of dumps, is short; -ENOSPC with the reason in why when it
 * may not (nothing marked). Pure but for the marks. */
int store_admit(struct store_state *s, const struct store_limits *l, uint64_t estimate, size_t *ret_n_delete, char *why,
                size_t whylen);

/* What a dump of one process is expected to take, and the most it can: its
 * memory as /proc/PID/maps lists it. createdump writes the pages of a
 * mapping whether or not they were ever touched (the GC commits the large
 * object heap without touching it, so resident figures can be a tenth of the
 * dump), and nothing that is not mapped readable. */
struct store_estimate {
	uint64_t bytes; /* expected size of the dump; 0: unknown */
	uint64_t bound; /* the largest file accepted as its dump; 0: unknown */
};

/* From the text of /proc/PID/maps (len bytes): a full dump is every readable
 * mapping plus 10 %; a heap dump the readable anonymous mappings plus 10 %
 * and 32 MiB of images; a triage or normal dump 64 MiB. The bound, for every
 * type, is the readable mappings plus a quarter and 256 MiB (the process may
 * still grow until createdump freezes it). Pure. */
void store_estimate_from_maps(const char *maps, size_t len, enum dump_type type, struct store_estimate *out);

/* The same for process pid; zeros when its maps cannot be read. */
void store_estimate(pid_t pid, enum dump_type type, struct store_estimate *out);

/* Whether the file behind fd (st from fstat) is a stored dump: regular, owned
 * by uid, an ELF core or a gcdump. */
int store_is_dump(int fd, uid_t uid);

/* Whether a dump that would leave a file system of fs_bytes with free_bytes
 * available, once estimate more bytes are written, keeps the minimum free
 * space of l. 0 when it does; -ENOSPC with the reason in why when not, the
 * file system named by where ("the dump file system"). Pure. */
int store_check_free(uint64_t fs_bytes, uint64_t free_bytes, const struct store_limits *l, uint64_t estimate,
                     const char *where, char *why, size_t whylen);

/* Program headers read at most from one file: a core has one per mapping. */
#define STORE_CORE_PHDRS_MAX (1u << 20)

/* Checks that the size bytes behind fd hold what createdump writes: a 64-bit
 * little-endian ELF core (ET_CORE) whose program headers lie in the file, with
 * a note segment, every segment inside the file, the file ending within
 * 1 MiB of its last segment, and size at most bound (0: not checked).
 * 0, or -EBADMSG / -EFBIG / -errno with the reason in why. */
int store_check_core(int fd, uint64_t size, uint64_t bound, char *why, size_t whylen);

/* Checks that the size bytes behind fd begin like a .gcdump (GCDUMP_MAGIC).
 * 0, or -EBADMSG with the reason in why. */
int store_check_gcdump(int fd, uint64_t size, char *why, size_t whylen);

#endif
