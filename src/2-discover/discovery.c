/* Finding .NET processes and their diagnostics sockets (PROTOCOL.md section 1),
 * and the `dumpwatch ps` listing.
 *
 * A runtime listens on ${TMPDIR:-/tmp}/dotnet-diagnostic-{pid}-{key}-socket,
 * where TMPDIR, pid and the path are as the process itself sees them. So for
 * a host pid we read its environment (TMPDIR), the last NSpid field of its
 * status (its pid inside its own pid namespace), and when its mount namespace
 * differs from ours we look through /proc/{pid}/root. The key is the
 * process's start time (field 22 of /proc/{pid}/stat); a socket whose key
 * equals it is certainly the live one, otherwise the newest socket wins, as
 * in the official client (a left-over socket of an earlier process with the
 * same pid is older).
 *
 * Anyone can create files in /tmp, so a name proves nothing: a candidate must
 * be a socket owned by the process's uid (a file of that owner can only be
 * made by that user or root), and the name the runtime uses is looked up
 * directly, so that a directory holding thousands of planted names costs one
 * stat per process; the directory is listed only when that name is missing,
 * and then without a stat per entry. */
#include "dumpwatch/discovery.h"

#include "dumpwatch/text.h"

#include "discovery_shared.h"
#include "dumpwatch/ipc.h"
#include "dumpwatch/jsonl.h"
#include "dumpwatch/log.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SOCK_PREFIX "dotnet-diagnostic-"
#define SOCK_SUFFIX "-socket"
/* Upper bound of matching names kept per directory listing (16 bytes each,
 * 4 MiB at most): a user who fills /tmp with fake names must not make us
 * allocate without limit. The name a runtime uses is looked up directly, so
 * the limit only bounds the search for other names. */
#define DIR_MAX_ENTRIES 262144
/* /proc/{pid}/environ is bounded by ARG_MAX-like limits; read no more. */
#define ENVIRON_MAX (4u << 20)
#define CMDLINE_MAX (64u << 10)
#define PS_TIMEOUT_MS 1000
#define PS_COMMAND_MAX 120

/* --- pure helpers --- */

/* Parses "dotnet-diagnostic-{pid}-{key}-socket": 1 with both numbers, else 0. */
static int parse_socket_name(const char *name, unsigned long long *ret_pid, unsigned long long *ret_key)
{
	const char *p = name;
	unsigned long long v[2] = {0, 0};

	if (strncmp(p, SOCK_PREFIX, strlen(SOCK_PREFIX)) != 0)
		return 0;
	p += strlen(SOCK_PREFIX);
	for (int i = 0; i < 2; i++) {
		const char *start = p;

		while (isdigit((unsigned char)*p)) {
			unsigned d = (unsigned)(*p - '0');

			if (v[i] > (ULLONG_MAX - d) / 10)
				return 0;
			v[i] = v[i] * 10 + d;
			p++;
		}
		if (p == start)
			return 0;
		if (i == 0) {
			if (*p != '-')
				return 0;
			p++;
		}
	}
	if (strcmp(p, SOCK_SUFFIX) != 0)
		return 0;
	*ret_pid = v[0];
	*ret_key = v[1];
	return 1;
}

int dn_socket_name_match(const char *name, pid_t nspid, unsigned long long *ret_key)
{
	unsigned long long pid, key;

	if (!name || nspid <= 0 || !parse_socket_name(name, &pid, &key) || pid != (unsigned long long)nspid)
		return 0;
	if (ret_key)
		*ret_key = key;
	return 1;
}

/* Reads a decimal number at *pp (before end) into *ret, advancing *pp past
 * it. -EINVAL when there is no digit or it overflows. */
static int read_ull(const char **pp, const char *end, unsigned long long *ret)
{
	const char *p = *pp;
	unsigned long long v = 0;

	if (p >= end || !isdigit((unsigned char)*p))
		return -EINVAL;
	while (p < end && isdigit((unsigned char)*p)) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (ULLONG_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
		p++;
	}
	*pp = p;
	*ret = v;
	return 0;
}

int dn_parse_stat(const char *buf, size_t len, char *comm, size_t commlen, unsigned long long *ret_starttime)
{
	const char *open = memchr(buf, '(', len), *close = NULL, *p, *end = buf + len;
	unsigned long long v = 0;
	int field;

	/* comm may hold anything, ')' and spaces included: fields resume after
	 * the last ')' (proc(5)). */
	for (p = buf; p < end; p++)
		if (*p == ')')
			close = p;
	if (!open || !close || close < open)
		return -EINVAL;
	if (comm && commlen) {
		size_t n = (size_t)(close - open - 1);

		if (n >= commlen)
			n = commlen - 1;
		memcpy(comm, open + 1, n);
		comm[n] = '\0';
	}
	/* After ") " comes field 3 (state); field 22 is starttime. */
	p = close + 1;
	for (field = 3; field <= 22; field++) {
		while (p < end && *p == ' ')
			p++;
		if (p >= end)
			return -EINVAL;
		if (field == 22) {
			if (read_ull(&p, end, &v) < 0)
				return -EINVAL;
			break;
		}
		while (p < end && *p != ' ')
			p++;
	}
	if (ret_starttime)
		*ret_starttime = v;
	return 0;
}

