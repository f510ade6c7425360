/* gcdump: the encodings, and graphs written and read back by a small reader
 * of the format written here from docs/gcdump-format.md (a second reading of
 * the layout; the real reader, dotnet-gcdump report, reads the same files in
 * tests/integration/test_gcdump_format.sh through `test_gcdump --write DIR`).
 *
 * The graphs come from a stand-in of the heapgraph accessors below, until
 * src/3-stream/heapgraph.c exists. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "dumpwatch/gcdump.h"

/* ---- the stand-in graph ---- */

struct heapgraph {
	struct hg_node *nodes;
	size_t n_nodes;
	struct hg_type *types;
	size_t n_types;
	struct hg_root *roots;
	size_t n_roots;
	uint32_t *edges;
	size_t n_edges;
	struct hg_cut cut;
};

size_t hg_n_nodes(const struct heapgraph *g)
{
	return g->n_nodes;
}
size_t hg_n_types(const struct heapgraph *g)
{
	return g->n_types;
}
size_t hg_n_roots(const struct heapgraph *g)
{
	return g->n_roots;
}
size_t hg_n_edges(const struct heapgraph *g)
{
	return g->n_edges;
}
const struct hg_node *hg_node(const struct heapgraph *g, size_t i)
{
	return &g->nodes[i];
}
const struct hg_type *hg_type(const struct heapgraph *g, size_t i)
{
	return &g->types[i];
}
const struct hg_root *hg_root(const struct heapgraph *g, size_t i)
{
	return &g->roots[i];
}
const uint32_t *hg_edges(const struct heapgraph *g, size_t i, size_t *n)
{
	*n = g->nodes[i].n_edges;
	return g->edges + g->nodes[i].first_edge;
}
const struct hg_cut *hg_cut(const struct heapgraph *g)
{
	return &g->cut;
}

/* A builder for the stand-in. */
static uint32_t add_type(struct heapgraph *g, const char *name, uint64_t module)
{
	g->types = realloc(g->types, (g->n_types + 1) * sizeof(*g->types));
	g->types[g->n_types] = (struct hg_type){.id = 0x7f0000 + g->n_types, .module = module, .name = (char *)name};
	return (uint32_t)g->n_types++;
}

static uint32_t add_node(struct heapgraph *g, uint32_t type, uint64_t size, uint8_t gen)
{
	uint64_t addr = g->n_nodes ? g->nodes[g->n_nodes - 1].addr + g->nodes[g->n_nodes - 1].size : 0x7f1000000000;
	g->nodes = realloc(g->nodes, (g->n_nodes + 1) * sizeof(*g->nodes));
	g->nodes[g->n_nodes] =
	    (struct hg_node){.addr = addr, .size = size, .type = type, .gen = gen, .first_edge = (uint32_t)g->n_edges};
	return (uint32_t)g->n_nodes++;
}

/* Edges go to the last node added. */
static void add_edge(struct heapgraph *g, uint32_t to)
{
	g->edges = realloc(g->edges, (g->n_edges + 1) * sizeof(*g->edges));
	g->edges[g->n_edges++] = to;
	g->nodes[g->n_nodes - 1].n_edges++;
}

static void add_root(struct heapgraph *g, uint32_t node, uint8_t kind, uint32_t flags, uint32_t owner, const char *name)
{
	g->roots = realloc(g->roots, (g->n_roots + 1) * sizeof(*g->roots));
	g->roots[g->n_roots++] =
	    (struct hg_root){.node = node, .kind = kind, .flags = flags, .owner_type = owner, .name = (char *)name};
}

static void free_graph(struct heapgraph *g)
{
	free(g->nodes);
	free(g->types);
	free(g->roots);
	free(g->edges);
}

#define CORELIB "/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.0/System.Private.CoreLib.dll"

static const char *module_name(void *ctx, uint64_t id)
{
	(void)ctx;
	return id == 0x1000 ? CORELIB : NULL;
}

/* The sample: what issue 29's test program holds, small. A static list of
 * 1 MiB arrays, a linked graph of small objects held from the stack, strings
 * across the 1K size range, a type with a name outside ASCII, an object
 * whose type is unknown, roots of every category and some that are dropped. */
