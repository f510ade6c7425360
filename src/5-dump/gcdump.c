/* The .gcdump writer: a heapgraph as the GCHeapDump / Graphs.MemoryGraph
 * objects of PerfView's FastSerialization stream (docs/gcdump-format.md).
 *
 * Design note. The format wants, before the node records, a table of each
 * record's offset in the node blob, and before the table the types, whose
 * size field the records refer to. So the graph is read several times and
 * nothing of its size is held: two passes over the objects to learn which
 * types (and size ranges) are used and their bytes, a pass that measures each
 * record and writes the offset table, a pass that writes the records, one
 * for the addresses and one for the generations. The node records are made by
 * one function, given either the file or a counting writer, so that the
 * measured and the written bytes cannot disagree.
 *
 * Node numbering: 0 is "[.NET Roots]", then the root categories in use, then
 * one "[static var TYPE.FIELD]" per static root, then the graph's objects in
 * their order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dumpwatch/gcdump.h"
#include "dumpwatch/text.h"

enum tag {
	TAG_NULL = 1,
	TAG_OBJREF = 2,
	TAG_BEGIN = 4,
	TAG_END = 6,
	TAG_BYTE = 8,
	TAG_SKIP_REGION = 12,
	TAG_STRING = 13,
};

#define BUF_SIZE (256 * 1024)
#define N_BUCKETS 7
#define TICKS_AT_UNIX_EPOCH 621355968000000000LL
#define GCDUMP_MAX_LABEL UINT32_MAX
#define STATIC_THREAD_LOCAL 0x1 /* GCRootStaticVarFlags */
#define ROOT_PINNING 0x1        /* GCRootFlag */
#define ROOT_WEAK 0x2
#define ROOT_REFCOUNTED 0x8

/* ---- encodings ---- */

size_t gcdump_cint_encode(int32_t v, uint8_t out[5])
{
	uint32_t u = (uint32_t)v;
	size_t n;

	/* The shortest form whose first 7-bit group, sign-extended, gives v. */
	if (v >= -64 && v <= 63)
		n = 1;
	else if (v >= -8192 && v <= 8191)
		n = 2;
	else if (v >= -(1 << 20) && v < (1 << 20))
		n = 3;
	else if (v >= -(1 << 27) && v < (1 << 27))
		n = 4;
	else
		n = 5;
	for (size_t i = 0; i < n; i++) {
		unsigned shift = (unsigned)(7 * (n - 1 - i));
		uint8_t b = (uint8_t)((u >> shift) & 0x7f);
		if (n == 5 && i == 0)
			b = (uint8_t)((v >> 28) & 0x7f); /* sign-extended top group */
		out[i] = (uint8_t)(b | (i + 1 < n ? 0x80 : 0));
	}
	return n;
}

/* The next code point of s[*i..len), U+FFFD for a byte that does not start a
 * well-formed sequence (text_utf8_decode: overlong forms and surrogates
 * included). */
static uint32_t utf8_next(const unsigned char *s, size_t len, size_t *i)
{
	uint32_t cp;
	size_t n = text_utf8_decode(s + *i, len - *i, &cp);

	*i += n ? n : 1;
	return n ? cp : 0xfffd;
}

/* One UTF-16 unit in the format's 1-3 bytes; returns the length. */
static size_t unit_encode(uint32_t u, uint8_t *out)
{
	if (u < 0x80) {
		out[0] = (uint8_t)u;
		return 1;
	}
	if (u < 0x800) {
		out[0] = (uint8_t)(0xc0 | (u >> 6));
		out[1] = (uint8_t)(0x80 | (u & 0x3f));
		return 2;
	}
	out[0] = (uint8_t)(0xe0 | (u >> 12));
	out[1] = (uint8_t)(0x80 | ((u >> 6) & 0x3f));
	out[2] = (uint8_t)(0x80 | (u & 0x3f));
	return 3;
}

/* A code point as its units' bytes (a surrogate pair outside the BMP). */
static size_t cp_encode(uint32_t cp, uint8_t out[6], uint32_t *units)
{
	if (cp < 0x10000) {
		(*units)++;
		return unit_encode(cp, out);
	}
	cp -= 0x10000;
	*units += 2;
	size_t n = unit_encode(0xd800 | (cp >> 10), out);
	return n + unit_encode(0xdc00 | (cp & 0x3ff), out + n);
}

