/* The classes of a snapshot's static roots: a walk recorded from .NET 10
 * (GcLab "cache 3 100000 1000": Cache.s_entries holds a List<byte[]>,
 * Graph.s_root a HeapNode) named from GcLab.dll's metadata, where the class
 * Decoy declares an s_entries and an s_root of other types; two classes
 * that fit equally leave a static unnamed; and the same from a live process
 * that maps the assembly, also when a local user has put another file on
 * the mapped path (the mapped file is read, not what the path now names). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "asmfile.h"
#include "check.h"
#include "dumpwatch/clrmeta.h"
#include "dumpwatch/heapstatics.h"
#include "dumpwatch/heapsum.h"
#include "heaprec.h"

static const char *root_named(const struct heapgraph *g, const char *field, const char *value_type)
{
	for (size_t i = 0; i < hg_n_roots(g); i++) {
		const struct hg_root *r = hg_root(g, i);
		const struct hg_type *t = r->owner_type != HG_NONE ? hg_type(g, r->owner_type) : NULL;
		if (r->kind == HG_ROOT_STATIC && r->name && strcmp(r->name, field) == 0 && t &&
		    strcmp(t->name, value_type) == 0)
			return r->owner ? r->owner : "(none)";
	}
	return "(no such root)";
}

/* A copy of the assembly whose class Cache is called other (5 bytes). */
static uint8_t *renamed(const uint8_t *pe, size_t len, const char *other)
{
	uint8_t *c = malloc(len);
	memcpy(c, pe, len);
	for (size_t i = 0; i + 7 <= len; i++)
		if (memcmp(c + i, "\0Cache\0", 7) == 0) {
			memcpy(c + i + 1, other, 5);
			return c;
		}
	free(c);
	return NULL;
}

static void test_from_metadata(const uint8_t *pe, size_t len)
{
	struct heapgraph *g = heaprec_graph("heap-net10.nettrace");
	const uint8_t *md;
	size_t mdl;
	CHECK(g != NULL);
	CHECK(asm_metadata_of(pe, len, &md, &mdl) == 0);
	if (!g)
		return;
	struct heapstatics_result res;
	const uint8_t *mds[] = {md, md};
	size_t lens[] = {mdl, mdl};
	/* The same assembly twice (loaded in two contexts): one class still. */
	CHECK(heapstatics_name_from(g, mds, lens, 2, &res) == 0);
	CHECK_STR(root_named(g, "s_entries", "System.Collections.Generic.List<System.Byte[]>"), "Cache");
	CHECK_STR(root_named(g, "s_root", "HeapNode"), "Graph");
	CHECK(res.files == 2 && res.named >= 2);
	printf("recorded walk: %zu statics named, %zu ambiguous, %zu unknown\n", res.named, res.ambiguous, res.unknown);
	/* What the summary shows. */
	struct heapsum *s;
	CHECK(heapsum_build(g, 5, &s) == 0);
	int seen = 0;
	for (size_t i = 0; i < s->n_paths; i++)
		seen |= strcmp(s->paths[i].root, "Cache.s_entries (static)") == 0;
	CHECK(seen);
	heapsum_free(s);
	hg_free(g);

	/* Two classes declare s_entries as a List: it stays unnamed. */
	g = heaprec_graph("heap-net10.nettrace");
	uint8_t *other = renamed(pe, len, "Cachf");
	const uint8_t *md2;
	size_t mdl2;
	CHECK(other && asm_metadata_of(other, len, &md2, &mdl2) == 0);
	if (g && other) {
		const uint8_t *both[] = {md, md2};
		size_t both_len[] = {mdl, mdl2};
		CHECK(heapstatics_name_from(g, both, both_len, 2, &res) == 0);
		CHECK_STR(root_named(g, "s_entries", "System.Collections.Generic.List<System.Byte[]>"), "(none)");
		CHECK_STR(root_named(g, "s_root", "HeapNode"), "Graph");
		CHECK(res.ambiguous >= 1);
		/* Garbage beside them is counted, not fatal. */
		const uint8_t junk[40] = "not metadata";
		const uint8_t *three[] = {md, junk, md};
		size_t three_len[] = {mdl, sizeof(junk), mdl};
		hg_free(g);
		g = heaprec_graph("heap-net10.nettrace");
		CHECK(g && heapstatics_name_from(g, three, three_len, 3, &res) == 0);
		CHECK(res.files == 2 && res.unread == 1);
		CHECK_STR(root_named(g, "s_entries", "System.Collections.Generic.List<System.Byte[]>"), "Cache");
	}
	free(other);
	hg_free(g);
}