static void sample(struct heapgraph *g)
{
	memset(g, 0, sizeof(*g));
	uint32_t t_bytes = add_type(g, "System.Byte[]", 0x1000);
	uint32_t t_list = add_type(g, "System.Collections.Generic.List`1[System.Byte[]]", 0x1000);
	uint32_t t_arr = add_type(g, "System.Byte[][]", 0x1000);
	uint32_t t_cache = add_type(g, "GcLab.Cache", 0x2000);
	uint32_t t_node = add_type(g, "GcLab.Node", 0x2000);
	uint32_t t_str = add_type(g, "System.String", 0x1000);
	uint32_t t_dict =
	    add_type(g, "System.Collections.Generic.Dictionary`2+Entry[System.String,System.Object][]", 0x1000);
	uint32_t t_uni = add_type(g,
	                          "Caf\xc3\xa9.\xe2\x82\xac"
	                          "Box\xf0\x9f\x98\x80",
	                          0x2000);

	uint32_t list = add_node(g, t_list, 32, HG_GEN2);
	add_edge(g, list + 1);
	uint32_t arr = add_node(g, t_arr, 24 + 8 * 64, HG_GEN2);
	for (uint32_t i = 0; i < 40; i++)
		add_edge(g, arr + 1 + i);
	for (uint32_t i = 0; i < 40; i++)
		add_node(g, t_bytes, 1048576 + 24, HG_LOH);
	for (uint32_t i = 0; i < 100; i++)
		add_node(g, t_bytes, 124, HG_GEN0);
	uint32_t first = (uint32_t)g->n_nodes;
	for (uint32_t i = 0; i < 500; i++) {
		add_node(g, t_node, 40, i < 250 ? HG_GEN1 : HG_GEN2);
		if (i + 1 < 500)
			add_edge(g, first + i + 1);
		add_edge(g, arr + 1 + 40 + (i % 100));
	}
	uint32_t s0 = (uint32_t)g->n_nodes;
	for (uint32_t i = 0; i < 30; i++)
		add_node(g, t_str, 30 + 100 * i, HG_GEN0); /* 30 .. 2930 bytes */
	uint32_t cache = add_node(g, t_cache, 24, HG_GEN2);
	add_edge(g, list);
	add_edge(g, HG_NONE); /* unresolved: dropped */
	add_node(g, t_dict, 4000, HG_GEN2);
	add_node(g, t_uni, 48, HG_GEN2);
	add_node(g, HG_NONE, 64, HG_GEN_UNKNOWN);

	add_root(g, list, HG_ROOT_STATIC, 0, t_cache, "s_entries");
	add_root(g, s0, HG_ROOT_STATIC, 1, t_uni, "t_name");      /* thread static */
	add_root(g, cache, HG_ROOT_STATIC, 0, HG_NONE, "s_self"); /* owner unknown */
	for (uint32_t i = 0; i < 5; i++)
		add_root(g, first + i, HG_ROOT_STACK, 0, HG_NONE, NULL);
	add_root(g, s0 + 1, HG_ROOT_HANDLE, 0, HG_NONE, NULL);
	add_root(g, arr + 41, HG_ROOT_HANDLE, 1, HG_NONE, NULL);
	add_root(g, s0 + 2, HG_ROOT_HANDLE, 2, HG_NONE, NULL); /* weak: dropped */
	add_root(g, first + 10, HG_ROOT_FINALIZER, 0, HG_NONE, NULL);
	add_root(g, s0 + 3, HG_ROOT_CWT, 0, HG_NONE, NULL);
	add_root(g, s0 + 4, HG_ROOT_OLDER, 0, HG_NONE, NULL);
	add_root(g, HG_NONE, HG_ROOT_STACK, 0, HG_NONE, NULL); /* not in the graph: dropped */
	g->cut.nodes = 7;
}

/* ---- a reader of what gcdump.c writes ---- */

struct rd {
	const uint8_t *p;
	size_t len, pos;
	int bad;
};

static uint8_t r_u8(struct rd *r)
{
	if (r->pos + 1 > r->len) {
		r->bad = 1;
		return 0;
	}
	return r->p[r->pos++];
}

static uint32_t r_u32(struct rd *r)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)r_u8(r) << (8 * i);
	return v;
}

static uint64_t r_u64(struct rd *r)
{
	uint64_t lo = r_u32(r);
	return lo | (uint64_t)r_u32(r) << 32;
}

/* Decodes the format's string into UTF-8 (surrogate pairs joined); NULL
 * for the null string. */