size_t gcdump_string_encode(const char *s, size_t len, uint8_t *out, uint32_t *ret_units)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n = 0;
	uint32_t units = 0;
	uint8_t tmp[6];

	while (i < len) {
		size_t k = cp_encode(utf8_next(p, len, &i), tmp, &units);
		if (out)
			memcpy(out + n, tmp, k);
		n += k;
	}
	*ret_units = units;
	return n;
}

size_t gcdump_type_name(const char *raw, char *out, size_t outlen)
{
	size_t n = 0;
	char prev = 0; /* the last character emitted, for "<>" */

	for (size_t i = 0; raw[i]; i++) {
		char c = raw[i];
		if (c == '`' && raw[i + 1] >= '0' && raw[i + 1] <= '9') {
			while (raw[i + 1] >= '0' && raw[i + 1] <= '9')
				i++;
			continue;
		}
		if (c == '[')
			c = '<';
		else if (c == ']')
			c = '>';
		/* "<>" becomes "[]", scanning left to right without overlap, as a
		 * replace of the whole string does: the '>' of a "[]" just made
		 * does not pair again. */
		if (c == '>' && prev == '<') {
			if (n - 1 < outlen)
				out[n - 1] = '[';
			c = ']';
		}
		if (n < outlen)
			out[n] = c;
		n++;
		prev = (c == ']') ? 0 : c;
	}
	if (outlen)
		out[n < outlen ? n : outlen - 1] = '\0';
	return n;
}

/* ---- the buffered writer ---- */

struct bw {
	int fd; /* -1: counts only */
	uint8_t *buf;
	size_t n;
	uint64_t pos; /* bytes put so far */
	int err;      /* the first error, -errno */
};

