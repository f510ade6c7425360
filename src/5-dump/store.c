/* The dump store's disk guards; see store.h. */
#include "dumpwatch/store.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "dumpwatch/gcdump.h"
#include "dumpwatch/text.h"
#include "dumpwatch/units.h"

/* Scanning stops here: a store is meant to hold tens of dumps. */
#define STORE_SCAN_MAX 4096

int store_is_dump(int fd, uid_t uid)
{
	struct stat st;
	Elf64_Ehdr eh;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid)
		return 0;
	if (pread(fd, &eh, sizeof(eh), 0) < GCDUMP_MAGIC_LEN)
		return 0;
	if (memcmp(&eh, GCDUMP_MAGIC, GCDUMP_MAGIC_LEN) == 0)
		return 1;
	return st.st_size >= (off_t)sizeof(eh) && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_type == ET_CORE;
}

static int cmp_age(const void *a, const void *b)
{
	const struct store_entry *x = a, *y = b;
	if (x->mtime_ns != y->mtime_ns)
		return x->mtime_ns < y->mtime_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

void store_context_names(const char *dump_name, char *json, size_t jsonlen, char *svg, size_t svglen)
{
	size_t n = strlen(dump_name);
	int stem = n > 5 && strcmp(dump_name + n - 5, ".core") == 0 ? (int)(n - 5)
	           : n > 7 && strcmp(dump_name + n - 7, ".gcdump") == 0 ? (int)(n - 7)
	                                                                 : (int)n;

	snprintf(json, jsonlen, "%.*s.json", stem, dump_name);
	snprintf(svg, svglen, "%.*s.svg", stem, dump_name);
	/* A dump named like a context file keeps its own name. */
	if (strcmp(json, dump_name) == 0)
		snprintf(json, jsonlen, "%s.json", dump_name);
	if (strcmp(svg, dump_name) == 0)
		snprintf(svg, svglen, "%s.svg", dump_name);
}

/* A regular file of ours named *.json or *.svg: a context file candidate. */
struct ctxfile {
	char name[NAME_MAX + 1];
	uint64_t bytes;
	int64_t mtime_ns;
	int taken;
};

/* Whether name is a stem and then ext. */
static int has_ext(const char *name, const char *ext)
{
	size_t n = strlen(name);
	return n > strlen(ext) && text_ends_with(name, n, ext, 0);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct store_entry *)a)->name, ((const struct store_entry *)b)->name);
}