/* The line of buf (length len) starting with key, or NULL; *ret_end gets its end. */
static const char *find_line(const char *buf, size_t len, const char *key, const char **ret_end)
{
	const char *p = buf, *end = buf + len;
	size_t klen = strlen(key);

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		if ((size_t)(le - p) >= klen && memcmp(p, key, klen) == 0) {
			*ret_end = le;
			return p + klen;
		}
		p = le + 1;
	}
	return NULL;
}

/* Reads the unsigned numbers of a status line, keeping the first and last. */
static int line_numbers(const char *p, const char *end, unsigned long long *ret_first, unsigned long long *ret_last)
{
	int n = 0;

	while (p < end) {
		unsigned long long v = 0;

		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p >= end)
			break;
		if (read_ull(&p, end, &v) < 0)
			return -EINVAL;
		if (n++ == 0)
			*ret_first = v;
		*ret_last = v;
	}
	return n > 0 ? 0 : -EINVAL;
}

int dn_parse_status(const char *buf, size_t len, pid_t fallback_pid, uid_t *ret_uid, gid_t *ret_gid, pid_t *ret_nspid)
{
	const char *p, *end;
	unsigned long long first, last;

	if (!(p = find_line(buf, len, "Uid:", &end)) || line_numbers(p, end, &first, &last) < 0 || first > UINT32_MAX)
		return -EINVAL;
	*ret_uid = (uid_t)first;
	if (!(p = find_line(buf, len, "Gid:", &end)) || line_numbers(p, end, &first, &last) < 0 || first > UINT32_MAX)
		return -EINVAL;
	*ret_gid = (gid_t)first;
	*ret_nspid = fallback_pid;
	if ((p = find_line(buf, len, "NSpid:", &end))) {
		if (line_numbers(p, end, &first, &last) < 0 || last == 0 || last > INT32_MAX)
			return -EINVAL;
		*ret_nspid = (pid_t)last;
	}
	return 0;
}

int dn_environ_get(const char *env, size_t len, const char *name, char *out, size_t outlen)
{
	size_t nlen = strlen(name), i = 0;

	while (i < len) {
		const char *e = env + i;
		const char *nul = memchr(e, '\0', len - i);
		size_t elen = nul ? (size_t)(nul - e) : len - i;

		if (elen > nlen && memcmp(e, name, nlen) == 0 && e[nlen] == '=') {
			size_t vlen = elen - nlen - 1;

			if (vlen >= outlen)
				return -ENAMETOOLONG;
			memcpy(out, e + nlen + 1, vlen);
			out[vlen] = '\0';
			return 0;
		}
		i += elen + 1;
	}
	return -ENOENT;
}

/* Work counters, for discovery_get_stats. */
static struct dn_stats stats;

void discovery_get_stats(struct dn_stats *out)
{
	if (out)
		*out = stats;
}

/* The diagnostics socket names of one directory, as numbers, sorted by
 * (pid, key). Nothing is stat'ed while listing: anyone can fill /tmp with
 * tens of thousands of names, and only the names of the processes looked up
 * are checked (sock_check). Only names as a runtime writes them (decimal,
 * no leading zeros) are kept, so that a name can be rebuilt from its numbers. */
struct sock_name {
	unsigned long long pid, key;
};

struct dir_listing {
	char dir[DISCOVERY_SOCK_MAX];
	int scanned;
	int err; /* 0, or -errno from opening it */
	struct sock_name *e;
	size_t n, cap;
};

static void listing_free(struct dir_listing *l)
{
	free(l->e);
	l->e = NULL;
	l->n = l->cap = 0;
	l->scanned = 0;
}

static int cmp_sock_name(const void *a, const void *b)
{
	const struct sock_name *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->key > y->key) - (x->key < y->key);
}

static void sock_name_format(char *out, size_t outlen, unsigned long long pid, unsigned long long key)
{
	snprintf(out, outlen, SOCK_PREFIX "%llu-%llu" SOCK_SUFFIX, pid, key);
}

/* Lists the socket names in l->dir (once; later calls return the first
 * result). */
static int listing_scan(struct dir_listing *l)
{
	DIR *d;
	struct dirent *de;

	if (l->scanned)
		return l->err;
	l->scanned = 1;
	l->n = 0;
	stats.listings++;
	d = opendir(l->dir);
	if (!d)
		return l->err = -errno;
	while ((de = readdir(d)) != NULL) {
		struct sock_name s;
		char canon[80];

		/* d_type spares a stat where the file system fills it in. */
		if (de->d_type != DT_SOCK && de->d_type != DT_UNKNOWN)
			continue;
		if (!parse_socket_name(de->d_name, &s.pid, &s.key))
			continue;
		sock_name_format(canon, sizeof(canon), s.pid, s.key);
		if (strcmp(canon, de->d_name) != 0)
			continue;
		if (l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 64;
			struct sock_name *e;

			if (l->n >= DIR_MAX_ENTRIES)
				break;
			e = realloc(l->e, cap * sizeof(*e));
			if (!e) {
				closedir(d);
				return l->err = -ENOMEM;
			}
			l->e = e;
			l->cap = cap;
		}
		l->e[l->n++] = s;
	}
	closedir(d);
	stats.listed_names += l->n;
	if (l->n > 1)
		qsort(l->e, l->n, sizeof(*l->e), cmp_sock_name);
	return l->err = 0;
}