static char *r_str(struct rd *r)
{
	int32_t n = (int32_t)r_u32(r);
	if (n < 0)
		return NULL;
	char *out = malloc((size_t)n * 4 + 1);
	size_t k = 0;
	uint32_t hi = 0;
	for (int32_t i = 0; i < n && !r->bad; i++) {
		uint32_t b = r_u8(r), u;
		if (b < 0x80)
			u = b;
		else if (b < 0xe0)
			u = (b & 0x1f) << 6 | (r_u8(r) & 0x3fu);
		else {
			u = (b & 0x0f) << 12;
			u |= (r_u8(r) & 0x3fu) << 6;
			u |= r_u8(r) & 0x3fu;
		}
		if (u >= 0xd800 && u < 0xdc00) {
			hi = u;
			continue;
		}
		if (u >= 0xdc00 && u < 0xe000 && hi)
			u = 0x10000 + ((hi - 0xd800) << 10) + (u - 0xdc00);
		hi = 0;
		if (u < 0x80)
			out[k++] = (char)u;
		else if (u < 0x800)
			out[k++] = (char)(0xc0 | u >> 6), out[k++] = (char)(0x80 | (u & 0x3f));
		else if (u < 0x10000)
			out[k++] = (char)(0xe0 | u >> 12), out[k++] = (char)(0x80 | ((u >> 6) & 0x3f)),
			out[k++] = (char)(0x80 | (u & 0x3f));
		else
			out[k++] = (char)(0xf0 | u >> 18), out[k++] = (char)(0x80 | ((u >> 12) & 0x3f)),
			out[k++] = (char)(0x80 | ((u >> 6) & 0x3f)), out[k++] = (char)(0x80 | (u & 0x3f));
	}
	out[k] = '\0';
	return out;
}

/* The reader's side of the compressed int: groups of 7 bits, the first
 * sign-extended. */
static int32_t r_cint(struct rd *r)
{
	uint8_t b = r_u8(r);
	int32_t v = (int32_t)((uint32_t)b << 25) >> 25;
	for (int i = 1; i < 5 && (b & 0x80); i++) {
		b = r_u8(r);
		v = (int32_t)((uint32_t)v << 7) + (b & 0x7f);
	}
	return v;
}

static int expect_type(struct rd *r, const char *name, uint32_t version, uint32_t min_reader)
{
	int ok = r_u8(r) == 4 && r_u8(r) == 1 && r_u32(r) == version && r_u32(r) == min_reader;
	char *s = r_str(r);
	ok = ok && s && strcmp(s, name) == 0 && r_u8(r) == 6;
	free(s);
	return ok;
}

struct file_type {
	char *name, *module;
	int32_t size;
	uint64_t count, bytes; /* counted from the nodes */
};

struct file_node {
	uint32_t type;
	int32_t size;
	uint32_t n_children;
	uint32_t *children;
	uint64_t addr;
};

struct file {
	uint64_t total_size;
	int32_t root;
	struct file_type *types;
	uint32_t n_types;
	struct file_node *nodes;
	uint32_t n_nodes;
	char *log, *process, *tool;
	int32_t pid;
	uint64_t ticks;
	uint32_t n_segments;
	uint64_t seg[64][7];
};

static void free_file(struct file *f)
{
	for (uint32_t i = 0; i < f->n_types; i++)
		free(f->types[i].name), free(f->types[i].module);
	for (uint32_t i = 0; i < f->n_nodes; i++)
		free(f->nodes[i].children);
	free(f->types);
	free(f->nodes);
	free(f->log);
	free(f->process);
	free(f->tool);
}