static int push(void **arr, size_t *n, size_t *cap, size_t size)
{
	if (*n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 16;
	void *na = realloc(*arr, c * size);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = c;
	return 0;
}

/* Counts each context file with its dump, and makes entries of those whose
 * dump is not there (one per stem). */
static int attach_context(struct store_state *out, size_t *cap, struct ctxfile *cf, size_t n_cf)
{
	size_t n_dumps = out->n;

	if (n_dumps > 1)
		qsort(out->entries, n_dumps, sizeof(*out->entries), cmp_name);
	for (size_t i = 0; i < n_cf; i++) {
		struct store_entry key;
		size_t stem = strlen(cf[i].name) - (has_ext(cf[i].name, ".json") ? 5 : 4);
		const char *cands[3] = {".core", ".gcdump", ""};
		struct store_entry *owner = NULL;
		for (size_t c = 0; c < 3 && !owner; c++) {
			if (snprintf(key.name, sizeof(key.name), "%.*s%s", (int)stem, cf[i].name, cands[c]) >=
			    (int)sizeof(key.name))
				continue;
			owner = n_dumps ? bsearch(&key, out->entries, n_dumps, sizeof(key), cmp_name) : NULL;
		}
		if (!owner) {
			/* The dump itself named "X.json": its own context is
			 * "X.json.json". */
			snprintf(key.name, sizeof(key.name), "%.*s", (int)stem, cf[i].name);
			owner = n_dumps ? bsearch(&key, out->entries, n_dumps, sizeof(key), cmp_name) : NULL;
		}
		if (owner) {
			owner->bytes += cf[i].bytes;
			out->stored_bytes += cf[i].bytes;
			cf[i].taken = 1;
		}
	}
	/* The rest: one entry per stem, the newer time of its files. */
	for (size_t i = 0; i < n_cf; i++) {
		if (cf[i].taken)
			continue;
		size_t stem = strlen(cf[i].name) - (has_ext(cf[i].name, ".json") ? 5 : 4);
		if (push((void **)&out->entries, &out->n, cap, sizeof(*out->entries)) < 0)
			return -ENOMEM;
		struct store_entry *e = &out->entries[out->n++];
		memset(e, 0, sizeof(*e));
		snprintf(e->name, sizeof(e->name), "%s", cf[i].name);
		e->context_only = 1;
		for (size_t k = i; k < n_cf; k++) {
			if (cf[k].taken || strlen(cf[k].name) - (has_ext(cf[k].name, ".json") ? 5 : 4) != stem ||
			    strncmp(cf[k].name, cf[i].name, stem) != 0)
				continue;
			cf[k].taken = 1;
			e->bytes += cf[k].bytes;
			if (cf[k].mtime_ns > e->mtime_ns)
				e->mtime_ns = cf[k].mtime_ns;
		}
		out->stored_bytes += e->bytes;
		out->n_context_only++;
	}
	return 0;
}

int store_scan(int dirfd, struct store_state *out)
{
	struct statvfs vfs;
	DIR *d;
	struct dirent *de;
	int dfd;
	size_t cap = 0, n_cf = 0, cap_cf = 0;
	struct ctxfile *cf = NULL;

	memset(out, 0, sizeof(*out));
	if (fstatvfs(dirfd, &vfs) < 0)
		return -errno;
	out->fs_bytes = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	out->free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	/* readdir consumes the descriptor: list through a copy. */
	dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		int e = errno;
		close(dfd);
		return -e;
	}
	while ((de = readdir(d)) != NULL && out->n + n_cf < STORE_SCAN_MAX) {
		struct stat st;
		int fd;

		if (de->d_name[0] == '.' || strlen(de->d_name) > NAME_MAX)
			continue;
		if (de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
			continue;
		if (has_ext(de->d_name, ".json") || has_ext(de->d_name, ".svg")) {
			if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
			    st.st_uid != geteuid())
				continue;
			if (push((void **)&cf, &n_cf, &cap_cf, sizeof(*cf)) < 0)
				goto nomem;
			struct ctxfile *c = &cf[n_cf++];
			snprintf(c->name, sizeof(c->name), "%s", de->d_name);
			c->bytes = (uint64_t)st.st_blocks * 512;
			c->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
			c->taken = 0;
			continue;
		}
		fd = openat(dirfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			continue;
		if (!store_is_dump(fd, geteuid()) || fstat(fd, &st) < 0) {
			close(fd);
			continue;
		}
		close(fd);
		if (push((void **)&out->entries, &out->n, &cap, sizeof(*out->entries)) < 0)
			goto nomem;
		struct store_entry *e = &out->entries[out->n++];
		memset(e, 0, sizeof(*e));
		snprintf(e->name, sizeof(e->name), "%s", de->d_name);
		e->bytes = (uint64_t)st.st_blocks * 512;
		e->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		out->stored_bytes += e->bytes;
	}
	closedir(d);
	d = NULL;
	if (attach_context(out, &cap, cf, n_cf) < 0)
		goto nomem;
	free(cf);
	if (out->n > 1)
		qsort(out->entries, out->n, sizeof(*out->entries), cmp_age);
	return 0;
nomem:
	if (d)
		closedir(d);
	free(cf);
	store_state_free(out);
	return -ENOMEM;
}

int store_delete(int dirfd, const struct store_entry *e)
{
	char json[NAME_MAX + 8], svg[NAME_MAX + 8];
	int r = 0;

	if (e->context_only) {
		size_t stem = strlen(e->name) - (has_ext(e->name, ".json") ? 5 : 4);
		snprintf(json, sizeof(json), "%.*s.json", (int)stem, e->name);
		snprintf(svg, sizeof(svg), "%.*s.svg", (int)stem, e->name);
	} else {
		if (unlinkat(dirfd, e->name, 0) < 0 && errno != ENOENT)
			return -errno;
		store_context_names(e->name, json, sizeof(json), svg, sizeof(svg));
	}
	if (unlinkat(dirfd, json, 0) < 0 && errno != ENOENT)
		r = -errno;
	if (unlinkat(dirfd, svg, 0) < 0 && errno != ENOENT && r == 0)
		r = -errno;
	return r;
}

/* Writes one file of the context as ".NAME.partial"; 0 or -errno. */
static int put_partial(int dirfd, const char *tmp, const char *data, size_t len, uid_t uid, gid_t gid, mode_t mode)
{
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		/* Left by a crash: ours (the store is writable by us only). */
		unlinkat(dirfd, tmp, 0);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		return -errno;
	int r = 0;
	for (size_t off = 0; off < len && r == 0;) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			r = w < 0 ? -errno : -EIO;
		else
			off += (size_t)w;
	}
	if (r == 0 && (uid != geteuid() || gid != getegid()) && fchown(fd, uid, gid) < 0)
		r = -errno;
	if (r == 0 && fchmod(fd, mode) < 0)
		r = -errno;
	close(fd);
	if (r < 0)
		unlinkat(dirfd, tmp, 0);
	return r;
}