static int ts_cmp(struct timespec a, struct timespec b)
{
	if (a.tv_sec != b.tv_sec)
		return a.tv_sec < b.tv_sec ? -1 : 1;
	if (a.tv_nsec != b.tv_nsec)
		return a.tv_nsec < b.tv_nsec ? -1 : 1;
	return 0;
}

/* When a process with this starttime (clock ticks after boot, field 22 of
 * /proc/pid/stat) started, in seconds since the epoch; 0 when unknown. */
static time_t start_wall(unsigned long long starttime)
{
	static time_t btime;
	long hz = sysconf(_SC_CLK_TCK);

	if (!btime) {
		char line[256];
		FILE *f = fopen("/proc/stat", "re");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "btime %ld", &btime) == 1)
				break;
		if (f)
			fclose(f);
	}
	if (!btime || hz <= 0 || !starttime)
		return 0;
	return btime + (time_t)(starttime / (unsigned long long)hz);
}

/* One process's socket being looked for in its socket directory. */
struct lookup {
	const char *dir; /* as reachable from here */
	pid_t nspid;
	unsigned long long starttime;
	time_t started; /* start_wall(starttime) */
	uid_t uid;
	const struct dn_find_opts *o; /* skip list, hints; may be NULL */
	int dir_err;                  /* -EACCES when the directory cannot be searched */
	/* The socket found: */
	char name[128];
	struct dn_sock_id id;
	struct timespec mtime;
	unsigned long long key;
	/* The first socket under its name that another uid owns: */
	char foreign[DISCOVERY_SOCK_MAX];
	uid_t foreign_uid;
};

enum sock_verdict { SOCK_NONE, SOCK_OK, SOCK_FOREIGN, SOCK_STALE, SOCK_SKIPPED };

static int join_path(char *out, size_t outlen, const char *dir, const char *name)
{
	int n = snprintf(out, outlen, "%s/%s", strcmp(dir, "/") ? dir : "", name);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/* Whether the file name in lk->dir may be lk's process's socket: a socket
 * (not a link to one), owned by the process's uid (only that user or root
 * can make a socket file of that owner: a name planted by another user is
 * never taken), not known to be served by someone else, and, unless its key
 * is the process's start time, not made before the process started (a stale
 * one of an earlier process with the same pid). */
static enum sock_verdict sock_check(struct lookup *lk, const char *name, int exact, struct stat *st)
{
	char path[DISCOVERY_SOCK_MAX + 128];

	if (join_path(path, sizeof(path), lk->dir, name) < 0)
		return SOCK_NONE;
	stats.lookups++;
	if (lstat(path, st) < 0) {
		if (errno == EACCES || errno == EPERM)
			lk->dir_err = -EACCES;
		return SOCK_NONE;
	}
	if (!S_ISSOCK(st->st_mode))
		return SOCK_NONE;
	if (st->st_uid != lk->uid) {
		if (!lk->foreign[0] && strlen(path) < sizeof(lk->foreign)) {
			strcpy(lk->foreign, path);
			lk->foreign_uid = st->st_uid;
		}
		return SOCK_FOREIGN;
	}
	for (size_t i = 0; lk->o && i < lk->o->n_skip; i++)
		if (lk->o->skip[i].dev == st->st_dev && lk->o->skip[i].ino == st->st_ino)
			return SOCK_SKIPPED;
	if (!exact && lk->started && st->st_mtim.tv_sec + 2 < lk->started)
		return SOCK_STALE;
	return SOCK_OK;
}

static void lookup_take(struct lookup *lk, const char *name, unsigned long long key, const struct stat *st)
{
	snprintf(lk->name, sizeof(lk->name), "%s", name);
	lk->id.dev = st->st_dev;
	lk->id.ino = st->st_ino;
	lk->mtime = st->st_mtim;
	lk->key = key;
}

/* Whether the candidate (st, key) is newer than lk's current one: later
 * mtime, on a tie the larger key (the later start). */
static int newer(const struct lookup *lk, const struct stat *st, unsigned long long key)
{
	int c = ts_cmp(st->st_mtim, lk->mtime);
	return c > 0 || (c == 0 && key > lk->key);
}

/* Finds lk's socket: the name its runtime uses ({nspid}-{starttime}) first,
 * then the newest of the hints (names just seen created) and, with a
 * listing, of every other socket of its pid. The listing is read only when
 * the first two fail. 0 with lk->name set, or -ENOENT. */
static int lookup_run(struct lookup *lk, struct dir_listing *l)
{
	struct stat st;
	char name[80];
	unsigned long long hpid, hkey;
	int found = 0;

	lk->name[0] = '\0';
	if (lk->nspid <= 0)
		return -ENOENT;
	if (lk->starttime) {
		sock_name_format(name, sizeof(name), (unsigned long long)lk->nspid, lk->starttime);
		if (sock_check(lk, name, 1, &st) == SOCK_OK) {
			lookup_take(lk, name, lk->starttime, &st);
			return 0;
		}
	}
	for (size_t i = 0; lk->o && i < lk->o->n_hints; i++) {
		const char *h = lk->o->hints[i];
		if (!h || !parse_socket_name(h, &hpid, &hkey) || hpid != (unsigned long long)lk->nspid ||
		    hkey == lk->starttime || strlen(h) >= sizeof(name))
			continue;
		sock_name_format(name, sizeof(name), hpid, hkey);
		if (strcmp(name, h) == 0 && sock_check(lk, name, 0, &st) == SOCK_OK &&
		    (!found || newer(lk, &st, hkey))) {
			lookup_take(lk, name, hkey, &st);
			found = 1;
		}
	}
	if (!l || listing_scan(l) < 0)
		return found ? 0 : -ENOENT;
	/* The names of nspid: a run in the sorted listing. */
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->e[mid].pid < (unsigned long long)lk->nspid)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < l->n && l->e[i].pid == (unsigned long long)lk->nspid; i++) {
		const struct sock_name *s = &l->e[i];

		if (s->key == lk->starttime || (found && s->key == lk->key))
			continue;
		sock_name_format(name, sizeof(name), s->pid, s->key);
		if (sock_check(lk, name, 0, &st) != SOCK_OK)
			continue;
		if (!found || newer(lk, &st, s->key)) {
			lookup_take(lk, name, s->key, &st);
			found = 1;
		}
	}
	return found ? 0 : -ENOENT;
}