static void bw_flush(struct bw *w)
{
	size_t off = 0;

	while (!w->err && off < w->n) {
		ssize_t k = write(w->fd, w->buf + off, w->n - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			w->err = k < 0 ? -errno : -EIO;
		else
			off += (size_t)k;
	}
	w->n = 0;
}

static void bw_put(struct bw *w, const void *p, size_t n)
{
	w->pos += n;
	if (w->fd < 0 || w->err)
		return;
	while (n) {
		size_t k = BUF_SIZE - w->n < n ? BUF_SIZE - w->n : n;
		memcpy(w->buf + w->n, p, k);
		w->n += k;
		p = (const uint8_t *)p + k;
		n -= k;
		if (w->n == BUF_SIZE)
			bw_flush(w);
	}
}

static void bw_u8(struct bw *w, uint8_t v)
{
	if (w->fd >= 0 && !w->err && w->n < BUF_SIZE) {
		w->buf[w->n++] = v;
		w->pos++;
		if (w->n == BUF_SIZE)
			bw_flush(w);
		return;
	}
	bw_put(w, &v, 1);
}

static void bw_u32(struct bw *w, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	bw_put(w, b, 4);
}

static void bw_i32(struct bw *w, int32_t v)
{
	bw_u32(w, (uint32_t)v);
}

static void bw_u64(struct bw *w, uint64_t v)
{
	bw_u32(w, (uint32_t)v);
	bw_u32(w, (uint32_t)(v >> 32));
}

static void bw_f32(struct bw *w, float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	bw_u32(w, u);
}

static void bw_cint(struct bw *w, int32_t v)
{
	uint8_t b[5];
	bw_put(w, b, gcdump_cint_encode(v, b));
}

/* One string made of n parts, without joining them in a buffer. */
static void bw_strv(struct bw *w, const char *const *parts, int n)
{
	uint32_t units = 0;

	for (int k = 0; k < n; k++) {
		uint32_t u;
		gcdump_string_encode(parts[k], strlen(parts[k]), NULL, &u);
		units += u;
	}
	bw_u32(w, units);
	for (int k = 0; k < n; k++) {
		size_t i = 0, len = strlen(parts[k]);
		uint8_t tmp[6];
		while (i < len) {
			uint32_t dummy = 0;
			bw_put(w, tmp, cp_encode(utf8_next((const unsigned char *)parts[k], len, &i), tmp, &dummy));
		}
	}
}

/* A string, NULL written as the null string. */
static void bw_str(struct bw *w, const char *s)
{
	if (!s)
		bw_i32(w, -1);
	else
		bw_strv(w, &s, 1);
}

/* The definition of a serialization type: an object whose own type is null. */
static uint64_t bw_type(struct bw *w, const char *name, int32_t version, int32_t min_reader)
{
	uint64_t label = w->pos;
	bw_u8(w, TAG_BEGIN);
	bw_u8(w, TAG_NULL);
	bw_i32(w, version);
	bw_i32(w, min_reader);
	bw_str(w, name);
	bw_u8(w, TAG_END);
	return label;
}

/* ---- the graph's shape in the file ---- */

/* The pseudo nodes of the roots, as dotnet-gcdump names them. */
enum cat {
	CAT_ROOT,
	CAT_STATIC,
	CAT_THREAD_STATIC,
	CAT_LOCAL,
	CAT_COM,
	CAT_OTHER,
	CAT_FINALIZER,
	CAT_PINNING,
	CAT_STRONG,
	CAT_OTHER_HANDLES,
	CAT_OTHER_COM,
	CAT_DEPENDENT,
	N_CAT
};

static const struct {
	const char *name;
	int parent;
} cats[N_CAT] = {
    [CAT_ROOT] = {"[.NET Roots]", -1},
    [CAT_STATIC] = {"[static vars]", CAT_ROOT},
    [CAT_THREAD_STATIC] = {"[thread static vars]", CAT_ROOT},
    [CAT_LOCAL] = {"[local vars]", CAT_ROOT},
    [CAT_COM] = {"[COM/WinRT Objects]", CAT_ROOT},
    [CAT_OTHER] = {"[other roots]", CAT_ROOT},
    [CAT_FINALIZER] = {"[finalizer Handles]", CAT_OTHER},
    [CAT_PINNING] = {"[pinning Handles]", CAT_OTHER},
    [CAT_STRONG] = {"[strong Handles]", CAT_OTHER},
    [CAT_OTHER_HANDLES] = {"[other Handles]", CAT_OTHER},
    [CAT_OTHER_COM] = {"[COM/WinRT Objects]", CAT_OTHER},
    [CAT_DEPENDENT] = {"[Dependent Handles]", CAT_OTHER},
};

static const char *const bucket_suffix[N_BUCKETS] = {
    "", " (Bytes > 1K)", " (Bytes > 10K)", " (Bytes > 100K)", " (Bytes > 1M)", " (Bytes > 10M)", " (Bytes > 100M)",
};

struct gw {
	const struct heapgraph *g;
	const struct gcdump_meta *meta;
	size_t n_nodes, n_types, n_roots;
	uint8_t *mask;        /* per graph type: the size ranges its objects use */
	uint32_t *first_type; /* per graph type: file type of its first range */
	uint64_t *type_bytes; /* per file object type (from obj_type_base) */
	uint32_t n_obj_types;
	uint64_t unknown_bytes;
	int has_unknown;
	uint64_t total_bytes;
	uint64_t cat_roots[N_CAT];
	uint32_t cat_node[N_CAT]; /* file node index, HG_NONE when not used */
	uint32_t cat_type[N_CAT];
	uint64_t n_static;
	uint64_t static_node_base, static_type_base;
	uint64_t obj_node_base, obj_type_base, unknown_type;
	uint64_t n_file_nodes, n_file_types;
	struct gcdump_stats st;
};

static int32_t clamp_size(uint64_t s)
{
	return s > INT32_MAX ? INT32_MAX : (int32_t)s;
}

static int bucket_of(int32_t size)
{
	if (size <= 1000)
		return 0;
	if (size < 10000)
		return 1;
	if (size < 100000)
		return 2;
	if (size < 1000000)
		return 3;
	if (size < 10000000)
		return 4;
	if (size < 100000000)
		return 5;
	return 6;
}

static int root_cat(const struct gw *x, const struct hg_root *r)
{
	if (r->node == HG_NONE || r->node >= x->n_nodes)
		return -1;
	if (r->kind == HG_ROOT_STATIC)
		return (r->flags & STATIC_THREAD_LOCAL) ? CAT_THREAD_STATIC : CAT_STATIC;
	if (r->flags & ROOT_WEAK)
		return -1; /* not a root: it keeps nothing alive */
	switch (r->kind) {
	case HG_ROOT_STACK:
		return CAT_LOCAL;
	case HG_ROOT_CWT:
		return CAT_DEPENDENT;
	case HG_ROOT_COM:
		return CAT_COM;
	default:
		break;
	}
	if (r->flags & ROOT_REFCOUNTED)
		return CAT_OTHER_COM;
	if (r->kind == HG_ROOT_FINALIZER)
		return CAT_FINALIZER;
	if (r->kind == HG_ROOT_HANDLE)
		return r->flags == ROOT_PINNING ? CAT_PINNING : CAT_STRONG;
	return CAT_OTHER_HANDLES;
}

/* The file type of an object, and its size as written. */
static uint64_t obj_type(const struct gw *x, const struct hg_node *n, int32_t *ret_size)
{
	int32_t size = clamp_size(n->size);
	*ret_size = size;
	if (n->type == HG_NONE || n->type >= x->n_types)
		return x->unknown_type;
	int b = bucket_of(size);
	unsigned below = (unsigned)x->mask[n->type] & ((1u << b) - 1u);
	return x->first_type[n->type] + (uint64_t)__builtin_popcount(below);
}

static int32_t type_size_field(const struct gw *x, uint64_t t)
{
	if (t == x->unknown_type)
		return clamp_size(x->unknown_bytes);
	return clamp_size(x->type_bytes[t - x->obj_type_base]);
}

/* Passes over the objects and roots that fix the types, categories and
 * numbering. 0, -ENOMEM or -EFBIG. */
static int plan(struct gw *x, char *err, size_t errlen)
{
	const struct heapgraph *g = x->g;
	uint64_t t;

	x->mask = calloc(x->n_types ? x->n_types : 1, 1);
	x->first_type = calloc(x->n_types ? x->n_types : 1, sizeof(*x->first_type));
	if (!x->mask || !x->first_type)
		goto nomem;
	for (size_t i = 0; i < x->n_nodes; i++) {
		const struct hg_node *n = hg_node(g, i);
		int32_t size = clamp_size(n->size);
		if (n->type == HG_NONE || n->type >= x->n_types)
			x->has_unknown = 1;
		else
			x->mask[n->type] |= (uint8_t)(1u << bucket_of(size));
	}

	/* Roots by category; categories used. */
	for (size_t i = 0; i < x->n_roots; i++) {
		const struct hg_root *r = hg_root(g, i);
		int c = root_cat(x, r);
		if (c < 0) {
			x->st.roots_dropped++;
			continue;
		}
		x->cat_roots[c]++;
		if (c == CAT_STATIC || c == CAT_THREAD_STATIC)
			x->n_static++;
	}
	x->st.roots = x->n_roots - x->st.roots_dropped;

	/* Types: 0 "UNDEFINED", the categories, the statics, the objects'. */
	t = 1;
	uint64_t node = 0;
	int used[N_CAT] = {0};
	used[CAT_ROOT] = 1;
	for (int c = 1; c < N_CAT; c++)
		if (x->cat_roots[c]) {
			used[c] = 1;
			for (int p = cats[c].parent; p >= 0; p = cats[p].parent)
				used[p] = 1;
		}
	for (int c = 0; c < N_CAT; c++) {
		x->cat_node[c] = x->cat_type[c] = HG_NONE;
		if (!used[c])
			continue;
		x->cat_node[c] = (uint32_t)node++;
		x->cat_type[c] = (uint32_t)t++;
	}
	x->static_node_base = node;
	x->static_type_base = t;
	node += x->n_static;
	t += x->n_static;
	x->obj_node_base = node;
	x->obj_type_base = t;
	for (size_t i = 0; i < x->n_types; i++) {
		x->first_type[i] = (uint32_t)(t - x->obj_type_base);
		t += (uint64_t)__builtin_popcount(x->mask[i]);
	}
	x->n_obj_types = (uint32_t)(t - x->obj_type_base);
	x->unknown_type = x->has_unknown ? t++ : UINT64_MAX;
	x->n_file_types = t;
	x->n_file_nodes = node + x->n_nodes;
	if (x->n_file_nodes > INT32_MAX || x->n_file_types >= (1u << 30)) {
		snprintf(err, errlen, "the heap snapshot has %llu nodes and %llu types, more than a gcdump holds",
		         (unsigned long long)x->n_file_nodes, (unsigned long long)x->n_file_types);
		return -EFBIG;
	}
	for (size_t i = 0; i < x->n_types; i++)
		x->first_type[i] += (uint32_t)x->obj_type_base;

	/* Bytes per object type: the type's size field. */
	x->type_bytes = calloc(x->n_obj_types ? x->n_obj_types : 1, sizeof(*x->type_bytes));
	if (!x->type_bytes)
		goto nomem;
	for (size_t i = 0; i < x->n_nodes; i++) {
		int32_t size;
		uint64_t ft = obj_type(x, hg_node(g, i), &size);
		if (ft == x->unknown_type)
			x->unknown_bytes += (uint64_t)size;
		else
			x->type_bytes[ft - x->obj_type_base] += (uint64_t)size;
		x->total_bytes += (uint64_t)size;
		if (hg_node(g, i)->size > INT32_MAX)
			x->st.sizes_clamped++;
	}
	x->st.nodes = x->n_file_nodes;
	x->st.pseudo_nodes = x->obj_node_base;
	x->st.types = x->n_file_types;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory planning the gcdump of %zu types", x->n_types);
	return -ENOMEM;
}

/* ---- node records ---- */

static void record_head(struct bw *w, uint64_t type, int32_t size, int32_t type_size, uint64_t n_children)
{
	int32_t ts = (int32_t)(type << 1);
	if (size != type_size) {
		bw_cint(w, ts | 1);
		bw_cint(w, size);
	} else {
		bw_cint(w, ts);
	}
	bw_cint(w, (int32_t)n_children);
}

static void record_child(struct bw *w, uint64_t self, uint64_t child)
{
	bw_cint(w, (int32_t)((int64_t)child - (int64_t)self));
}

/* The record of category c: its used sub-categories, then its roots (for
 * the statics' categories, their "[static var ...]" nodes). */
static void record_cat(const struct gw *x, struct bw *w, int c)
{
	uint64_t self = x->cat_node[c], n = x->cat_roots[c], nstatic = 0;

	for (int k = 0; k < N_CAT; k++)
		if (cats[k].parent == c && x->cat_node[k] != HG_NONE)
			n++;
	record_head(w, x->cat_type[c], 0, 0, n);
	for (int k = 0; k < N_CAT; k++)
		if (cats[k].parent == c && x->cat_node[k] != HG_NONE)
			record_child(w, self, x->cat_node[k]);
	if (!x->cat_roots[c])
		return;
	for (size_t i = 0; i < x->n_roots && !w->err; i++) {
		const struct hg_root *r = hg_root(x->g, i);
		int rc = root_cat(x, r);
		int is_static = rc == CAT_STATIC || rc == CAT_THREAD_STATIC;
		if (rc == c)
			record_child(w, self, is_static ? x->static_node_base + nstatic : x->obj_node_base + r->node);
		if (is_static)
			nstatic++;
	}
}

/* The records of the "[static var ...]" nodes, one per static root. */
static void records_static(const struct gw *x, struct bw *w, struct bw *table, uint64_t *blob_pos)
{
	uint64_t k = 0;

	for (size_t i = 0; i < x->n_roots && !w->err && (!table || !table->err); i++) {
		const struct hg_root *r = hg_root(x->g, i);
		int rc = root_cat(x, r);
		if (rc != CAT_STATIC && rc != CAT_THREAD_STATIC)
			continue;
		uint64_t before = w->pos;
		if (table)
			bw_u32(table, (uint32_t)*blob_pos);
		record_head(w, x->static_type_base + k, 0, 0, 1);
		record_child(w, x->static_node_base + k, x->obj_node_base + r->node);
		*blob_pos += w->pos - before;
		k++;
	}
}

static void record_obj(struct gw *x, struct bw *w, size_t i, int counting_edges)
{
	const struct hg_node *n = hg_node(x->g, i);
	uint64_t self = x->obj_node_base + i;
	size_t ne = 0, kept = 0;
	const uint32_t *e = hg_edges(x->g, i, &ne);
	int32_t size;
	uint64_t t = obj_type(x, n, &size);

	for (size_t k = 0; k < ne; k++)
		if (e[k] != HG_NONE && e[k] < x->n_nodes)
			kept++;
	record_head(w, t, size, type_size_field(x, t), kept);
	for (size_t k = 0; k < ne; k++)
		if (e[k] != HG_NONE && e[k] < x->n_nodes)
			record_child(w, self, x->obj_node_base + e[k]);
	if (counting_edges) {
		x->st.edges += kept;
		x->st.edges_dropped += ne - kept;
	}
}

/* All records in node order. With table, each record's offset goes there
 * first (w then only counts); without, the records go to w. */
static void records(struct gw *x, struct bw *w, struct bw *table)
{
	uint64_t blob_pos = w->pos;

	for (int c = 0; c < N_CAT; c++) {
		if (x->cat_node[c] == HG_NONE)
			continue;
		uint64_t before = w->pos;
		if (table)
			bw_u32(table, (uint32_t)blob_pos);
		record_cat(x, w, c);
		blob_pos += w->pos - before;
	}
	records_static(x, w, table, &blob_pos);
	for (size_t i = 0; i < x->n_nodes && !w->err && (!table || !table->err); i++) {
		uint64_t before = w->pos;
		if (table)
			bw_u32(table, (uint32_t)blob_pos);
		record_obj(x, w, i, !table);
		blob_pos += w->pos - before;
	}
}

/* ---- the sections ---- */

/* A type name in dotnet-gcdump's spelling, in a scratch buffer that grows
 * to the longest name (the spelling is never longer than the name). */
static const char *spelled(char **scratch, size_t *cap, const char *raw)
{
	size_t len = strlen(raw) + 1;

	if (len > *cap) {
		char *p = realloc(*scratch, len);
		if (!p)
			return NULL;
		*scratch = p;
		*cap = len;
	}
	gcdump_type_name(raw, *scratch, *cap);
	return *scratch;
}

static int write_types(struct gw *x, struct bw *w)
{
	const char *(*module_name)(void *, uint64_t) = x->meta->module_name;
	char *scratch = NULL, modbuf[40];
	size_t cap = 0;
	int ret = 0;

	bw_u32(w, (uint32_t)x->n_file_types);
	bw_str(w, "UNDEFINED");
	bw_i32(w, 0);
	bw_str(w, NULL);
	for (int c = 0; c < N_CAT; c++) {
		if (x->cat_type[c] == HG_NONE)
			continue;
		bw_str(w, cats[c].name);
		bw_i32(w, 0);
		bw_str(w, NULL);
	}
	for (size_t i = 0; i < x->n_roots && !w->err; i++) {
		const struct hg_root *r = hg_root(x->g, i);
		int rc = root_cat(x, r);
		if (rc != CAT_STATIC && rc != CAT_THREAD_STATIC)
			continue;
		const struct hg_type *ot =
		    r->owner_type != HG_NONE && r->owner_type < x->n_types ? hg_type(x->g, r->owner_type) : NULL;
		/* The declaring class when the metadata named it, else the
		 * value's type, as dotnet-gcdump writes. */
		const char *owner = spelled(&scratch, &cap,
		                            r->owner         ? r->owner
		                            : ot && ot->name ? ot->name
		                                             : "UNKNOWN");
		if (!owner)
			goto nomem;
		const char *parts[] = {"[static var ", owner, ".", r->name ? r->name : "?", "]"};
		bw_strv(w, parts, 5);
		bw_i32(w, 0);
		bw_str(w, NULL);
	}
	for (size_t i = 0; i < x->n_types && !w->err; i++) {
		const struct hg_type *ht = hg_type(x->g, i);
		const char *mod = module_name ? module_name(x->meta->module_ctx, ht->module) : NULL;
		if (!mod) {
			snprintf(modbuf, sizeof(modbuf), "Module(0x%llx)", (unsigned long long)ht->module);
			mod = modbuf;
		}
		const char *name = spelled(&scratch, &cap, ht->name ? ht->name : "UNKNOWN");
		if (!name)
			goto nomem;
		for (int b = 0; b < N_BUCKETS; b++) {
			if (!(x->mask[i] & (1u << b)))
				continue;
			uint64_t ft =
			    x->first_type[i] + (uint64_t)__builtin_popcount((unsigned)x->mask[i] & ((1u << b) - 1u));
			const char *parts[] = {name, bucket_suffix[b]};
			bw_strv(w, parts, 2);
			bw_i32(w, type_size_field(x, ft));
			bw_str(w, mod);
		}
	}
	if (x->has_unknown) {
		bw_str(w, "UNKNOWN");
		bw_i32(w, type_size_field(x, x->unknown_type));
		bw_str(w, NULL);
	}
	goto out;
nomem:
	ret = -ENOMEM;
out:
	free(scratch);
	return ret;
}

/* DotNetHeapInfo: the generations as segments, one per run of objects of one
 * generation in address order (so only when the objects are in address
 * order); null when no object's generation is known. Returns the segments
 * written. */
static uint64_t write_heap_info(struct gw *x, struct bw *w)
{
	uint64_t runs = 0, seg_bytes = 0, prev_addr = 0;
	int prev_gen = -1, sorted = 1;

	for (size_t i = 0; i < x->n_nodes; i++) {
		const struct hg_node *n = hg_node(x->g, i);
		if (i && n->addr < prev_addr) {
			sorted = 0;
			break;
		}
		prev_addr = n->addr;
		int gen = n->gen < HG_GEN_UNKNOWN ? n->gen : -1;
		if (gen >= 0 && gen != prev_gen)
			runs++;
		prev_gen = gen;
	}
	if (!sorted || !runs || runs > INT32_MAX) {
		bw_u8(w, TAG_NULL);
		return 0;
	}
	/* The segments' total length is written first: one pass to sum it. */
	for (size_t i = 0, start = 0; i < x->n_nodes; i++) {
		const struct hg_node *n = hg_node(x->g, i);
		const struct hg_node *next = i + 1 < x->n_nodes ? hg_node(x->g, i + 1) : NULL;
		if (i == start && n->gen >= HG_GEN_UNKNOWN) {
			start = i + 1;
			continue;
		}
		if (!next || next->gen != n->gen) {
			seg_bytes += n->addr + n->size - hg_node(x->g, start)->addr;
			start = i + 1;
		}
	}
	bw_u8(w, TAG_BEGIN);
	bw_type(w, "DotNetHeapInfo", 0, 0);
	bw_u64(w, seg_bytes);
	bw_u32(w, (uint32_t)runs);
	uint64_t seg_type = 0;
	for (size_t i = 0, start = 0; i < x->n_nodes && !w->err; i++) {
		const struct hg_node *n = hg_node(x->g, i);
		const struct hg_node *next = i + 1 < x->n_nodes ? hg_node(x->g, i + 1) : NULL;
		if (i == start && n->gen >= HG_GEN_UNKNOWN) {
			start = i + 1;
			continue;
		}
		if (next && next->gen == n->gen)
			continue;
		uint64_t lo = hg_node(x->g, start)->addr, hi = n->addr + n->size;
		bw_u8(w, TAG_BEGIN);
		if (!seg_type) {
			seg_type = w->pos;
			bw_type(w, "GCHeapDumpSegment", 1, 1);
		} else {
			bw_u8(w, TAG_OBJREF);
			bw_u32(w, (uint32_t)seg_type);
		}
		bw_u64(w, lo);
		bw_u64(w, hi);
		/* Gen0..Gen2 ends, then Gen3 (the LOH) and Gen4 (the POH). */
		for (int gen = HG_GEN0; gen <= HG_POH; gen++)
			bw_u64(w, gen == n->gen ? hi : 0);
		bw_u8(w, TAG_END);
		start = i + 1;
	}
	bw_u8(w, TAG_END);
	return runs;
}

static const char *errno_sentence(int e)
{
	return e == -ENOSPC ? "no space left on the device" : strerror(-e);
}

int gcdump_write(int fd, const struct heapgraph *g, const struct gcdump_meta *meta, char *err, size_t errlen)
{
	struct gw x = {.g = g, .meta = meta};
	struct bw w = {.fd = fd}, count = {.fd = -1};
	char log[256];
	int ret;

	if (errlen)
		err[0] = '\0';
	x.n_nodes = hg_n_nodes(g);
	x.n_types = hg_n_types(g);
	x.n_roots = hg_n_roots(g);
	ret = plan(&x, err, errlen);
	if (ret < 0)
		goto out;
	w.buf = malloc(BUF_SIZE);
	if (!w.buf) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory for the gcdump's write buffer");
		goto out;
	}

	bw_str(&w, "!FastSerialization.1");
	bw_u8(&w, TAG_BEGIN);
	bw_type(&w, "GCHeapDump", 10, 8);
	bw_u8(&w, TAG_BEGIN);
	bw_type(&w, "Graphs.MemoryGraph", 1, 0);
	bw_u64(&w, x.total_bytes);
	bw_i32(&w, (int32_t)x.cat_node[CAT_ROOT]);
	ret = write_types(&x, &w);
	if (ret < 0) {
		snprintf(err, errlen, "out of memory writing the gcdump's type names");
		goto out;
	}

	/* The offset table, measuring the records; the blob starts with the
	 * record of the undefined node (type 0, size 0, no child). */
	bw_u32(&w, (uint32_t)x.n_file_nodes);
	count.pos = 2;
	records(&x, &count, &w);
	uint64_t blob_len = count.pos;
	uint64_t tail = 4 + 8 * x.n_file_nodes + 512;
	if (blob_len > INT32_MAX || w.pos + 4 + blob_len + tail > GCDUMP_MAX_LABEL) {
		ret = -EFBIG;
		snprintf(err, errlen, "the gcdump would be %llu bytes, more than the format's 4 GiB",
		         (unsigned long long)(w.pos + 4 + blob_len + tail));
		goto out;
	}
	bw_u32(&w, (uint32_t)blob_len);
	uint64_t blob_start = w.pos;
	bw_u8(&w, 0);
	bw_u8(&w, 0);
	records(&x, &w, NULL);
	if (!w.err && w.pos - blob_start != blob_len) {
		/* The graph changed between the passes: a caller's mistake. */
		ret = -EINVAL;
		snprintf(err, errlen, "the heap graph changed while its gcdump was written");
		goto out;
	}

	bw_u32(&w, (uint32_t)x.n_file_nodes);
	for (uint64_t i = 0; i < x.obj_node_base; i++)
		bw_u64(&w, 0);
	for (size_t i = 0; i < x.n_nodes && !w.err; i++)
		bw_u64(&w, hg_node(g, i)->addr);
	bw_u8(&w, TAG_BYTE);
	bw_u8(&w, meta->pointer_size == 8);
	bw_u8(&w, TAG_END); /* the graph */

	bw_u8(&w, meta->pointer_size == 8);
	bw_f32(&w, 1.0f);
	bw_f32(&w, 1.0f);
	bw_u8(&w, TAG_NULL); /* JSHeapInfo */
	write_heap_info(&x, &w);
	const struct hg_cut *cut = hg_cut(g);
	snprintf(log, sizeof(log),
	         "dumpwatch heap snapshot: cut past its limits %llu objects, %llu references, %llu types, %llu roots; "
	         "references to unknown objects %llu\n",
	         (unsigned long long)(cut ? cut->nodes : 0), (unsigned long long)(cut ? cut->edges : 0),
	         (unsigned long long)(cut ? cut->types : 0), (unsigned long long)(cut ? cut->roots : 0),
	         (unsigned long long)x.st.edges_dropped);
	bw_str(&w, log);
	bw_u64(&w, meta->time_unix_ns > 0 ? (uint64_t)(TICKS_AT_UNIX_EPOCH + meta->time_unix_ns / 100) : 0);
	bw_str(&w, meta->machine_name);
	bw_str(&w, meta->process_name);
	bw_i32(&w, meta->pid);
	bw_u64(&w, meta->process_commit);
	bw_u64(&w, meta->process_working_set);
	bw_i32(&w, 0); /* no per-type count multipliers */
	/* Tagged: the interop info, null, in a skip region whose end is forward
	 * reference 0; then the tool's name. */
	bw_u8(&w, TAG_SKIP_REGION);
	bw_i32(&w, 0);
	bw_u8(&w, TAG_NULL);
	uint64_t fwd0 = w.pos;
	bw_u8(&w, TAG_STRING);
	bw_str(&w, "dumpwatch");
	bw_u8(&w, TAG_END); /* GCHeapDump */
	bw_u8(&w, TAG_END); /* the end of the objects */
	uint64_t fwd_table = w.pos;
	bw_u32(&w, 1);
	bw_u32(&w, (uint32_t)fwd0);
	uint64_t trailer = w.pos;
	bw_u32(&w, (uint32_t)fwd_table);
	bw_u32(&w, (uint32_t)trailer);
	bw_flush(&w);
	if (w.err) {
		ret = w.err;
		snprintf(err, errlen, "writing the gcdump failed after %llu bytes: %s", (unsigned long long)w.pos,
		         errno_sentence(w.err));
		goto out;
	}
	x.st.bytes = w.pos;
	ret = 0;
out:
	if (meta->out_stats)
		*meta->out_stats = x.st;
	free(w.buf);
	free(x.mask);
	free(x.first_type);
	free(x.type_bytes);
	return ret;
}