int store_put_context(int dirfd, const char *dump_name, const struct store_limits *l, const char *json, size_t jsonlen,
                      const char *svg, size_t svglen, char *err, size_t errlen)
{
	char jname[NAME_MAX + 8], sname[NAME_MAX + 8], jtmp[NAME_MAX + 20], stmp[NAME_MAX + 20];
	struct statvfs vfs;
	struct stat st;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	mode_t mode = 0600;
	int r;

	store_context_names(dump_name, jname, sizeof(jname), sname, sizeof(sname));
	if (strlen(jname) > NAME_MAX || strlen(sname) > NAME_MAX) {
		snprintf(err, errlen, "the context files of %s would have names longer than %d bytes", dump_name,
		         NAME_MAX);
		return -ENAMETOOLONG;
	}
	if (l && fstatvfs(dirfd, &vfs) == 0) {
		char why[512];
		r = store_check_free((uint64_t)vfs.f_blocks * vfs.f_frsize, (uint64_t)vfs.f_bavail * vfs.f_frsize, l,
		                     jsonlen + svglen, "the dump file system", why, sizeof(why));
		if (r < 0) {
			snprintf(err, errlen, "context files not written: %s", why);
			return r;
		}
	}
	/* The owner and mode of the dump, when it is there. */
	if (fstatat(dirfd, dump_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
		uid = st.st_uid;
		gid = st.st_gid;
		mode = st.st_mode & 0666;
	}
	snprintf(jtmp, sizeof(jtmp), ".%s.partial", jname);
	snprintf(stmp, sizeof(stmp), ".%s.partial", sname);
	r = put_partial(dirfd, jtmp, json, jsonlen, uid, gid, mode);
	if (r == 0) {
		r = put_partial(dirfd, stmp, svg, svglen, uid, gid, mode);
		if (r < 0)
			unlinkat(dirfd, jtmp, 0);
	}
	if (r == 0 && renameat(dirfd, jtmp, dirfd, jname) < 0) {
		r = -errno;
		unlinkat(dirfd, jtmp, 0);
		unlinkat(dirfd, stmp, 0);
	}
	if (r == 0 && renameat(dirfd, stmp, dirfd, sname) < 0) {
		r = -errno;
		unlinkat(dirfd, jname, 0);
		unlinkat(dirfd, stmp, 0);
	}
	if (r < 0)
		snprintf(err, errlen, "context files of %s not written: %s", dump_name, strerror(-r));
	return r;
}

void store_state_free(struct store_state *s)
{
	if (!s)
		return;
	free(s->entries);
	s->entries = NULL;
	s->n = 0;
}

int store_check_free(uint64_t fs_bytes, uint64_t free_bytes, const struct store_limits *l, uint64_t estimate,
                     const char *where, char *why, size_t whylen)
{
	char a[32], b[32], c[32];
	uint64_t after = free_bytes > estimate ? free_bytes - estimate : 0;

	if (l->min_free_bytes && after < l->min_free_bytes) {
		snprintf(why, whylen,
		         "the dump (estimated %s) would leave %s free on %s, under the minimum %s (--min-free)",
		         units_format((double)estimate, UNIT_BYTES, a, sizeof(a)),
		         units_format((double)after, UNIT_BYTES, b, sizeof(b)), where,
		         units_format((double)l->min_free_bytes, UNIT_BYTES, c, sizeof(c)));
		return -ENOSPC;
	}
	if (l->min_free_pct > 0 && fs_bytes > 0 && (double)after * 100.0 / (double)fs_bytes < l->min_free_pct) {
		snprintf(why, whylen,
		         "the dump (estimated %s) would leave %s free on %s (%.1f%%), under the minimum %g%% "
		         "(--min-free)",
		         units_format((double)estimate, UNIT_BYTES, a, sizeof(a)),
		         units_format((double)after, UNIT_BYTES, b, sizeof(b)), where,
		         (double)after * 100.0 / (double)fs_bytes, l->min_free_pct);
		return -ENOSPC;
	}
	return 0;
}

/* What is wrong with writing estimate bytes given free, stored and count, or
 * NULL when nothing is. */
static const char *violation(const struct store_state *s, const struct store_limits *l, uint64_t estimate,
                             uint64_t free_bytes, uint64_t stored, size_t count, char *why, size_t whylen)
{
	char a[32], b[32], c[32];

	if (store_check_free(s->fs_bytes, free_bytes, l, estimate, "the dump file system", why, whylen) < 0)
		return why;
	if (l->max_bytes && stored + estimate > l->max_bytes) {
		snprintf(why, whylen,
		         "the dump (estimated %s) would bring the stored dumps (%zu, %s) over the maximum %s "
		         "(--store-max-size)",
		         units_format((double)estimate, UNIT_BYTES, a, sizeof(a)), count,
		         units_format((double)stored, UNIT_BYTES, b, sizeof(b)),
		         units_format((double)l->max_bytes, UNIT_BYTES, c, sizeof(c)));
		return why;
	}
	if (l->max_count && count + 1 > l->max_count) {
		snprintf(why, whylen, "the store already holds %zu dump(s), the maximum (--store-max-count %u)", count,
		         l->max_count);
		return why;
	}
	return NULL;
}

int store_admit(struct store_state *s, const struct store_limits *l, uint64_t estimate, size_t *ret_n_delete, char *why,
                size_t whylen)
{
	uint64_t free_bytes = s->free_bytes, stored = s->stored_bytes;
	size_t dumps = s->n - s->n_context_only, n_delete = 0;
	char first[512];

	*ret_n_delete = 0;
	for (size_t k = 0; k < s->n; k++)
		s->entries[k].doomed = 0;
	if (!violation(s, l, estimate, free_bytes, stored, dumps, first, sizeof(first)))
		return 0;
	if (l->delete_oldest) {
		/* Deleting a dump gives back what it takes on disk, with its
		 * context files; the context files of a dump that was not
		 * taken go in their turn, but only for space: they are not a
		 * dump for the count. */
		for (size_t k = 0; k < s->n; k++) {
			struct store_entry *e = &s->entries[k];
			if (e->context_only && !violation(s, l, estimate, free_bytes, stored, 0, why, whylen))
				continue;
			e->doomed = 1;
			n_delete++;
			free_bytes += e->bytes;
			stored -= e->bytes;
			if (!e->context_only)
				dumps--;
			if (!violation(s, l, estimate, free_bytes, stored, dumps, why, whylen)) {
				*ret_n_delete = n_delete;
				return 0;
			}
		}
		for (size_t k = 0; k < s->n; k++)
			s->entries[k].doomed = 0;
		snprintf(why, whylen, "%s; deleting all %zu stored dump(s) would not be enough", first,
		         s->n - s->n_context_only);
		return -ENOSPC;
	}
	snprintf(why, whylen, "%s", first);
	return -ENOSPC;
}

void store_estimate_from_maps(const char *maps, size_t len, enum dump_type type, struct store_estimate *out)
{
	uint64_t readable = 0, anon = 0;
	const char *p = maps, *end = maps + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		char line[256];
		unsigned long long lo, hi, ino;
		char perms[8];
		size_t n = (size_t)(eol - p) < sizeof(line) - 1 ? (size_t)(eol - p) : sizeof(line) - 1;

		/* "lo-hi perms offset dev inode [path]": a mapping of no
		 * file (inode 0) is anonymous memory: heaps, stacks. */
		memcpy(line, p, n);
		line[n] = '\0';
		if (sscanf(line, "%llx-%llx %7s %*s %*s %llu", &lo, &hi, perms, &ino) == 4 && hi > lo &&
		    perms[0] == 'r') {
			readable += hi - lo;
			if (ino == 0)
				anon += hi - lo;
		}
		p = eol + 1;
	}
	memset(out, 0, sizeof(*out));
	if (!readable)
		return;
	switch (type) {
	case DUMP_FULL:
		out->bytes = readable + readable / 10;
		break;
	case DUMP_GCDUMP:
		/* A few bytes per object: far less than the heap, which holds
		 * objects of 24 bytes and more. */
		out->bytes = anon / 4 + 1024u * 1024;
		break;
	case DUMP_WITHHEAP:
		out->bytes = anon + anon / 10 + 32u * 1024 * 1024;
		break;
	default:
		out->bytes = 64u * 1024 * 1024;
		break;
	}
	out->bound = readable + readable / 4 + 256u * 1024 * 1024;
}

