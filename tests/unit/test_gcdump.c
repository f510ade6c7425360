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
#include "dumpwatch/events.h"
#include "dumpwatch/gcdump.h"
#include "dumpwatch/heapgraph.h"
#include "dumpwatch/nettrace.h"
#include "heaprec.h"

/* ---- graphs from recorded and hand-made events ---- */

static struct nettrace_metadata ev_meta = {.provider = EV_RUNTIME_PROVIDER, .event_name = ""};

static int feed(struct heapgraph *g, uint32_t id, const uint8_t *payload, size_t n)
{
	char err[256];
	ev_meta.event_id = id;
	struct nettrace_event ev = {.meta = &ev_meta, .payload = payload, .payload_size = (uint32_t)n};
	return hg_feed(g, &ev, 8, err, sizeof(err));
}

static size_t le(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return (size_t)bytes;
}

/* A hand-made walk: an object of 3 GiB and one of 100 bytes, of a named
 * type, the first held by a strong handle; no generation ranges. */
static struct heapgraph *huge_object(void)
{
	struct heapgraph *g = hg_new(NULL);
	uint8_t b[256];
	size_t n = 0;

	/* GCBulkNode: index, count, clr instance, then per node address, size,
	 * type, edge count. */
	n += le(b + n, 0, 4), n += le(b + n, 2, 4), n += le(b + n, 1, 2);
	n += le(b + n, 0x100000, 8), n += le(b + n, 3ULL << 30, 8), n += le(b + n, 0xA, 8), n += le(b + n, 0, 8);
	n += le(b + n, 0xd0100000, 8), n += le(b + n, 100, 8), n += le(b + n, 0xA, 8), n += le(b + n, 0, 8);
	CHECK(feed(g, HG_EV_BULK_NODE, b, n) == 1);
	/* GCBulkType: count, clr instance, type id, module, name id, flags,
	 * corelement type, name (UTF-16), type argument count and ids. */
	n = 0;
	n += le(b + n, 1, 4), n += le(b + n, 1, 2), n += le(b + n, 0xA, 8), n += le(b + n, 0x5000, 8);
	n += le(b + n, 0, 4), n += le(b + n, 0, 4), n += le(b + n, 0x1d, 1);
	for (const char *s = "System.Byte[]"; *s; s++)
		n += le(b + n, (uint8_t)*s, 2);
	n += le(b + n, 0, 2), n += le(b + n, 0, 4);
	CHECK(feed(g, HG_EV_BULK_TYPE, b, n) == 1);
	/* GCBulkRootEdge: index, count, clr instance, then address, kind,
	 * flags, root id. */
	n = 0;
	n += le(b + n, 0, 4), n += le(b + n, 1, 4), n += le(b + n, 1, 2);
	n += le(b + n, 0x100000, 8), n += le(b + n, HG_ROOT_HANDLE, 1), n += le(b + n, 0, 4), n += le(b + n, 0x77, 8);
	CHECK(feed(g, HG_EV_BULK_ROOT_EDGE, b, n) == 1);
	CHECK(hg_finish(g) == 0);
	return g;
}

#define CORELIB "/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.0/System.Private.CoreLib.dll"