/* Reads a whole file; 0 or the line of the first fault. */
static int read_file(const uint8_t *p, size_t len, struct file *f)
{
	struct rd r = {.p = p, .len = len};
	memset(f, 0, sizeof(*f));
	char *sig = r_str(&r);
	int ok = sig && strcmp(sig, "!FastSerialization.1") == 0;
	free(sig);
	if (!ok)
		return __LINE__;
	if (r_u8(&r) != 4 || !expect_type(&r, "GCHeapDump", 10, 8))
		return __LINE__;
	if (r_u8(&r) != 4 || !expect_type(&r, "Graphs.MemoryGraph", 1, 0))
		return __LINE__;
	f->total_size = r_u64(&r);
	f->root = (int32_t)r_u32(&r);
	f->n_types = r_u32(&r);
	if (f->n_types > 100000)
		return __LINE__;
	f->types = calloc(f->n_types, sizeof(*f->types));
	for (uint32_t i = 0; i < f->n_types; i++) {
		f->types[i].name = r_str(&r);
		f->types[i].size = (int32_t)r_u32(&r);
		f->types[i].module = r_str(&r);
	}
	if (!f->n_types || !f->types[0].name || strcmp(f->types[0].name, "UNDEFINED"))
		return __LINE__;
	f->n_nodes = r_u32(&r);
	if (f->n_nodes > 10000000)
		return __LINE__;
	uint32_t *offs = calloc(f->n_nodes, 4);
	for (uint32_t i = 0; i < f->n_nodes; i++)
		offs[i] = r_u32(&r);
	uint32_t blob_len = r_u32(&r);
	size_t blob = r.pos;
	if (r.bad || blob + blob_len > len || blob_len < 2 || p[blob] != 0 || p[blob + 1] != 0) {
		free(offs);
		return __LINE__;
	}
	f->nodes = calloc(f->n_nodes, sizeof(*f->nodes));
	for (uint32_t i = 0; i < f->n_nodes; i++) {
		struct rd b = {.p = p + blob, .len = blob_len, .pos = offs[i]};
		struct file_node *n = &f->nodes[i];
		if (offs[i] == 0) {
			free(offs);
			return __LINE__; /* no node is left undefined */
		}
		int32_t ts = r_cint(&b);
		n->type = (uint32_t)ts >> 1;
		if (n->type >= f->n_types) {
			free(offs);
			return __LINE__;
		}
		n->size = (ts & 1) ? r_cint(&b) : f->types[n->type].size;
		n->n_children = (uint32_t)r_cint(&b);
		n->children = calloc(n->n_children + 1, 4);
		for (uint32_t k = 0; k < n->n_children; k++)
			n->children[k] = (uint32_t)(r_cint(&b) + (int32_t)i);
		if (b.bad) {
			free(offs);
			return __LINE__;
		}
		f->types[n->type].count++;
		f->types[n->type].bytes += (uint64_t)n->size;
	}
	free(offs);
	r.pos = blob + blob_len;
	if (r_u32(&r) != f->n_nodes)
		return __LINE__;
	for (uint32_t i = 0; i < f->n_nodes; i++)
		f->nodes[i].addr = r_u64(&r);
	if (r_u8(&r) != 8 || r_u8(&r) != 1 || r_u8(&r) != 6) /* tagged Is64Bit, end of the graph */
		return __LINE__;
	if (r_u8(&r) != 1 || r_u32(&r) != 0x3f800000 || r_u32(&r) != 0x3f800000 || r_u8(&r) != 1)
		return __LINE__;
	uint8_t tag = r_u8(&r);
	if (tag == 4) {
		if (!expect_type(&r, "DotNetHeapInfo", 0, 0))
			return __LINE__;
		r_u64(&r);
		f->n_segments = r_u32(&r);
		size_t seg_type = 0;
		for (uint32_t i = 0; i < f->n_segments; i++) {
			if (r_u8(&r) != 4)
				return __LINE__;
			if (!seg_type) {
				seg_type = r.pos;
				if (!expect_type(&r, "GCHeapDumpSegment", 1, 1))
					return __LINE__;
			} else if (r_u8(&r) != 2 || r_u32(&r) != seg_type) {
				return __LINE__;
			}
			for (int k = 0; k < 7; k++) {
				uint64_t v = r_u64(&r);
				if (i < 64)
					f->seg[i][k] = v;
			}
			if (r_u8(&r) != 6)
				return __LINE__;
		}
		if (r_u8(&r) != 6)
			return __LINE__;
	} else if (tag != 1) {
		return __LINE__;
	}
	f->log = r_str(&r);
	f->ticks = r_u64(&r);
	free(r_str(&r));
	f->process = r_str(&r);
	f->pid = (int32_t)r_u32(&r);
	r_u64(&r), r_u64(&r);
	if (r_u32(&r) != 0)
		return __LINE__;
	if (r_u8(&r) != 12 || r_u32(&r) != 0 || r_u8(&r) != 1)
		return __LINE__;
	size_t fwd0 = r.pos;
	if (r_u8(&r) != 13)
		return __LINE__;
	f->tool = r_str(&r);
	if (r_u8(&r) != 6 || r_u8(&r) != 6)
		return __LINE__;
	size_t table = r.pos;
	if (r_u32(&r) != 1 || r_u32(&r) != fwd0)
		return __LINE__;
	size_t trailer = r.pos;
	if (r_u32(&r) != table || r_u32(&r) != trailer || r.pos != len || r.bad)
		return __LINE__;
	return 0;
}

