/* The ECMA-335 metadata reader: the static fields of GcLab.dll as the
 * machine's SDK built it (tests/data/assemblies), of the host's
 * System.Private.CoreLib when there is one (tables past 65,535 rows, heaps
 * past 64 KiB), then every cut and every corrupted byte of the real
 * metadata, which must give an error or a walk, never a read out of
 * bounds (the sanitizer run checks that). */
#include <errno.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "asmfile.h"
#include "check.h"
#include "dumpwatch/clrmeta.h"
#include "testdata.h"

/* The metadata inside a PE file held whole in memory. */
struct seen {
	char got[16][3][128];
	int n, total;
	const char *want_owner;
	int found;
};

static int record(void *ctx, const char *field, const char *owner, const char *key)
{
	struct seen *s = ctx;
	s->total++;
	if (s->want_owner) {
		s->found += strcmp(owner, s->want_owner) == 0;
		return 0;
	}
	if (s->n < 16) {
		snprintf(s->got[s->n][0], 128, "%s", field);
		snprintf(s->got[s->n][1], 128, "%s", owner);
		snprintf(s->got[s->n][2], 128, "%s", key);
		s->n++;
	}
	return 0;
}

static int has(const struct seen *s, const char *field, const char *owner, const char *key)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->got[i][0], field) && !strcmp(s->got[i][1], owner) && !strcmp(s->got[i][2], key))
			return 1;
	return 0;
}

static int count_only(void *ctx, const char *field, const char *owner, const char *key)
{
	(void)field;
	(void)owner;
	(void)key;
	(*(int *)ctx)++;
	return 0;
}

static void test_gclab(const uint8_t *md, size_t len)
{
	struct seen s = {0};
	char err[256] = "";
	CHECK_MSG(clrmeta_each_static(md, len, record, &s, err, sizeof(err)) == 0, "%s", err);
	/* The statics the heap tests hold their objects in, and the decoys
	 * of the same names declared with other types. */
	CHECK(has(&s, "s_entries", "Cache", "System.Collections.Generic.List"));
	CHECK(has(&s, "s_root", "Graph", "HeapNode"));
	CHECK(has(&s, "s_entries", "Decoy", "System.Collections.Generic.Dictionary"));
	CHECK(has(&s, "s_root", "Decoy", "System.String[]"));
	/* A nested class is named with its enclosing one; a field declared
	 * object has that key. */
	CHECK(has(&s, "s_any", "Decoy+Nested", "System.Object"));
	/* Constants are not statics with storage. */
	for (int i = 0; i < s.n; i++)
		CHECK_MSG(strcmp(s.got[i][0], "MB") != 0, "a constant: %s.%s", s.got[i][1], s.got[i][0]);

	/* A callback's non-zero return ends the walk with it. */
	CHECK(clrmeta_each_static(md, len, count_only, &(int){0}, err, sizeof(err)) == 0);
}

static int stop_at_first(void *ctx, const char *field, const char *owner, const char *key)
{
	(void)ctx;
	(void)field;
	(void)owner;
	(void)key;
	return 42;
}

