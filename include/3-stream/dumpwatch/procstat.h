/* Process memory, threads and descriptors read from /proc without the event
 * stream: rss, private memory (anonymous + swap), swap, threads and open
 * descriptors. Built to be polled every few milliseconds: the files are
 * opened once and each poll is one pread of /proc/PID/status plus, when
 * descriptors are asked for, one fstat of /proc/PID/fd (its size is the
 * number of open descriptors since Linux 6.2; older kernels are counted with
 * getdents64). The parser is pure and takes the file's bytes. */
#ifndef DUMPWATCH_PROCSTAT_H
#define DUMPWATCH_PROCSTAT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROC_HAVE_RSS 0x1u
#define PROC_HAVE_ANON 0x2u
#define PROC_HAVE_SWAP 0x4u
#define PROC_HAVE_THREADS 0x8u
#define PROC_HAVE_FDS 0x10u

struct proc_sample {
	uint64_t rss;     /* VmRSS, bytes */
	uint64_t anon;    /* RssAnon, bytes */
	uint64_t swap;    /* VmSwap, bytes */
	uint64_t threads; /* Threads */
	uint64_t fds;     /* open descriptors */
	unsigned have;    /* PROC_HAVE_* of the fields read */
};

/* Parses the text of /proc/PID/status (len bytes, not NUL-terminated) into
 * out: the fields VmRSS, RssAnon, VmSwap (kB) and Threads, each taken only
 * from the start of a line and only once. The kernel escapes newlines in the
 * process's name (the one field a process chooses), so a name cannot forge a
 * line. Returns the PROC_HAVE_* mask of what was found. */
unsigned procstat_parse_status(const char *buf, size_t len, struct proc_sample *out);

struct procstat;

/* Opens the files of process (pid, starttime) to poll; with want_fds also
 * its descriptor directory. Checked after opening that the process is still
 * the one meant, so a pid reused in between is refused. Returns 0 with
 * *ret set, or -errno with a sentence in err (-ESRCH: it has exited). */
int procstat_open(pid_t pid, unsigned long long starttime, int want_fds, struct procstat **ret, char *err,
                  size_t errlen);

/* Reads one sample. Returns 0, -ESRCH when the process has exited, or
 * another -errno with a sentence in err. */
int procstat_read(struct procstat *ps, struct proc_sample *out, char *err, size_t errlen);

/* Descriptors it holds (1 or 2). */
int procstat_fds(const struct procstat *ps);

/* Closes the files; NULL is a no-op. */
void procstat_close(struct procstat *ps);

#endif
