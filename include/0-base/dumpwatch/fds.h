/* Open file descriptors: the process's limit and how many are open, closing
 * all of them in a child, and a file written whole through one. The guard
 * holds two descriptors per attached process (its event stream and its
 * pidfd), so the default soft limit of 1024 would let about 500 processes,
 * any user's, use them all up and leave none for finding the next process,
 * the journal or a dump. */
#ifndef DUMPWATCH_FDS_H
#define DUMPWATCH_FDS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fds_limit {
	uint64_t soft_before; /* RLIMIT_NOFILE's soft limit as we found it */
	uint64_t soft;        /* ... and as it is now */
	uint64_t hard;
};

/* Raises RLIMIT_NOFILE's soft limit to its hard limit (a process may do so
 * without privilege). Select()-based code is unaffected: descriptors are
 * still handed out lowest first, and those opened early stay below
 * FD_SETSIZE. 0 or -errno; *out gets the figures either way. */
int fds_raise_limit(struct fds_limit *out);

/* Now on CLOCK_MONOTONIC, in milliseconds: what fds_wait's deadlines are
 * given in. */
int64_t fds_now_ms(void);

/* Waits until fd is ready for events (poll's) or the deadline (fds_now_ms;
 * negative: none) passes. 0 when ready (or hung up: the next read or write
 * says how), -ETIMEDOUT, -EBADF for a descriptor poll refuses, or -errno. For
 * the blocking exchanges of the command-line tools, never the loop. */
int fds_wait(int fd, short events, int64_t deadline_ms);

/* The number of descriptors open in this process (the entries of
 * /proc/self/fd, not counting the one used to list them), or -errno. Costs a
 * directory listing: call it near the limit, not on every event. */
int fds_count_open(void);

/* Whether need more descriptors can be taken while open are in use under
 * limit without eating into reserve. */
static inline int fds_room(uint64_t open, uint64_t need, uint64_t reserve, uint64_t limit)
{
	return open + need + reserve <= limit;
}

/* Closes every descriptor from lowfd up: close_range, or one by one where
 * the kernel lacks it (before 5.9). For a child about to run something of
 * its own, so that nothing of the daemon's stays open in it. */
void fds_close_from(unsigned lowfd);

/* Writes len bytes at data as the file name in the directory dirfd, whole or
 * not at all: a new file ".NAME.tmp.PID" (mode, whatever the umask; not
 * through a link), written, synced and renamed over name (noreplace: never
 * over an existing file, which is -EEXIST), then the directory synced. On
 * failure the temporary file is removed and name is as it was. 0 or -errno
 * (-ENAMETOOLONG when the temporary name does not fit NAME_MAX). */
int fds_write_file(int dirfd, const char *name, const void *data, size_t len, mode_t mode, int noreplace);
/* The same for a path: its directory opened for the call, its last
 * component written there. 0 or -errno (-ENAMETOOLONG beyond PATH_MAX). */
int fds_write_path(const char *path, const void *data, size_t len, mode_t mode, int noreplace);

#endif