/* Every prefix and every byte flipped: an error or a walk, no crash. */
static void test_malformed(const uint8_t *pe, size_t pe_len, const uint8_t *md, size_t len)
{
	char err[256];
	uint8_t *copy = malloc(len);
	size_t refused = 0, walked = 0;
	for (size_t n = 0; n < len; n++) {
		memcpy(copy, md, n); /* exactly n bytes: the sanitizer sees a read past them */
		int k = 0;
		int r = clrmeta_each_static(copy, n, count_only, &k, err, sizeof(err));
		refused += r == -EBADMSG;
		walked += r == 0;
		CHECK_MSG(r == 0 || r == -EBADMSG, "prefix %zu: %d", n, r);
	}
	CHECK(refused > 0);
	for (size_t i = 0; i < len; i++) {
		memcpy(copy, md, len);
		copy[i] ^= 0xff;
		int k = 0;
		int r = clrmeta_each_static(copy, len, count_only, &k, err, sizeof(err));
		CHECK_MSG(r == 0 || r == -EBADMSG, "byte %zu flipped: %d", i, r);
	}
	free(copy);
	/* The PE headers cut anywhere. */
	uint8_t *head = malloc(4096);
	for (size_t n = 0; n <= 4096 && n <= pe_len; n++) {
		memcpy(head, pe, n);
		uint64_t off;
		uint32_t size;
		int r = clrmeta_cli_header(head, n, &off, &size);
		CHECK(r == 0 || r == -ENOEXEC || r == -ENOENT || r == -EBADMSG);
	}
	free(head);
	CHECK(clrmeta_each_static(md, len, stop_at_first, NULL, err, sizeof(err)) == 42);
	uint8_t zero[64] = {0};
	CHECK(clrmeta_each_static(zero, sizeof(zero), count_only, &(int){0}, err, sizeof(err)) == -EBADMSG);
	CHECK(strstr(err, "BSJB") != NULL);
	uint64_t off;
	uint32_t size;
	CHECK(clrmeta_cli_header(zero, sizeof(zero), &off, &size) == -ENOEXEC);
	printf("malformed: %zu prefixes refused, %zu walked\n", refused, walked);
}

/* The host's CoreLib: large tables and heaps (4-byte indices). */
static void test_corelib(void)
{
	glob_t gl;
	if (glob("/usr/share/dotnet/shared/Microsoft.NETCore.App/*/System.Private.CoreLib.dll", 0, NULL, &gl) != 0) {
		printf("no System.Private.CoreLib.dll on this machine: skipped\n");
		return;
	}
	size_t len;
	uint8_t *pe = testdata_load(gl.gl_pathv[0], &len);
	globfree(&gl);
	const uint8_t *md;
	size_t mdl;
	CHECK(pe && asm_metadata_of(pe, len, &md, &mdl) == 0);
	if (pe && asm_metadata_of(pe, len, &md, &mdl) == 0) {
		char err[256] = "";
		struct seen s = {.want_owner = "System.Diagnostics.Tracing.NativeRuntimeEventSource"};
		CHECK_MSG(clrmeta_each_static(md, mdl, record, &s, err, sizeof(err)) == 0, "%s", err);
		CHECK_MSG(s.found >= 1 && s.total > 1000, "NativeRuntimeEventSource statics %d of %d", s.found,
		          s.total);
		struct seen e = {.want_owner = "System.String"};
		CHECK(clrmeta_each_static(md, mdl, record, &e, err, sizeof(err)) == 0 && e.found >= 1);
		printf("CoreLib: %d statics in %zu bytes of metadata\n", s.total, mdl);
	}
	free(pe);
}

static void test_type_key(void)
{
	char k[64];
	clrmeta_type_key("System.Collections.Generic.List<System.Byte[]>", k, sizeof(k));
	CHECK_STR(k, "System.Collections.Generic.List");
	clrmeta_type_key("System.Collections.Generic.Dictionary<System.String,System.Int32>[]", k, sizeof(k));
	CHECK_STR(k, "System.Collections.Generic.Dictionary[]");
	clrmeta_type_key("System.Byte[,]", k, sizeof(k));
	CHECK_STR(k, "System.Byte[,]");
	clrmeta_type_key("Outer+Inner<A<B>>", k, sizeof(k));
	CHECK_STR(k, "Outer+Inner");
	clrmeta_type_key("a>b", k, sizeof(k)); /* an unbalanced ">" is kept */
	CHECK_STR(k, "a>b");
	clrmeta_type_key("System.Collections.Generic.List", k, 8);
	CHECK_STR(k, "System.");
}

int main(void)
{
	size_t len;
	uint8_t *pe = testdata_load("assemblies/GcLab.dll", &len);
	CHECK_MSG(pe != NULL, "tests/data/assemblies/GcLab.dll missing");
	const uint8_t *md;
	size_t mdl;
	if (pe && asm_metadata_of(pe, len, &md, &mdl) == 0) {
		test_gclab(md, mdl);
		test_malformed(pe, len, md, mdl);
	} else {
		CHECK_MSG(0, "no metadata found in GcLab.dll");
	}
	free(pe);
	test_corelib();
	test_type_key();
	return check_done();
}
