/* The classes of a snapshot's static roots, from the assemblies' metadata;
 * see heapstatics.h. */
#include "dumpwatch/heapstatics.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dump_shared.h"
#include "dumpwatch/clrmeta.h"

/* How well a static field fits a root: declared with the type of the
 * object the root holds, with object or a type parameter (which any object
 * fits), or with another type (a base class or an interface of it, which
 * only the type hierarchy could tell). */
enum { FIT_OTHER = 0, FIT_ANY = 1, FIT_EXACT = 2 };

struct ent {
	const char *field;
	char *key; /* the held object's type as a clrmeta key */
	size_t root;
	int best; /* the best fit seen, -1 none */
	int conflict;
	char *owner;
};

struct ctx {
	struct ent *v;
	size_t n;
	int oom;
};

static int cmp_ent(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->field, ((const struct ent *)b)->field);
}

static int on_static(void *vctx, const char *field, const char *owner, const char *key)
{
	struct ctx *c = vctx;
	size_t lo = 0, hi = c->n;

	if (!*owner)
		return 0;
	while (lo < hi) { /* the first entry of this field's name */
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(c->v[mid].field, field) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < c->n && strcmp(c->v[i].field, field) == 0; i++) {
		struct ent *e = &c->v[i];
		int fit = *key == '\0' || strcmp(key, "System.Object") == 0 ? FIT_ANY
		          : strcmp(key, e->key) == 0                        ? FIT_EXACT
		                                                            : FIT_OTHER;
		if (fit < e->best)
			continue;
		if (fit == e->best) {
			if (strcmp(e->owner, owner) != 0)
				e->conflict = 1;
			continue;
		}
		char *copy = strdup(owner);
		if (!copy) {
			c->oom = 1;
			return -ENOMEM;
		}
		free(e->owner);
		e->owner = copy;
		e->best = fit;
		e->conflict = 0;
	}
	return 0;
}

/* The static roots with a field name, sorted by it. */
static int collect(struct heapgraph *g, struct ctx *c)
{
	size_t n = hg_n_roots(g);
	char key[CLRMETA_NAME_MAX + 1];

	for (size_t i = 0; i < n; i++) {
		const struct hg_root *r = hg_root(g, i);
		if (r->kind == HG_ROOT_STATIC && r->name && *r->name)
			c->n++;
	}
	if (!c->n)
		return 0;
	c->v = calloc(c->n, sizeof(*c->v));
	if (!c->v)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct hg_root *r = hg_root(g, i);
		if (r->kind != HG_ROOT_STATIC || !r->name || !*r->name)
			continue;
		const struct hg_type *t = r->owner_type != HG_NONE ? hg_type(g, r->owner_type) : NULL;
		clrmeta_type_key(t && t->name ? t->name : "", key, sizeof(key));
		c->v[k] = (struct ent){.field = r->name, .key = strdup(key), .root = i, .best = -1};
		if (!c->v[k++].key)
			return -ENOMEM;
	}
	qsort(c->v, c->n, sizeof(*c->v), cmp_ent);
	return 0;
}

static int finish(struct heapgraph *g, struct ctx *c, struct heapstatics_result *out)
{
	int r = c->oom ? -ENOMEM : 0;

	for (size_t i = 0; i < c->n; i++) {
		struct ent *e = &c->v[i];
		if (r == 0 && e->best >= 0 && !e->conflict) {
			r = hg_root_set_owner(g, e->root, e->owner);
			out->named++;
		} else if (e->best >= 0) {
			out->ambiguous++;
		} else {
			out->unknown++;
		}
		free(e->key);
		free(e->owner);
	}
	free(c->v);
	return r;
}

int heapstatics_name_from(struct heapgraph *g, const uint8_t *const *mds, const size_t *lens, size_t n,
                          struct heapstatics_result *out)
{
	struct ctx c = {0};
	char err[128];

	*out = (struct heapstatics_result){0};
	int r = collect(g, &c);
	for (size_t i = 0; r == 0 && c.n && i < n; i++) {
		if (clrmeta_each_static(mds[i], lens[i], on_static, &c, err, sizeof(err)) == 0)
			out->files++;
		else if (c.oom)
			r = -ENOMEM;
		else
			out->unread++;
	}
	int f = finish(g, &c, out);
	return r < 0 ? r : f;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EIO;
		got += (size_t)r;
	}
	return 0;
}

/* The metadata of the assembly open on fd, in a buffer the caller frees.
 * 0, -ENOENT when it is no assembly, -EIO, -EBADMSG, -EFBIG, -ENOMEM. */