int dn_find_socket_in_dir(const char *dir, pid_t nspid, unsigned long long starttime, uid_t uid, struct dn_find_opts *o,
                          char *out, size_t outlen)
{
	struct dir_listing l = {0};
	struct lookup lk = {.dir = dir, .nspid = nspid, .starttime = starttime, .uid = uid, .o = o};
	struct stat st;
	int r;

	if (snprintf(l.dir, sizeof(l.dir), "%s", dir) >= (int)sizeof(l.dir))
		return -ENAMETOOLONG;
	if (stat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	lk.started = start_wall(starttime);
	r = lookup_run(&lk, o && o->exact_only ? NULL : &l);
	if (o) {
		snprintf(o->foreign, sizeof(o->foreign), "%s", lk.foreign);
		o->foreign_uid = lk.foreign_uid;
	}
	if (r == 0)
		r = snprintf(out, outlen, "%s", lk.name) >= (int)outlen ? -ENAMETOOLONG : 0;
	listing_free(&l);
	return r;
}

/* Copies the base name of path[0..len) without ".dll"/".exe" into out. */
static void base_without_ext(const char *path, size_t len, char *out, size_t outlen)
{
	const char *b = path;

	for (size_t i = 0; i < len; i++)
		if (path[i] == '/' || path[i] == '\\')
			b = path + i + 1;
	len -= (size_t)(b - path);
	if ((text_ends_with(b, len, ".dll", 1) || text_ends_with(b, len, ".exe", 1)) && len > 4)
		len -= 4;
	snprintf(out, outlen, "%.*s", (int)(len > INT32_MAX ? INT32_MAX : len), b);
}

void dn_process_name(const char *entry_assembly, const char *exe_name, const char *cmdline, size_t cmdline_len,
                     const char *comm, char *out, size_t outlen)
{
	if (!out || !outlen)
		return;
	if (entry_assembly && entry_assembly[0]) {
		base_without_ext(entry_assembly, strlen(entry_assembly), out, outlen);
		return;
	}
	if (exe_name && (strcmp(exe_name, "dotnet") == 0 || strcmp(exe_name, "dotnet.exe") == 0)) {
		/* "dotnet [host options] app.dll args": the first *.dll after argv[0]. */
		size_t i = 0;
		int arg = 0;

		while (cmdline && i < cmdline_len) {
			const char *a = cmdline + i;
			const char *nul = memchr(a, '\0', cmdline_len - i);
			size_t alen = nul ? (size_t)(nul - a) : cmdline_len - i;

			if (arg++ > 0 && text_ends_with(a, alen, ".dll", 1) && alen > 4) {
				base_without_ext(a, alen, out, outlen);
				return;
			}
			i += alen + 1;
		}
	}
	if (exe_name && exe_name[0])
		snprintf(out, outlen, "%s", exe_name);
	else if (comm && comm[0])
		snprintf(out, outlen, "%s", comm);
	else
		snprintf(out, outlen, "?");
}

void dn_truncate(char *s, size_t max_chars)
{
	size_t chars = 0, i, cut = 0, keep = max_chars > 3 ? max_chars - 3 : max_chars;

	for (i = 0; s[i]; i++) {
		if (((unsigned char)s[i] & 0xC0) == 0x80)
			continue;
		if (chars == keep)
			cut = i;
		chars++;
	}
	if (chars <= max_chars)
		return;
	if (max_chars > 3)
		strcpy(s + cut, "...");
	else
		s[cut] = '\0';
}

/* Copies src into dst (size n), cut on a UTF-8 character boundary. */
static void copy_str(char *dst, size_t n, const char *src)
{
	size_t len = strlen(src);

	if (n == 0)
		return;
	if (len >= n) {
		len = n - 1;
		while (len > 0 && ((unsigned char)src[len] & 0xC0) == 0x80)
			len--;
	}
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* --- reading /proc --- */

/* Reads up to cap bytes of path into buf. Returns the count or -errno. */
static ssize_t read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	size_t got = 0;

	if (fd < 0)
		return -errno;
	while (got < cap) {
		ssize_t k = read(fd, buf + got, cap - got);

		if (k < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			close(fd);
			return -e;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	return (ssize_t)got;
}

/* Reads a whole file into a malloc'd buffer, at most cap bytes. */
static ssize_t read_file_alloc(const char *path, size_t cap, char **ret)
{
	size_t size = 4096;
	char *buf = NULL;
	ssize_t n;

	*ret = NULL;
	for (;;) {
		char *b = realloc(buf, size);

		if (!b) {
			free(buf);
			return -ENOMEM;
		}
		buf = b;
		n = read_file(path, buf, size);
		if (n < 0) {
			free(buf);
			return n;
		}
		if ((size_t)n < size || size >= cap)
			break;
		size *= 2;
		if (size > cap)
			size = cap;
	}
	*ret = buf;
	return n;
}

static int proc_errno(ssize_t r)
{
	return r == -ENOENT || r == -ESRCH ? -ESRCH : (int)r;
}

int discovery_cmdline(pid_t pid, char *out, size_t outlen)
{
	char path[64];
	ssize_t n;

	if (!out || outlen == 0)
		return -EINVAL;
	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = read_file(path, out, outlen - 1);
	if (n < 0)
		return proc_errno(n);
	out[n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if (out[i] == '\0' || out[i] == '\n')
			out[i] = ' ';
	while (n > 0 && out[n - 1] == ' ')
		out[--n] = '\0';
	return 0;
}

/* Everything about pid except its socket: ids, names, and the directory its
 * runtime puts the socket in (as seen from here) plus that directory as the
 * process sees it (for messages). */
struct probe {
	unsigned long long starttime;
	char dir[DISCOVERY_SOCK_MAX];
	char tmpdir[DISCOVERY_SOCK_MAX];
};

static int same_ns(pid_t pid, const char *kind)
{
	char a[64], b[64], self[64], other[64];
	ssize_t na, nb;

	snprintf(self, sizeof(self), "/proc/self/ns/%s", kind);
	snprintf(other, sizeof(other), "/proc/%d/ns/%s", (int)pid, kind);
	na = readlink(self, a, sizeof(a));
	nb = readlink(other, b, sizeof(b));
	/* Unreadable (another user's process, no privilege): assume ours. */
	if (na < 0 || nb < 0)
		return 1;
	return na == nb && memcmp(a, b, (size_t)na) == 0;
}

static int probe_pid(pid_t pid, struct dn_target *t, struct probe *pr, char *err, size_t errlen)
{
	char path[64], buf[4096], *env = NULL;
	ssize_t n;
	int r;

	memset(t, 0, sizeof(*t));
	memset(pr, 0, sizeof(*pr));
	t->pid = pid;
	stats.probes++;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = read_file(path, buf, sizeof(buf) - 1);
	if (n < 0 || pid <= 0) {
		r = pid <= 0 ? -ESRCH : proc_errno(n);
		if (r == -ESRCH)
			snprintf(err, errlen, "no process with pid %d", (int)pid);
		else
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(-r));
		return r;
	}
	if (dn_parse_stat(buf, (size_t)n, t->comm, sizeof(t->comm), &pr->starttime) < 0) {
		snprintf(err, errlen, "cannot parse %s", path);
		return -EINVAL;
	}
	t->starttime = pr->starttime;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	n = read_file(path, buf, sizeof(buf) - 1);
	if (n < 0) {
		r = proc_errno(n);
		snprintf(err, errlen, r == -ESRCH ? "no process with pid %d" : "cannot read /proc/%d/status", (int)pid);
		return r;
	}
	if (dn_parse_status(buf, (size_t)n, pid, &t->uid, &t->gid, &t->nspid) < 0) {
		snprintf(err, errlen, "cannot parse %s", path);
		return -EINVAL;
	}

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n > 0) {
		char *b;

		buf[n] = '\0';
		if (n > 10 && strcmp(buf + n - 10, " (deleted)") == 0)
			buf[n - 10] = '\0';
		b = strrchr(buf, '/');
		copy_str(t->exe_name, sizeof(t->exe_name), b ? b + 1 : buf);
	}

	/* TMPDIR as the runtime saw it at start-up. */
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	n = read_file_alloc(path, ENVIRON_MAX, &env);
	if (n < 0) {
		r = proc_errno(n);
		if (r == -EACCES || r == -EPERM)
			snprintf(err, errlen,
			         "cannot read the environment of process %d (%s, uid %u): permission denied; run "
			         "dumpwatch as root (with CAP_SYS_PTRACE) or as the process's user",
			         (int)pid, t->comm, (unsigned)t->uid);
		else if (r == -ESRCH)
			snprintf(err, errlen, "no process with pid %d", (int)pid);
		else
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(-r));
		return r == -EPERM ? -EACCES : r;
	}
	r = dn_environ_get(env, (size_t)n, "TMPDIR", pr->tmpdir, sizeof(pr->tmpdir));
	free(env);
	if (r < 0 || !pr->tmpdir[0])
		snprintf(pr->tmpdir, sizeof(pr->tmpdir), "/tmp");
	for (size_t k = strlen(pr->tmpdir); k > 1 && pr->tmpdir[k - 1] == '/'; k--)
		pr->tmpdir[k - 1] = '\0';
	memcpy(t->tmpdir, pr->tmpdir, sizeof(t->tmpdir));

	t->other_mount_ns = !same_ns(pid, "mnt");
	if (pr->tmpdir[0] != '/')
		r = snprintf(pr->dir, sizeof(pr->dir), "/proc/%d/cwd/%s", (int)pid, pr->tmpdir);
	else if (t->other_mount_ns)
		r = snprintf(pr->dir, sizeof(pr->dir), "/proc/%d/root%s", (int)pid, pr->tmpdir);
	else
		r = snprintf(pr->dir, sizeof(pr->dir), "%s", pr->tmpdir);
	if (r < 0 || (size_t)r >= sizeof(pr->dir)) {
		snprintf(err, errlen, "the TMPDIR of process %d is too long", (int)pid);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* Finds t's socket in pr->dir (reading the listing l only when the name its
 * runtime uses is not there; l NULL: never) and fills t->socket_path and
 * t->sock. On -ENOENT, o->foreign names a socket under its name that another
 * uid owns, if one was skipped. */
static int find_socket(struct dn_target *t, const struct probe *pr, struct dn_find_opts *o, struct dir_listing *l,
                       char *err, size_t errlen)
{
	struct lookup lk = {.dir = pr->dir, .nspid = t->nspid, .starttime = pr->starttime, .uid = t->uid, .o = o};
	char name[256];
	int r;

	lk.started = start_wall(pr->starttime);
	r = lookup_run(&lk, l);
	if (o) {
		snprintf(o->foreign, sizeof(o->foreign), "%s", lk.foreign);
		o->foreign_uid = lk.foreign_uid;
	}
	if (r < 0 && (lk.dir_err == -EACCES || (l && (l->err == -EACCES || l->err == -EPERM)))) {
		snprintf(err, errlen,
		         "cannot read %s to find the diagnostics socket of process %d: permission denied; run "
		         "dumpwatch as root or as the process's user (uid %u)",
		         pr->dir, (int)t->pid, (unsigned)t->uid);
		return -EACCES;
	}
	if (r < 0) {
		char foreign[DISCOVERY_SOCK_MAX + 160] = "";

		if (lk.foreign[0]) {
			foreign[0] = ';';
			foreign[1] = ' ';
			discovery_describe_foreign(t, lk.foreign, lk.foreign_uid, foreign + 2, sizeof(foreign) - 2);
		}
		dn_process_name(NULL, t->exe_name, NULL, 0, t->comm, name, sizeof(name));
		snprintf(err, errlen,
		         "process %d (%s) has no .NET diagnostics socket in %s%s: it is not a .NET process, or it "
		         "runs with DOTNET_EnableDiagnostics=0%s",
		         (int)t->pid, name, pr->tmpdir, t->other_mount_ns ? " (in its mount namespace)" : "", foreign);
		return -ENOENT;
	}
	if (join_path(t->socket_path, sizeof(t->socket_path), pr->dir, lk.name) < 0) {
		snprintf(err, errlen, "the socket path of process %d is too long", (int)t->pid);
		return -ENAMETOOLONG;
	}
	t->sock = lk.id;
	return 0;
}

void discovery_describe_foreign(const struct dn_target *t, const char *path, uid_t owner, char *out, size_t outlen)
{
	if (!out || !outlen)
		return;
	snprintf(out, outlen,
	         "ignoring %s: that socket belongs to uid %u, not to uid %u of process %d (planted by another user?)",
	         path, (unsigned)owner, (unsigned)t->uid, (int)t->pid);
}

int discovery_find_ex(pid_t pid, struct dn_find_opts *o, struct dn_target *out, char *err, size_t errlen)
{
	struct dir_listing l = {0};
	struct probe pr;
	char dummy[1];
	int r;

	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	if (o) {
		o->foreign[0] = '\0';
		o->foreign_uid = 0;
	}
	if (!out)
		return -EINVAL;
	r = probe_pid(pid, out, &pr, err, errlen);
	if (r < 0)
		return r;
	snprintf(l.dir, sizeof(l.dir), "%s", pr.dir);
	r = find_socket(out, &pr, o, o && o->exact_only ? NULL : &l, err, errlen);
	listing_free(&l);
	return r;
}

int discovery_find(pid_t pid, struct dn_target *out, char *err, size_t errlen)
{
	return discovery_find_ex(pid, NULL, out, err, errlen);
}

int discovery_starttime(pid_t pid, unsigned long long *ret)
{
	char path[64], buf[1024];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = read_file(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return proc_errno(n);
	return dn_parse_stat(buf, (size_t)n, NULL, 0, ret);
}

int discovery_socket_dir(pid_t pid, char *out, size_t outlen)
{
	struct dn_target t;
	struct probe pr;
	char err[8];
	int r = probe_pid(pid, &t, &pr, err, sizeof(err));

	if (r < 0)
		return r;
	if (snprintf(out, outlen, "%s", pr.dir) >= (int)outlen)
		return -ENAMETOOLONG;
	return 0;
}

int discovery_is_socket_name(const char *name)
{
	unsigned long long pid, key;
	return name && parse_socket_name(name, &pid, &key) == 1;
}

int discovery_parse_socket_name(const char *name, pid_t *ret_pid, unsigned long long *ret_key)
{
	unsigned long long pid, key;

	if (!name || !parse_socket_name(name, &pid, &key) || pid == 0 || pid > INT32_MAX)
		return 0;
	if (ret_pid)
		*ret_pid = (pid_t)pid;
	if (ret_key)
		*ret_key = key;
	return 1;
}

static int cmp_target(const void *a, const void *b)
{
	const struct dn_target *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

int discovery_list_ex(discovery_foreign_fn foreign, void *ctx, struct dn_target **ret, size_t *ret_n)
{
	struct dir_listing *dirs = NULL;
	struct dn_target *v = NULL;
	size_t n = 0, cap = 0, ndirs = 0;
	DIR *proc;
	struct dirent *de;
	int r = 0;

	if (!ret || !ret_n)
		return -EINVAL;
	*ret = NULL;
	*ret_n = 0;
	proc = opendir("/proc");
	if (!proc)
		return -errno;
	while ((de = readdir(proc)) != NULL) {
		struct dn_target t;
		struct dn_find_opts o = {0};
		struct probe pr;
		struct dir_listing *l = NULL;
		char err[8];
		char *end;
		long pid;

		errno = 0;
		pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || pid > INT32_MAX || errno)
			continue;
		if (probe_pid((pid_t)pid, &t, &pr, err, sizeof(err)) < 0)
			continue;
		/* Most processes share /tmp: list each directory once, and
		 * only when some process's own name is not there. */
		for (size_t i = 0; i < ndirs; i++)
			if (strcmp(dirs[i].dir, pr.dir) == 0)
				l = &dirs[i];
		if (!l) {
			struct dir_listing *d = realloc(dirs, (ndirs + 1) * sizeof(*d));

			if (!d) {
				r = -ENOMEM;
				break;
			}
			dirs = d;
			l = &dirs[ndirs++];
			memset(l, 0, sizeof(*l));
			snprintf(l->dir, sizeof(l->dir), "%s", pr.dir);
		}
		if (find_socket(&t, &pr, &o, l, err, sizeof(err)) < 0) {
			if (o.foreign[0] && foreign)
				foreign(ctx, &t, o.foreign, o.foreign_uid);
			continue;
		}
		if (n == cap) {
			size_t c = cap ? cap * 2 : 16;
			struct dn_target *nv = realloc(v, c * sizeof(*nv));

			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
			cap = c;
		}
		v[n++] = t;
	}
	closedir(proc);
	for (size_t i = 0; i < ndirs; i++)
		listing_free(&dirs[i]);
	free(dirs);
	if (r < 0) {
		free(v);
		return r;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_target);
	*ret = v;
	*ret_n = n;
	return 0;
}

int discovery_list(struct dn_target **ret, size_t *ret_n)
{
	return discovery_list_ex(NULL, NULL, ret, ret_n);
}

void discovery_process_name(const struct dn_target *t, const char *entry_assembly, char *out, size_t outlen)
{
	char *cmdline = NULL;
	ssize_t n = 0;

	if (!out || !outlen)
		return;
	if (!t) {
		dn_process_name(entry_assembly, NULL, NULL, 0, NULL, out, outlen);
		return;
	}
	if ((!entry_assembly || !entry_assembly[0]) &&
	    (strcmp(t->exe_name, "dotnet") == 0 || strcmp(t->exe_name, "dotnet.exe") == 0)) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)t->pid);
		n = read_file_alloc(path, CMDLINE_MAX, &cmdline);
		if (n < 0)
			n = 0;
	}
	dn_process_name(entry_assembly, t->exe_name, cmdline, (size_t)n, t->comm, out, outlen);
	free(cmdline);
}