static int write_to_memory(const struct heapgraph *g, const struct gcdump_meta *meta, uint8_t **ret, size_t *ret_len,
                           char *err, size_t errlen)
{
	FILE *tmp = tmpfile();
	int fd = fileno(tmp);
	int rc = gcdump_write(fd, g, meta, err, errlen);
	off_t len = lseek(fd, 0, SEEK_END);
	*ret = malloc((size_t)len + 1);
	*ret_len = (size_t)len;
	if (pread(fd, *ret, (size_t)len, 0) != len)
		rc = -EIO;
	fclose(tmp);
	return rc;
}

static const struct file_type *type_named(const struct file *f, const char *name)
{
	for (uint32_t i = 0; i < f->n_types; i++)
		if (f->types[i].name && strcmp(f->types[i].name, name) == 0)
			return &f->types[i];
	return NULL;
}

static const struct file_node *node_typed(const struct file *f, const char *name)
{
	for (uint32_t i = 0; i < f->n_nodes; i++)
		if (strcmp(f->types[f->nodes[i].type].name, name) == 0)
			return &f->nodes[i];
	return NULL;
}

/* ---- the tests ---- */

static void test_cint(void)
{
	static const int32_t vals[] = {0,         1,         -1,       63,        -64,        64,
	                               -65,       8191,      -8192,    8192,      -8193,      1048575,
	                               -1048576,  1048576,   -1048577, 134217727, -134217728, 134217728,
	                               INT32_MAX, INT32_MIN, 1000000,  -123456789};
	static const size_t lens[] = {1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 3, 4};
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		uint8_t b[5];
		size_t n = gcdump_cint_encode(vals[i], b);
		struct rd r = {.p = b, .len = n};
		CHECK_MSG(n == lens[i], "%d: %zu bytes", vals[i], n);
		CHECK_MSG(r_cint(&r) == vals[i] && r.pos == n && !r.bad, "%d", vals[i]);
	}
	/* The bytes of a few, as Graph.WriteCompressedInt lays them out. */
	uint8_t b[5];
	CHECK(gcdump_cint_encode(100, b) == 2 && b[0] == 0x80 && b[1] == 0x64);
	CHECK(gcdump_cint_encode(-1, b) == 1 && b[0] == 0x7f);
	CHECK(gcdump_cint_encode(-100, b) == 2 && b[0] == 0xff && b[1] == 0x1c);
	/* Every value around each boundary, and a sweep. */
	int bad = 0;
	for (int64_t v = INT32_MIN; v <= INT32_MAX; v += 65537) {
		uint8_t e[5];
		size_t n = gcdump_cint_encode((int32_t)v, e);
		struct rd r = {.p = e, .len = n};
		bad += r_cint(&r) != (int32_t)v || r.pos != n;
	}
	CHECK(bad == 0);
}

static void test_strings(void)
{
	uint8_t out[64];
	uint32_t units;
	size_t n;

	n = gcdump_string_encode("abc", 3, out, &units);
	CHECK(n == 3 && units == 3 && memcmp(out, "abc", 3) == 0);
	n = gcdump_string_encode("\xc3\xa9\xe2\x82\xac", 5, out, &units); /* é € */
	CHECK(n == 5 && units == 2 && memcmp(out, "\xc3\xa9\xe2\x82\xac", 5) == 0);
	/* U+1F600 is a surrogate pair, three bytes each. */
	n = gcdump_string_encode("\xf0\x9f\x98\x80", 4, out, &units);
	CHECK(n == 6 && units == 2 && memcmp(out, "\xed\xa0\xbd\xed\xb8\x80", 6) == 0);
	/* Invalid UTF-8 (a lone continuation, an overlong '/', a truncated
	 * sequence, an encoded surrogate) is U+FFFD per bad byte. */
	n = gcdump_string_encode("\x80", 1, out, &units);
	CHECK(n == 3 && units == 1 && memcmp(out, "\xef\xbf\xbd", 3) == 0);
	n = gcdump_string_encode("\xc0\xaf", 2, out, &units);
	CHECK(n == 6 && units == 2);
	n = gcdump_string_encode("a\xe2\x82", 3, out, &units);
	CHECK(n == 7 && units == 3 && out[0] == 'a');
	n = gcdump_string_encode("\xed\xa0\x80", 3, out, &units);
	CHECK(units == 3 && n == 9);
	/* The reader above gives back what went in. */
	const char *s = "Caf\xc3\xa9 \xf0\x9f\x98\x80 x";
	uint8_t buf[80];
	n = gcdump_string_encode(s, strlen(s), buf + 4, &units);
	memcpy(buf, &units, 4);
	struct rd r = {.p = buf, .len = n + 4};
	char *back = r_str(&r);
	CHECK(back && strcmp(back, s) == 0 && r.pos == n + 4);
	free(back);
}