static int read_metadata(int fd, uint64_t size, uint8_t **ret, size_t *ret_len)
{
	uint8_t head[4096], cli[72];
	size_t hl = size < sizeof(head) ? (size_t)size : sizeof(head);
	uint64_t off;
	uint32_t len;

	if (pread_all(fd, head, hl, 0) < 0)
		return -EIO;
	int r = clrmeta_cli_header(head, hl, &off, &len);
	if (r < 0)
		return r == -ENOEXEC ? -ENOENT : r;
	size_t cl = len < sizeof(cli) ? len : sizeof(cli);
	if (off > size || size - off < cl || pread_all(fd, cli, cl, off) < 0)
		return -EIO;
	if ((r = clrmeta_metadata_at(head, hl, cli, cl, &off, &len)) < 0)
		return r;
	if (len > HEAPSTATICS_MAX_METADATA)
		return -EFBIG;
	if (off > size || size - off < len)
		return -EIO;
	uint8_t *md = malloc(len);
	if (!md)
		return -ENOMEM;
	if (pread_all(fd, md, len, off) < 0) {
		free(md);
		return -EIO;
	}
	*ret = md;
	*ret_len = len;
	return 0;
}

struct seen {
	dev_t dev;
	ino_t ino;
};

/* Opens the file of one mapping of process pid: through
 * /proc/PID/map_files (exactly the mapped file, wherever it is; root only),
 * else by its path as the process sees it (below its root, never through a
 * symbolic link). Either way it must be a regular file with the device and
 * inode the mapping names, or it is not read. -errno. */
static int open_mapped(pid_t pid, int rootfd, const char *range, const char *path, unsigned maj, unsigned min,
                       unsigned long ino, struct stat *st)
{
	char mf[96];
	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%s", (int)pid, range);
	int fd = open(mf, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		fd = dump_open_in_root(rootfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return fd;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || st->st_ino != (ino_t)ino || major(st->st_dev) != maj ||
	    minor(st->st_dev) != min) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int heapstatics_name(pid_t pid, struct heapgraph *g, struct heapstatics_result *out)
{
	char path[64];
	struct ctx c = {0};
	struct seen *seen = NULL;
	size_t n_seen = 0;
	char *line = NULL;
	size_t cap = 0;
	char err[128];

	*out = (struct heapstatics_result){0};
	int r = collect(g, &c);
	if (r < 0 || !c.n)
		return finish(g, &c, out) < 0 ? -ENOMEM : r;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *maps = fopen(path, "re");
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	int rootfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!maps || rootfd < 0) {
		r = -errno;
		goto out;
	}
	seen = calloc(HEAPSTATICS_MAX_FILES, sizeof(*seen));
	if (!seen) {
		r = -ENOMEM;
		goto out;
	}
	while (getline(&line, &cap, maps) > 0 && n_seen < HEAPSTATICS_MAX_FILES) {
		unsigned maj, min;
		unsigned long ino;
		char range[40];
		int at = 0;
		if (sscanf(line, "%39s %*s %*s %x:%x %lu %n", range, &maj, &min, &ino, &at) != 4 || !at ||
		    line[at] != '/')
			continue;
		char *file = line + at;
		file[strcspn(file, "\n")] = '\0';
		if (!ino || !(ends_with(file, ".dll") || ends_with(file, ".exe")))
			continue;
		int dup = 0;
		for (size_t i = 0; i < n_seen && !dup; i++)
			dup = seen[i].ino == (ino_t)ino && seen[i].dev == makedev(maj, min);
		if (dup)
			continue;
		seen[n_seen++] = (struct seen){makedev(maj, min), (ino_t)ino};
		struct stat st;
		int fd = open_mapped(pid, rootfd, range, file, maj, min, ino, &st);
		if (fd < 0) {
			out->unread++;
			continue;
		}
		uint8_t *md = NULL;
		size_t len = 0;
		int e = read_metadata(fd, (uint64_t)st.st_size, &md, &len);
		close(fd);
		if (e == -ENOMEM) {
			r = e;
			break;
		}
		if (e < 0) {
			out->unread++;
			continue;
		}
		e = clrmeta_each_static(md, len, on_static, &c, err, sizeof(err));
		free(md);
		if (c.oom) {
			r = -ENOMEM;
			break;
		}
		if (e == 0)
			out->files++;
		else
			out->unread++;
	}
out:
	free(line);
	free(seen);
	if (maps)
		fclose(maps);
	if (rootfd >= 0)
		close(rootfd);
	int f = finish(g, &c, out);
	return r < 0 ? r : f;
}