/* The width left for COMMAND: the terminal's when out is one, else a fixed cap. */
static size_t command_width(FILE *out, size_t used)
{
	struct winsize ws;
	int fd = fileno(out);

	if (fd >= 0 && isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col > used + 10 ? ws.ws_col - used : 10;
	return PS_COMMAND_MAX;
}

/* ps: a process left out because the socket under its name is another
 * user's. */
static void ps_foreign(void *ctx, const struct dn_target *t, const char *path, uid_t owner)
{
	char line[DISCOVERY_SOCK_MAX + 160];
	(void)ctx;

	discovery_describe_foreign(t, path, owner, line, sizeof(line));
	log_warn("pid %d: %s", (int)t->pid, line);
}

/* A `ps` column: s escaped (text_escape), then cut to max_chars characters. */
static void ps_field(const char *s, size_t max_chars, char *out, size_t outlen)
{
	text_escape_str(s, out, outlen);
	dn_truncate(out, max_chars);
}

/* A string member, or null for an empty string. */
static struct json_object *ps_json_string(int ok, const char *s)
{
	return ok && s[0] ? json_object_new_string(s) : NULL;
}

int discovery_print_ps(FILE *out, int json)
{
	struct dn_target *v = NULL;
	struct ipc_process_info *pi;
	size_t n = 0;
	int r;

	if (!out)
		return -EINVAL;
	r = discovery_list_ex(ps_foreign, NULL, &v, &n);
	if (r < 0)
		return r;
	pi = malloc(sizeof(*pi));
	if (!pi) {
		free(v);
		return -ENOMEM;
	}
	if (!json)
		fprintf(out, "%-7s %-20s %-10s %-20s %s\n", "PID", "NAME", "RUNTIME", "ENTRY", "COMMAND");
	for (size_t i = 0; i < n; i++) {
		const struct dn_target *t = &v[i];
		const struct ipc_endpoint ep = discovery_endpoint(t);
		char err[256], name[256], cmd[4096];
		/* A runtime that does not answer in time is still listed; a
		 * socket someone else serves under its name is not a runtime. */
		int rc = ipc_process_info(&ep, PS_TIMEOUT_MS, pi, err, sizeof(err)), ok = rc == 0;
		if (rc == -EPERM) {
			log_warn("pid %d: %s", (int)t->pid, err);
			continue;
		}

		discovery_process_name(t, ok ? pi->entry_assembly : NULL, name, sizeof(name));
		if (ok && pi->command_line[0])
			copy_str(cmd, sizeof(cmd), pi->command_line);
		else if (discovery_cmdline(t->pid, cmd, sizeof(cmd)) < 0)
			cmd[0] = '\0';
		if (json) {
			struct json_object *o = json_object_new_object();
			json_object_object_add(o, "pid", json_object_new_int(t->pid));
			json_object_object_add(o, "nspid", json_object_new_int(t->nspid));
			json_object_object_add(o, "uid", json_object_new_int64(t->uid));
			json_object_object_add(o, "name", json_object_new_string(name));
			json_object_object_add(o, "entry_assembly", ps_json_string(ok, pi->entry_assembly));
			json_object_object_add(o, "runtime_version", ps_json_string(ok, pi->runtime_version));
			json_object_object_add(o, "os", ps_json_string(ok, pi->os));
			json_object_object_add(o, "arch", ps_json_string(ok, pi->arch));
			json_object_object_add(o, "command_line", json_object_new_string(cmd));
			json_object_object_add(o, "socket", json_object_new_string(t->socket_path));
			r = jsonl_print(out, o);
			json_object_put(o);
		} else {
			/* Every column but PID came from the process: escaped, so
			 * a row is one line and drives no terminal. */
			char ename[4 * sizeof(name) + 1], ert[4 * sizeof(pi->runtime_version) + 1],
			    eentry[4 * sizeof(pi->entry_assembly) + 1], ecmd[4 * sizeof(cmd) + 1];

			ps_field(name, 20, ename, sizeof(ename));
			ps_field(ok && pi->runtime_version[0] ? pi->runtime_version : "-", 10, ert, sizeof(ert));
			ps_field(ok && pi->entry_assembly[0] ? pi->entry_assembly : "-", 20, eentry, sizeof(eentry));
			ps_field(cmd, command_width(out, 7 + 1 + 20 + 1 + 10 + 1 + 20 + 1), ecmd, sizeof(ecmd));
			/* Widths count bytes; names are mostly ASCII. */
			r = fprintf(out, "%-7d %-20s %-10s %-20s %s\n", (int)t->pid, ename, ert, eentry, ecmd) < 0
			        ? -EIO
			        : 0;
		}
		if (r < 0)
			break;
	}
	free(pi);
	free(v);
	if (r < 0)
		return r;
	return (int)(n > INT32_MAX ? INT32_MAX : n);
}

int discovery_exited(pid_t pid, unsigned long long starttime)
{
	char path[64], buf[1024], comm[64];
	unsigned long long st = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = '\0';
	if (dn_parse_stat(buf, (size_t)n, comm, sizeof(comm), &st) < 0)
		return 0;
	if (starttime && st != starttime)
		return 1; /* the pid was reused */
	const char *close_paren = strrchr(buf, ')');
	char state = close_paren && close_paren[1] == ' ' ? close_paren[2] : '?';
	return state == 'Z' || state == 'X' || state == 'x';
}

int discovery_wait_exited(pid_t pid, unsigned long long starttime, int timeout_ms)
{
	if (discovery_exited(pid, starttime))
		return 1;
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0) {
		/* No pidfd (an old kernel, or valgrind): look every 10 ms. */
		for (int waited = 0; waited < timeout_ms; waited += 10) {
			struct timespec ts = {0, 10 * 1000000L};
			nanosleep(&ts, NULL);
			if (discovery_exited(pid, starttime))
				return 1;
		}
		return discovery_exited(pid, starttime);
	}
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	int r = poll(&pfd, 1, timeout_ms);
	close(fd);
	return r > 0 || discovery_exited(pid, starttime);
}

void discovery_skip_add(struct dn_sock_id *skip, size_t *n, size_t max, struct dn_sock_id id)
{
	for (size_t i = 0; i < *n; i++)
		if (skip[i].dev == id.dev && skip[i].ino == id.ino)
			return;
	if (max == 0)
		return;
	if (*n >= max) {
		memmove(skip, skip + 1, (max - 1) * sizeof(*skip));
		*n = max - 1;
	}
	skip[(*n)++] = id;
}