static void test_type_names(void)
{
	static const char *const cases[][2] = {
	    {"System.Byte[]", "System.Byte[]"},
	    {"System.String[,]", "System.String<,>"},
	    {"System.Collections.Generic.List`1[System.Byte[]]", "System.Collections.Generic.List<System.Byte[]>"},
	    {"System.Collections.Generic.Dictionary`2+Entry[System.String,System.Object][]",
	     "System.Collections.Generic.Dictionary+Entry<System.String,System.Object>[]"},
	    {"A`12[B[]][][]", "A<B[]>[][]"},
	    {"Weird`x", "Weird`x"},
	    {"", ""},
	};
	char out[128];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = gcdump_type_name(cases[i][0], out, sizeof(out));
		CHECK_STR(out, cases[i][1]);
		CHECK(n == strlen(cases[i][1]));
	}
	/* Cut to the buffer, as snprintf, with the full length returned. */
	size_t n = gcdump_type_name("System.Byte[]", out, 8);
	CHECK(n == 13 && strcmp(out, "System.") == 0);
}

static void test_sample(void)
{
	struct heapgraph g;
	struct gcdump_stats st;
	struct gcdump_meta meta = {.process_name = "GcLab",
	                           .pid = 4242,
	                           .pointer_size = 8,
	                           .time_unix_ns = 1700000000LL * 1000000000LL,
	                           .module_name = module_name,
	                           .out_stats = &st};
	uint8_t *p;
	size_t len;
	char err[256];
	struct file f;

	sample(&g);
	CHECK(write_to_memory(&g, &meta, &p, &len, err, sizeof(err)) == 0);
	int line = read_file(p, len, &f);
	CHECK_MSG(line == 0, "the reader stopped at test_gcdump.c:%d", line);
	if (line)
		goto out;
	CHECK(st.bytes == len);

	/* Every object is there with its size and type, and the bytes add up. */
	uint64_t total = 0;
	for (size_t i = 0; i < g.n_nodes; i++)
		total += g.nodes[i].size;
	CHECK(f.total_size == total);
	CHECK(f.n_nodes == g.n_nodes + st.pseudo_nodes && st.nodes == f.n_nodes);
	/* root, static, thread static, local, other roots, finalizer, pinning,
	 * strong, other handles, dependent; 3 statics. */
	CHECK_MSG(st.pseudo_nodes == 10 + 3, "%llu", (unsigned long long)st.pseudo_nodes);
	uint64_t base = st.pseudo_nodes;
	int same = 1;
	for (size_t i = 0; i < g.n_nodes; i++) {
		const struct file_node *n = &f.nodes[base + i];
		same &= n->addr == g.nodes[i].addr && (uint64_t)n->size == g.nodes[i].size;
		size_t kept = 0;
		for (uint32_t k = 0; k < g.nodes[i].n_edges; k++) {
			uint32_t to = g.edges[g.nodes[i].first_edge + k];
			if (to == HG_NONE)
				continue;
			same &= kept < n->n_children && n->children[kept] == base + to;
			kept++;
		}
		same &= kept == n->n_children;
	}
	CHECK(same);
	CHECK(st.edges == g.n_edges - 1 && st.edges_dropped == 1);
	CHECK(st.roots == 13 && st.roots_dropped == 2);

	/* Types: dotnet-gcdump's spelling, split by size range, the type's size
	 * field the sum of its objects. */
	const struct file_type *t = type_named(&f, "System.Byte[] (Bytes > 1M)");
	CHECK(t && t->count == 40 && t->bytes == 40 * (1048576 + 24) && (uint64_t)t->size == t->bytes);
	CHECK(t && strcmp(t->module, CORELIB) == 0);
	t = type_named(&f, "System.Byte[]");
	CHECK(t && t->count == 100 && t->bytes == 12400 && t->size == 12400);
	t = type_named(&f, "System.Collections.Generic.List<System.Byte[]>");
	CHECK(t && t->count == 1 && t->size == 32);
	t = type_named(&f, "GcLab.Node");
	CHECK(t && t->count == 500 && t->size == 20000 && strcmp(t->module, "Module(0x2000)") == 0);
	t = type_named(&f, "System.String");
	CHECK(t && t->count == 10 && t->bytes == 10 * 30 + 100 * 45);
	t = type_named(&f, "System.String (Bytes > 1K)");
	CHECK(t && t->count == 20);
	CHECK(
	    type_named(&f, "System.Collections.Generic.Dictionary+Entry<System.String,System.Object>[] (Bytes > 1K)"));
	CHECK(type_named(&f, "Caf\xc3\xa9.\xe2\x82\xac"
	                     "Box\xf0\x9f\x98\x80"));
	t = type_named(&f, "UNKNOWN");
	CHECK(t && t->count == 1 && t->size == 64);

	/* Retention from the roots: [.NET Roots] -> [static vars] -> [static var
	 * GcLab.Cache.s_entries] -> the list -> the array -> the 1 MiB arrays. */
	CHECK(f.root == 0 && strcmp(f.types[f.nodes[0].type].name, "[.NET Roots]") == 0);
	const struct file_node *sv = node_typed(&f, "[static vars]");
	const struct file_node *entries = node_typed(&f, "[static var GcLab.Cache.s_entries]");
	CHECK(sv && entries && entries->n_children == 1 && entries->children[0] == base + 0);
	CHECK(sv && sv->n_children == 2 && &f.nodes[sv->children[0]] == entries);
	CHECK(node_typed(&f, "[static var UNKNOWN.s_self]"));
	const struct file_node *ts = node_typed(&f, "[thread static vars]");
	CHECK(ts && ts->n_children == 1 &&
	      strcmp(f.types[f.nodes[ts->children[0]].type].name, "[static var Caf\xc3\xa9.\xe2\x82\xac"
	                                                          "Box\xf0\x9f\x98\x80.t_name]") == 0);
	const struct file_node *lv = node_typed(&f, "[local vars]");
	CHECK(lv && lv->n_children == 5);
	const struct file_node *other = node_typed(&f, "[other roots]");
	CHECK(other && other->n_children == 5); /* finalizer, pinning, strong, other, dependent */
	const struct file_node *pin = node_typed(&f, "[pinning Handles]");
	CHECK(pin && pin->n_children == 1 && pin->children[0] == base + 42);
	CHECK(node_typed(&f, "[strong Handles]") && node_typed(&f, "[Dependent Handles]") &&
	      node_typed(&f, "[finalizer Handles]") && node_typed(&f, "[other Handles]"));
	CHECK(!node_typed(&f, "[COM/WinRT Objects]"));
	/* Pseudo types are of size 0, which report leaves out. */
	CHECK(type_named(&f, "[local vars]")->size == 0);

	/* Generations as segments: runs in address order. gen2 (list, array),
	 * LOH, gen0, gen1, gen2, gen0 (the strings), gen2 (up to the unknown one). */
	CHECK_MSG(f.n_segments == 7, "%u", f.n_segments);
	CHECK(f.seg[0][0] == g.nodes[0].addr && f.seg[0][1] == g.nodes[2].addr && f.seg[0][4] == f.seg[0][1]);
	CHECK(f.seg[1][5] == f.seg[1][1] && f.seg[1][0] == g.nodes[2].addr); /* LOH is gen 3 */
	CHECK(f.seg[2][2] != 0 && f.seg[3][3] != 0);

	CHECK(f.process && strcmp(f.process, "GcLab") == 0 && f.pid == 4242);
	CHECK(f.tool && strcmp(f.tool, "dumpwatch") == 0);
	CHECK(f.ticks == 621355968000000000ULL + 17000000000000000ULL);
	CHECK(f.log && strstr(f.log, "7 objects"));
out:
	free_file(&f);
	free(p);
	free_graph(&g);
}