/* /proc/PID/maps holds a line per mapping, at most vm.max_map_count (65530
 * by default) of about 100 bytes. */
#define MAPS_MAX (32u * 1024 * 1024)

void store_estimate(pid_t pid, enum dump_type type, struct store_estimate *out)
{
	char path[64], *buf = NULL;
	size_t len = 0, cap = 0;
	int fd;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	for (;;) {
		if (len == cap) {
			char *nb;
			if (cap >= MAPS_MAX)
				break;
			cap = cap ? cap * 2 : 64 * 1024;
			nb = realloc(buf, cap);
			if (!nb)
				break;
			buf = nb;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (buf)
		store_estimate_from_maps(buf, len, type, out);
	free(buf);
}

/* The file ends within this of its last segment: createdump's end exactly
 * where its last segment does (seen with every dump type of .NET 10). */
#define CORE_TAIL_MAX (1024u * 1024)

int store_check_core(int fd, uint64_t size, uint64_t bound, char *why, size_t whylen)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[256];
	uint64_t phnum, end_max = 0, notes = 0;
	char a[32], b[32];

	if (size < sizeof(eh) || pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
		snprintf(why, whylen, "it is not an ELF file (%llu bytes)", (unsigned long long)size);
		return -EBADMSG;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type != ET_CORE) {
		snprintf(why, whylen, "it is an ELF file but not a 64-bit core (class %u, type %u)",
		         (unsigned)eh.e_ident[EI_CLASS], (unsigned)eh.e_type);
		return -EBADMSG;
	}
	if (eh.e_phentsize != sizeof(Elf64_Phdr)) {
		snprintf(why, whylen, "its program header size is %u, not %zu", (unsigned)eh.e_phentsize,
		         sizeof(Elf64_Phdr));
		return -EBADMSG;
	}
	phnum = eh.e_phnum;
	if (phnum == PN_XNUM) {
		/* More than 65534 segments: the count is in section header 0. */
		Elf64_Shdr sh;
		if (eh.e_shoff > size || size - eh.e_shoff < sizeof(sh) ||
		    pread(fd, &sh, sizeof(sh), (off_t)eh.e_shoff) != (ssize_t)sizeof(sh)) {
			snprintf(why, whylen, "its extended segment count lies outside the file");
			return -EBADMSG;
		}
		phnum = sh.sh_info;
	}
	if (phnum == 0 || phnum > STORE_CORE_PHDRS_MAX) {
		snprintf(why, whylen, "it has %llu program headers", (unsigned long long)phnum);
		return -EBADMSG;
	}
	if (eh.e_phoff > size || (size - eh.e_phoff) / sizeof(Elf64_Phdr) < phnum) {
		snprintf(why, whylen, "its %llu program headers lie outside the file", (unsigned long long)phnum);
		return -EBADMSG;
	}
	for (uint64_t i = 0; i < phnum;) {
		size_t n = phnum - i < 256 ? (size_t)(phnum - i) : 256;
		ssize_t got = pread(fd, ph, n * sizeof(ph[0]), (off_t)(eh.e_phoff + i * sizeof(ph[0])));
		if (got != (ssize_t)(n * sizeof(ph[0]))) {
			snprintf(why, whylen, "its program headers cannot be read");
			return got < 0 ? -errno : -EBADMSG;
		}
		for (size_t k = 0; k < n; k++, i++) {
			if (ph[k].p_offset > size || size - ph[k].p_offset < ph[k].p_filesz) {
				snprintf(why, whylen,
				         "its segment %llu (offset %llu, %llu bytes) ends past the end of the file "
				         "(%llu bytes)",
				         (unsigned long long)i, (unsigned long long)ph[k].p_offset,
				         (unsigned long long)ph[k].p_filesz, (unsigned long long)size);
				return -EBADMSG;
			}
			if (ph[k].p_offset + ph[k].p_filesz > end_max)
				end_max = ph[k].p_offset + ph[k].p_filesz;
			if (ph[k].p_type == PT_NOTE)
				notes++;
		}
	}
	if (!notes) {
		snprintf(why, whylen, "it has no note segment: not a process core");
		return -EBADMSG;
	}
	if (end_max < eh.e_phoff + phnum * sizeof(Elf64_Phdr))
		end_max = eh.e_phoff + phnum * sizeof(Elf64_Phdr);
	if (size - end_max > CORE_TAIL_MAX) {
		snprintf(why, whylen, "it holds %s after its last segment",
		         units_format((double)(size - end_max), UNIT_BYTES, a, sizeof(a)));
		return -EBADMSG;
	}
	if (bound && size > bound) {
		snprintf(why, whylen, "it is %s, more than a dump of that process can be (at most %s)",
		         units_format((double)size, UNIT_BYTES, a, sizeof(a)),
		         units_format((double)bound, UNIT_BYTES, b, sizeof(b)));
		return -EFBIG;
	}
	return 0;
}

int store_check_gcdump(int fd, uint64_t size, char *why, size_t whylen)
{
	char head[GCDUMP_MAGIC_LEN];

	if (size < GCDUMP_MAGIC_LEN || pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head) ||
	    memcmp(head, GCDUMP_MAGIC, GCDUMP_MAGIC_LEN) != 0) {
		snprintf(why, whylen, "it is not a gcdump (%llu bytes)", (unsigned long long)size);
		return -EBADMSG;
	}
	return 0;
}