static int write_file(const char *path, const uint8_t *b, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int ok = fd >= 0 && write(fd, b, len) == (ssize_t)len;
	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

/* A child that maps path and waits to be killed. */
static pid_t mapper(const char *path)
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(path, O_RDONLY);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0 ||
		    mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED)
			_exit(1);
		close(fd);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	char c;
	int ok = pid > 0 && read(p[0], &c, 1) == 1;
	close(p[0]);
	return ok ? pid : -1;
}

/* Whether this process can open the file pid maps whose path ends in
 * suffix through /proc/PID/map_files (root, and not every tracer allows
 * it). */
static int map_files_open(pid_t pid, const char *suffix)
{
	char path[128], line[512];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	int ok = 0;
	while (f && !ok && fgets(line, sizeof(line), f)) {
		char range[64];
		line[strcspn(line, "\n")] = '\0';
		size_t n = strlen(line), m = strlen(suffix);
		if (n < m || strcmp(line + n - m, suffix) != 0 || sscanf(line, "%63s", range) != 1)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/map_files/%s", (int)pid, range);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ok = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	if (f)
		fclose(f);
	return ok;
}

static void test_live(const uint8_t *pe, size_t len)
{
	char dir[] = "/tmp/dw-heapstatics.XXXXXX", a[64], b[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(a, sizeof(a), "%s/GcLab.dll", dir);
	snprintf(b, sizeof(b), "%s/Evil.dll", dir);
	uint8_t *evil = renamed(pe, len, "Evil!");
	CHECK(evil && write_file(a, pe, len) == 0 && write_file(b, evil, len) == 0);
	free(evil);
	pid_t child = mapper(a);
	CHECK(child > 0);
	struct heapgraph *g = heaprec_graph("heap-net10.nettrace");
	struct heapstatics_result res;
	if (child > 0 && g) {
		CHECK(heapstatics_name(child, g, &res) == 0);
		CHECK_STR(root_named(g, "s_entries", "System.Collections.Generic.List<System.Byte[]>"), "Cache");
		CHECK(res.files == 1);
		/* Another file put over the mapped path (a bind mount: the
		 * mapping still names GcLab.dll): what is mapped is read, through
		 * map_files, or nothing is; the other file's class never shows. */
		if (mount(b, a, "none", MS_BIND, NULL) == 0) {
			hg_free(g);
			g = heaprec_graph("heap-net10.nettrace");
			CHECK(g && heapstatics_name(child, g, &res) == 0);
			const char *owner =
			    root_named(g, "s_entries", "System.Collections.Generic.List<System.Byte[]>");
			CHECK_MSG(strcmp(owner, "Evil!") != 0, "the file put over the mapped path was read");
			if (map_files_open(child, "GcLab.dll"))
				CHECK_STR(owner, "Cache");
			else
				printf("no /proc/PID/map_files here: the swapped path is refused, not read\n");
			umount(a);
		} else {
			printf("bind mount refused (%s): the swapped path is not tried\n", strerror(errno));
		}
	}
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		/* The process is gone: an error, the statics unnamed. */
		hg_free(g);
		g = heaprec_graph("heap-net10.nettrace");
		CHECK(g && heapstatics_name(child, g, &res) < 0);
		CHECK_STR(root_named(g, "s_entries", "System.Collections.Generic.List<System.Byte[]>"), "(none)");
	}
	hg_free(g);
	unlink(a);
	unlink(b);
	rmdir(dir);
}

int main(void)
{
	size_t len;
	uint8_t *pe = testdata_load("assemblies/GcLab.dll", &len);
	CHECK_MSG(pe != NULL, "tests/data/assemblies/GcLab.dll missing");
	if (pe) {
		test_from_metadata(pe, len);
		test_live(pe, len);
	}
	free(pe);
	return check_done();
}