/* An empty graph, an object of 3 GiB, objects out of address order. */
static void test_edges_of_the_format(void)
{
	struct heapgraph g;
	struct gcdump_stats st;
	struct gcdump_meta meta = {.pointer_size = 8, .out_stats = &st};
	uint8_t *p;
	size_t len;
	char err[256];
	struct file f;

	memset(&g, 0, sizeof(g));
	CHECK(write_to_memory(&g, &meta, &p, &len, err, sizeof(err)) == 0);
	CHECK(read_file(p, len, &f) == 0 && f.n_nodes == 1 && f.nodes[0].n_children == 0 && f.n_segments == 0);
	free_file(&f);
	free(p);

	uint32_t t = add_type(&g, "System.Byte[]", 0);
	add_node(&g, t, 3ULL << 30, HG_LOH);
	add_node(&g, t, 100, HG_GEN0);
	g.nodes[1].addr = 0x1000; /* below the first */
	add_root(&g, 0, HG_ROOT_HANDLE, 0, HG_NONE, NULL);
	CHECK(write_to_memory(&g, &meta, &p, &len, err, sizeof(err)) == 0);
	CHECK(read_file(p, len, &f) == 0);
	CHECK(st.sizes_clamped == 1);
	const struct file_type *ft = type_named(&f, "System.Byte[] (Bytes > 100M)");
	CHECK(ft && ft->size == INT32_MAX && ft->count == 1);
	CHECK(f.n_segments == 0); /* not in address order: no generations */
	free_file(&f);
	free(p);
	free_graph(&g);
}