/* Names the module of System.String as CoreLib's path; the others unknown. */
static const char *module_name(void *ctx, uint64_t id)
{
	const struct heapgraph *g = ctx;
	for (size_t i = 0; i < hg_n_types(g); i++)
		if (strcmp(hg_type(g, i)->name, "System.String") == 0)
			return hg_type(g, i)->module == id ? CORELIB : NULL;
	return NULL;
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

/* A recorded heap, written and read back: every object with its address,
 * size and references; the types' counts and bytes; the paths from the roots
 * to what GcLab holds. */
static void test_recorded(const char *trace)
{
	struct heapgraph *g = heaprec_graph(trace);
	struct gcdump_stats st;
	struct gcdump_meta meta = {.process_name = "GcLab",
	                           .pid = 4242,
	                           .pointer_size = 8,
	                           .time_unix_ns = 1700000000LL * 1000000000LL,
	                           .module_name = module_name,
	                           .module_ctx = g,
	                           .out_stats = &st};
	uint8_t *p = NULL;
	size_t len;
	char err[256];
	struct file f;

	CHECK_MSG(g, "%s: not read", trace);
	if (!g)
		return;
	CHECK(write_to_memory(g, &meta, &p, &len, err, sizeof(err)) == 0);
	int line = read_file(p, len, &f);
	CHECK_MSG(line == 0, "%s: the reader stopped at test_gcdump.c:%d", trace, line);
	if (line)
		goto out;
	CHECK(st.bytes == len);

	size_t nn = hg_n_nodes(g);
	uint64_t total = 0;
	for (size_t i = 0; i < nn; i++)
		total += hg_node(g, i)->size;
	CHECK(f.total_size == total);
	CHECK(f.n_nodes == nn + st.pseudo_nodes && st.nodes == f.n_nodes);
	uint64_t base = st.pseudo_nodes, edges = 0;
	int same = 1;
	for (size_t i = 0; i < nn; i++) {
		const struct file_node *n = &f.nodes[base + i];
		const struct hg_node *h = hg_node(g, i);
		size_t ne, kept = 0;
		const uint32_t *e = hg_edges(g, i, &ne);
		same &= n->addr == h->addr && (uint64_t)n->size == h->size;
		for (size_t k = 0; k < ne; k++) {
			if (e[k] == HG_NONE)
				continue;
			same &= kept < n->n_children && n->children[kept] == base + e[k];
			kept++;
		}
		same &= kept == n->n_children;
		edges += kept;
	}
	CHECK_MSG(same, "%s: objects differ", trace);
	CHECK(st.edges == edges && edges > 2000);
	CHECK(st.roots + st.roots_dropped == hg_n_roots(g));

	/* Types in dotnet-gcdump's spelling, split by size range; the type's size
	 * field the sum of its objects. */
	const struct file_type *t = type_named(&f, "System.Byte[] (Bytes > 100K)");
	CHECK_MSG(t && t->count == 3 && t->bytes == 3 * 100024 && (uint64_t)t->size == t->bytes, "%s: %llu", trace,
	          t ? (unsigned long long)t->count : 0ULL);
	t = type_named(&f, "HeapNode");
	CHECK_MSG(t && t->count == 1000 && (uint64_t)t->size == t->bytes, "%s", trace);
	t = type_named(&f, "HeapLeaf");
	CHECK(t && t->count == 1000);
	CHECK(type_named(&f, "System.Collections.Generic.List<System.Object>") ||
	      type_named(&f, "System.Collections.Generic.List<System.Byte[]>"));

	/* Retention from the roots: [.NET Roots] -> [static vars] -> [static var
	 * List<System.Byte[]>.s_entries] -> the list; [static var
	 * HeapNode.s_root] -> a HeapNode. The name is the runtime's TypeID of the
	 * static var event with the field's name, as dotnet-gcdump spells it: the
	 * TypeID is the type of the object held (Cache.s_entries is a
	 * List<byte[]>, Graph.s_root a HeapNode). */
	CHECK(f.root == 0 && strcmp(f.types[f.nodes[0].type].name, "[.NET Roots]") == 0);
	const struct file_node *sv = node_typed(&f, "[static vars]");
	const struct file_node *entries =
	    node_typed(&f, "[static var System.Collections.Generic.List<System.Byte[]>.s_entries]");
	const struct file_node *tree = node_typed(&f, "[static var HeapNode.s_root]");
	CHECK_MSG(sv && entries && tree, "%s", trace);
	if (entries && tree) {
		CHECK(entries->n_children == 1 && strncmp(f.types[f.nodes[entries->children[0]].type].name,
		                                          "System.Collections.Generic.List<", 32) == 0);
		CHECK(tree->n_children == 1 && strcmp(f.types[f.nodes[tree->children[0]].type].name, "HeapNode") == 0);
	}
	CHECK(node_typed(&f, "[local vars]") || node_typed(&f, "[other roots]"));
	CHECK(type_named(&f, "[static vars]")->size == 0); /* report leaves out the pseudo types */

	/* Generations: segments in address order, each of one generation. */
	CHECK_MSG(f.n_segments > 0, "%s", trace);
	for (uint32_t i = 0; i < f.n_segments && i < 64; i++) {
		int gens = 0;
		for (int k = 2; k < 7; k++)
			gens += f.seg[i][k] != 0 && f.seg[i][k] == f.seg[i][1];
		CHECK(gens == 1 && f.seg[i][0] < f.seg[i][1] && (i == 0 || f.seg[i - 1][1] <= f.seg[i][0]));
	}

	CHECK(f.process && strcmp(f.process, "GcLab") == 0 && f.pid == 4242);
	CHECK(f.tool && strcmp(f.tool, "dumpwatch") == 0);
	CHECK(f.ticks == 621355968000000000ULL + 17000000000000000ULL);
	CHECK(f.log && strstr(f.log, "0 objects"));
out:
	free_file(&f);
	free(p);
	hg_free(g);
}

/* An empty graph; an object of 3 GiB. */
static void test_edges_of_the_format(void)
{
	struct gcdump_stats st;
	struct gcdump_meta meta = {.pointer_size = 8, .out_stats = &st};
	uint8_t *p;
	size_t len;
	char err[256];
	struct file f;

	struct heapgraph *g = hg_new(NULL);
	CHECK(hg_finish(g) == 0);
	CHECK(write_to_memory(g, &meta, &p, &len, err, sizeof(err)) == 0);
	CHECK(read_file(p, len, &f) == 0 && f.n_nodes == 1 && f.nodes[0].n_children == 0 && f.n_segments == 0);
	free_file(&f);
	free(p);
	hg_free(g);

	g = huge_object();
	CHECK(write_to_memory(g, &meta, &p, &len, err, sizeof(err)) == 0);
	CHECK(read_file(p, len, &f) == 0);
	CHECK(st.sizes_clamped == 1);
	const struct file_type *ft = type_named(&f, "System.Byte[] (Bytes > 100M)");
	CHECK(ft && ft->size == INT32_MAX && ft->count == 1);
	ft = type_named(&f, "System.Byte[]");
	CHECK(ft && ft->size == 100 && ft->count == 1);
	const struct file_node *strong = node_typed(&f, "[strong Handles]");
	CHECK(strong && strong->n_children == 1 && f.nodes[strong->children[0]].size == INT32_MAX);
	CHECK(f.n_segments == 0); /* no generation known */
	free_file(&f);
	free(p);
	hg_free(g);
}

static void test_write_errors(void)
{
	struct gcdump_meta meta = {.pointer_size = 8};
	char err[256];
	struct heapgraph *g = heaprec_graph("heap-net10.nettrace");

	CHECK(g);
	if (!g)
		return;
	int fd = open("/dev/full", O_WRONLY);
	if (fd >= 0) {
		int rc = gcdump_write(fd, g, &meta, err, sizeof(err));
		CHECK_MSG(rc == -ENOSPC && strstr(err, "no space left"), "%d %s", rc, err);
		close(fd);
	}
	int ro = open("/dev/null", O_RDONLY);
	int rc = gcdump_write(ro, g, &meta, err, sizeof(err));
	CHECK_MSG(rc == -EBADF && strstr(err, "writing the gcdump failed"), "%d %s", rc, err);
	close(ro);
	hg_free(g);
}

/* test_gcdump --write DIR: the recorded .NET 10 heap as DIR/sample.gcdump,
 * and what dotnet-gcdump report should print of it in DIR/sample.expected:
 * the totals, then "BYTES COUNT NAME" per type it lists. */
static int write_sample(const char *dir)
{
	struct gcdump_meta meta = {.process_name = "GcLab", .pid = 4242, .pointer_size = 8, .module_name = module_name};
	char path[4096], err[256];
	uint8_t *p;
	size_t len;
	struct file f;
	struct heapgraph *g = heaprec_graph("heap-net10.nettrace");

	meta.module_ctx = g;
	if (!g)
		return 1;
	snprintf(path, sizeof(path), "%s/sample.gcdump", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || gcdump_write(fd, g, &meta, err, sizeof(err)) < 0) {
		fprintf(stderr, "test_gcdump: %s: %s\n", path, fd < 0 ? strerror(errno) : err);
		return 1;
	}
	close(fd);
	if (write_to_memory(g, &meta, &p, &len, err, sizeof(err)) < 0 || read_file(p, len, &f) != 0)
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
	hg_free(g);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write") == 0)
		return write_sample(argv[2]);
	test_cint();
	test_strings();
	test_type_names();
	test_recorded("heap-net10.nettrace");
	test_recorded("heap-net9.nettrace");
	test_recorded("heap-net8.nettrace");
	test_edges_of_the_format();
	test_write_errors();
	return check_done();
}
