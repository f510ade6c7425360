/* Process memory, threads and descriptors from /proc; see procstat.h.
 *
 * Cost note: reading /proc/PID/status makes the kernel format the whole file
 * (about 1.5 KB), walking no page tables: VmRSS, RssAnon and VmSwap are
 * per-mm counters. tests/bench/proc_poll.c measures a poll. */
#include "dumpwatch/procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dumpwatch/discovery.h"

/* The fields read come before the lines that grow with the machine
 * (Cpus_allowed, Mems_allowed); only a huge Groups line can push them out,
 * and then the sample says which field is missing. */
#define STATUS_READ_MAX 16384

struct procstat {
	pid_t pid;
	int status_fd;
	int fd_dir; /* -1 unless descriptors were asked for */
};

/* Parses the decimal number after "Key:" and blanks, up to the line's end;
 * with kb, the value is in kB ("123 kB"). Returns 1 and sets *out, or 0. */
static int parse_value(const char *p, const char *end, int kb, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (p < end && *p >= '0' && *p <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			return 0;
		v = v * 10 + (uint64_t)(*p - '0');
		p++;
		digits++;
	}
	if (!digits)
		return 0;
	if (kb) {
		while (p < end && *p == ' ')
			p++;
		if (end - p < 2 || p[0] != 'k' || p[1] != 'B')
			return 0;
		if (v > UINT64_MAX / 1024)
			return 0;
		v *= 1024;
	}
	*out = v;
	return 1;
}

unsigned procstat_parse_status(const char *buf, size_t len, struct proc_sample *out)
{
	static const struct {
		const char *key;
		unsigned bit;
		int kb;
		size_t off;
	} fields[] = {
	    {"VmRSS:", PROC_HAVE_RSS, 1, offsetof(struct proc_sample, rss)},
	    {"RssAnon:", PROC_HAVE_ANON, 1, offsetof(struct proc_sample, anon)},
	    {"VmSwap:", PROC_HAVE_SWAP, 1, offsetof(struct proc_sample, swap)},
	    {"Threads:", PROC_HAVE_THREADS, 0, offsetof(struct proc_sample, threads)},
	};
	const char *p = buf, *end = buf + len;
	unsigned have = 0, all = PROC_HAVE_RSS | PROC_HAVE_ANON | PROC_HAVE_SWAP | PROC_HAVE_THREADS;

	while (p < end && have != all) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
			size_t kl = strlen(fields[i].key);
			uint64_t v;
			if ((have & fields[i].bit) || (size_t)(eol - p) < kl || memcmp(p, fields[i].key, kl) != 0)
				continue;
			if (parse_value(p + kl, eol, fields[i].kb, &v)) {
				memcpy((char *)out + fields[i].off, &v, sizeof(v));
				have |= fields[i].bit;
			}
			break;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	out->have = (out->have & ~all) | have;
	return have;
}

int procstat_open(pid_t pid, unsigned long long starttime, int want_fds, struct procstat **ret, char *err,
                  size_t errlen)
{
	struct procstat *ps;
	char path[64];

	*ret = NULL;
	ps = calloc(1, sizeof(*ps));
	if (!ps) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ps->pid = pid;
	ps->fd_dir = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	ps->status_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (ps->status_fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
		free(ps);
		return e == ENOENT ? -ESRCH : -e;
	}
	if (want_fds) {
		snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
		ps->fd_dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (ps->fd_dir < 0) {
			int e = errno;
			snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
			procstat_close(ps);
			return e == ENOENT ? -ESRCH : -e;
		}
	}
	/* Opened by pid: it is the process meant only if that process still
	 * lives now (it held the pid from before the open until now). */
	if (discovery_exited(pid, starttime)) {
		snprintf(err, errlen, "process %d has exited", (int)pid);
		procstat_close(ps);
		return -ESRCH;
	}
	*ret = ps;
	return 0;
}

/* Counts the entries of the descriptor directory (kernels before 6.2). */
static int count_fds(int dirfd, uint64_t *out)
{
	char buf[8192];
	uint64_t n = 0;

	if (lseek(dirfd, 0, SEEK_SET) < 0)
		return -errno;
	for (;;) {
		long got = syscall(SYS_getdents64, dirfd, buf, sizeof(buf));
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		for (long off = 0; off < got;) {
			const struct dirent_view {
				uint64_t d_ino;
				int64_t d_off;
				unsigned short d_reclen;
				unsigned char d_type;
				char d_name[];
			} *d = (const void *)(buf + off);
			if (d->d_reclen == 0)
				break;
			if (d->d_name[0] != '.')
				n++;
			off += d->d_reclen;
		}
	}
	*out = n;
	return 0;
}

int procstat_read(struct procstat *ps, struct proc_sample *out, char *err, size_t errlen)
{
	char buf[STATUS_READ_MAX];
	ssize_t n;

	memset(out, 0, sizeof(*out));
	n = pread(ps->status_fd, buf, sizeof(buf), 0);
	if (n <= 0) {
		int e = n < 0 ? errno : ESRCH;
		/* The process's task is gone: the kept file reads ESRCH (or nothing). */
		if (e == ESRCH) {
			snprintf(err, errlen, "process %d has exited", (int)ps->pid);
			return -ESRCH;
		}
		snprintf(err, errlen, "cannot read /proc/%d/status: %s", (int)ps->pid, strerror(e));
		return -e;
	}
	procstat_parse_status(buf, (size_t)n, out);
	if (ps->fd_dir >= 0) {
		struct stat st;
		int r = 0;
		if (fstat(ps->fd_dir, &st) < 0)
			r = -errno;
		else if (st.st_size > 0)
			out->fds = (uint64_t)st.st_size;
		else
			r = count_fds(ps->fd_dir, &out->fds);
		if (r == 0)
			out->have |= PROC_HAVE_FDS;
		else if (r == -ENOENT || r == -ESRCH) {
			snprintf(err, errlen, "process %d has exited", (int)ps->pid);
			return -ESRCH;
		}
	}
	return 0;
}

int procstat_fds(const struct procstat *ps)
{
	return 1 + (ps->fd_dir >= 0);
}

void procstat_close(struct procstat *ps)
{
	if (!ps)
		return;
	if (ps->status_fd >= 0)
		close(ps->status_fd);
	if (ps->fd_dir >= 0)
		close(ps->fd_dir);
	free(ps);
}