static void test_write_errors(void)
{
	struct heapgraph g;
	struct gcdump_meta meta = {.pointer_size = 8};
	char err[256];

	sample(&g);
	int fd = open("/dev/full", O_WRONLY);
	if (fd >= 0) {
		int rc = gcdump_write(fd, &g, &meta, err, sizeof(err));
		CHECK_MSG(rc == -ENOSPC && strstr(err, "no space left"), "%d %s", rc, err);
		close(fd);
	}
	int ro = open("/dev/null", O_RDONLY);
	int rc = gcdump_write(ro, &g, &meta, err, sizeof(err));
	CHECK_MSG(rc == -EBADF && strstr(err, "writing the gcdump failed"), "%d %s", rc, err);
	close(ro);
	free_graph(&g);
}

/* test_gcdump --write DIR: the sample as DIR/sample.gcdump, and what
 * dotnet-gcdump report should print of it in DIR/sample.expected: the totals,
 * then "BYTES COUNT NAME" per type it lists. */
static int write_sample(const char *dir)
{
	struct heapgraph g;
	struct gcdump_stats st;
	struct gcdump_meta meta = {
	    .process_name = "GcLab", .pid = 4242, .pointer_size = 8, .module_name = module_name, .out_stats = &st};
	char path[4096], err[256];
	uint8_t *p;
	size_t len;
	struct file f;

	sample(&g);
	snprintf(path, sizeof(path), "%s/sample.gcdump", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || gcdump_write(fd, &g, &meta, err, sizeof(err)) < 0) {
		fprintf(stderr, "test_gcdump: %s: %s\n", path, fd < 0 ? strerror(errno) : err);
		return 1;
	}
	close(fd);
	if (write_to_memory(&g, &meta, &p, &len, err, sizeof(err)) < 0 || read_file(p, len, &f) != 0)
		return 1;
	snprintf(path, sizeof(path), "%s/sample.expected", dir);
	FILE *out = fopen(path, "w");
	if (!out)
		return 1;
	fprintf(out, "total %llu %u\n", (unsigned long long)f.total_size, f.n_nodes);
	for (uint32_t i = 0; i < f.n_types; i++)
		if (f.types[i].size && f.types[i].count)
			fprintf(out, "%d %llu %s\n", f.types[i].size, (unsigned long long)f.types[i].count,
			        f.types[i].name);
	fclose(out);
	free_file(&f);
	free(p);
	free_graph(&g);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write") == 0)
		return write_sample(argv[2]);
	test_cint();
	test_strings();
	test_type_names();
	test_sample();
	test_edges_of_the_format();
	test_write_errors();
	return check_done();
}
