/* The heap snapshot's graph: decoders for the runtime provider's heap-walk
 * events and the assembly of what they say into nodes, edges, roots and
 * types; see heapgraph.h.
 *
 * Payload layouts (dotnet/runtime src/coreclr/vm/ClrEtwAll.man, templates
 * GCBulkType, GCBulkRootEdge, GCBulkRootConditionalWeakTableElementEdge,
 * GCBulkNode, GCBulkEdge, GCGenerationRange, GCBulkRootCCW, GCBulkRCW,
 * GCBulkRootStaticVar; version 0 of each is what .NET 8, 9 and 10 send).
 * Payloads are packed; P is the trace's pointer size (win:Pointer):
 *
 *   GCBulkType         u32 Count, u16 ClrInstanceID, then Count x
 *                      { u64 TypeID, u64 ModuleID, u32 TypeNameID, u32 Flags,
 *                        u8 CorElementType, UTF-16 Name, u32 TypeParameterCount,
 *                        u64 TypeParameters[TypeParameterCount] }
 *   GCBulkRootEdge     u32 Index, u32 Count, u16 ClrInstanceID, then Count x
 *                      { P RootedNodeAddress, u8 GCRootKind, u32 GCRootFlag, P GCRootID }
 *   GCBulkRootCWTEdge  u32 Index, u32 Count, u16, Count x { P Key, P Value, P RootID }
 *   GCBulkNode         u32 Index, u32 Count, u16, Count x
 *                      { P Address, u64 Size, u64 TypeID, u64 EdgeCount }
 *   GCBulkEdge         u32 Index, u32 Count, u16, Count x { P Value, u32 ReferencingFieldID }
 *   GCGenerationRange  u8 Generation, P RangeStart, u64 RangeUsedLength,
 *                      u64 RangeReservedLength, u16 ClrInstanceID
 *   GCBulkRootCCW      u32 Count, u16, Count x { u64 GCRootID, u64 ObjectID, u64 TypeID,
 *                      u64 IUnknown, u32 RefCount, u32 PeggedRefCount, u32 Flags }
 *   GCBulkRCW          u32 Count, u16, Count x { u64 ObjectID, u64 TypeID, u64 IUnknown,
 *                      u64 VTable, u32 RefCount, u32 Flags }
 *   GCBulkRootStaticVar u32 Count, u64 AppDomainID, u16, Count x
 *                      { u64 GCRootID, u64 ObjectID, u64 TypeID, u32 Flags, UTF-16 FieldName }
 *
 * Nodes carry an EdgeCount; their edges come in GCBulkEdge events in the
 * same order (node i's edges follow node i-1's), batched independently of the
 * nodes, so an edge batch may arrive before the node batch it belongs to.
 * Edges are kept as target addresses in arrival order and node i's first
 * edge is the sum of the earlier nodes' counts; hg_finish then sorts the
 * nodes by address and turns each target address into a node index, in
 * place (the 8-byte addresses become 4-byte indices in the same buffer).
 *
 * Memory: 32 bytes a node, 8 bytes an edge while the walk arrives and 4
 * after hg_finish, the type names, and the roots. The Index of each bulk
 * event is checked: a gap means the runtime dropped a batch (its buffer was
 * full), which is counted, since the edges after it no longer line up. */
#include "dumpwatch/heapgraph.h"

#include "heapgraph_shared.h"

#include "dumpwatch/events.h"
#include "dumpwatch/le.h"
#include "dumpwatch/text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define EV_GC_START 1
#define EV_GC_END 2
#define EV_GC_RESTART_EE_END 3
#define EV_GC_HEAP_STATS 4
#define EV_GC_SUSPEND_EE_BEGIN 9

/* A type name longer than this (UTF-8 bytes) is cut; generic names of a few
 * hundred bytes are common, thousands are not. */
#define NAME_MAX_BYTES 2048
#define NAME_MAX_UNITS 65535
#define MAX_RANGES 1048576
/* A histogram's (type, MiB) counters: 48 bytes each, in a table at most half
 * full: 100 MB at most. Past them, objects are counted in no MiB (unplaced). */
#define MAX_CELLS 1048576

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

static uint64_t rdptr(const uint8_t *p, int ps)
{
	return ps == 4 ? le32_at(p) : le64_at(p);
}

/* Grows *arr to hold at least need elements of size sz, doubling. 0 or -ENOMEM. */
static int grow(void **arr, size_t *cap, size_t need, size_t sz)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 1024;
	while (n < need)
		n *= 2;
	if (n > SIZE_MAX / sz)
		return -ENOMEM;
	void *p = realloc(*arr, n * sz);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

/* The two big arrays, nodes and edges, live in mappings of their own that
 * grow with mremap: a growth never copies, never holds the old and the new
 * array at once, and pages are resident only once written. cap counts
 * elements. */
static int grow_mapped(void **arr, size_t *cap, size_t need, size_t sz)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 65536;
	while (n < need)
		n *= 2;
	if (n > SIZE_MAX / sz)
		return -ENOMEM;
	void *p = *arr ? mremap(*arr, *cap * sz, n * sz, MREMAP_MAYMOVE)
	               : mmap(NULL, n * sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

static void free_mapped(void *arr, size_t cap, size_t sz)
{
	if (arr)
		munmap(arr, cap * sz);
}

struct heapgraph *hg_new(const struct hg_limits *lim)
{
	struct heapgraph *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->lim.max_nodes = 20000000;
	g->lim.max_edges = 80000000;
	g->lim.max_types = 1000000;
	g->lim.max_roots = 4000000;
	g->lim.max_name_bytes = 64u << 20;
	if (lim) {
		if (lim->max_nodes)
			g->lim.max_nodes = lim->max_nodes;
		if (lim->max_edges)
			g->lim.max_edges = lim->max_edges;
		if (lim->max_types)
			g->lim.max_types = lim->max_types;
		if (lim->max_roots)
			g->lim.max_roots = lim->max_roots;
		if (lim->max_name_bytes)
			g->lim.max_name_bytes = lim->max_name_bytes;
	}
	/* Indices are u32 with HG_NONE reserved. */
	if (g->lim.max_nodes >= HG_NONE)
		g->lim.max_nodes = HG_NONE - 1;
	if (g->lim.max_edges >= HG_NONE)
		g->lim.max_edges = HG_NONE - 1;
	if (g->lim.max_types >= HG_NONE)
		g->lim.max_types = HG_NONE - 1;
	if (g->lim.max_roots >= HG_NONE)
		g->lim.max_roots = HG_NONE - 1;
	return g;
}

struct heapgraph *hg_new_histogram(const struct hg_limits *lim)
{
	struct heapgraph *g = hg_new(lim);

	if (g)
		g->histogram = 1;
	return g;
}

int hg_is_histogram(const struct heapgraph *g)
{
	return g->histogram;
}

void hg_free(struct heapgraph *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n_types; i++)
		free(g->types[i].name);
	for (size_t i = 0; i < g->n_roots; i++) {
		free(g->roots[i].name);
		free(g->roots[i].owner);
	}
	free(g->types);
	free(g->type_hash);
	free_mapped(g->nodes, g->cap_nodes, sizeof(*g->nodes));
	free_mapped(g->edges, g->cap_edges, sizeof(uint64_t));
	free(g->roots);
	free(g->root_addr);
	free(g->ranges);
	free(g->cells);
	free(g->tallies);
	free(g);
}

/* ---- types: a table of TypeIDs, a name each ---- */

static size_t hash_slot(uint64_t id, size_t cap)
{
	return (size_t)((id * 0x9E3779B97F4A7C15ULL) >> 17) & (cap - 1);
}

static int rehash(struct heapgraph *g)
{
	size_t cap = g->hash_cap ? g->hash_cap * 2 : 4096;
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < g->n_types; i++) {
		size_t s = hash_slot(g->types[i].id, cap);
		while (h[s])
			s = (s + 1) & (cap - 1);
		h[s] = (uint32_t)i + 1;
	}
	free(g->type_hash);
	g->type_hash = h;
	g->hash_cap = cap;
	return 0;
}

static uint32_t type_lookup(const struct heapgraph *g, uint64_t id)
{
	if (!g->hash_cap)
		return HG_NONE;
	size_t s = hash_slot(id, g->hash_cap);
	while (g->type_hash[s]) {
		uint32_t i = g->type_hash[s] - 1;
		if (g->types[i].id == id)
			return i;
		s = (s + 1) & (g->hash_cap - 1);
	}
	return HG_NONE;
}

/* The index of type id, added (nameless for now) when new. HG_NONE when the
 * type limit cut it (counted once per type id not kept... counted each time:
 * the count says how many references lost their type). *ret_err -ENOMEM. */
static uint32_t type_intern(struct heapgraph *g, uint64_t id, int *ret_err)
{
	uint32_t i = type_lookup(g, id);

	if (i != HG_NONE)
		return i;
	if (g->n_types >= g->lim.max_types) {
		g->cut.types++;
		return HG_NONE;
	}
	if ((g->n_types + 1) * 2 > g->hash_cap && rehash(g) < 0)
		goto oom;
	if (grow((void **)&g->types, &g->cap_types, g->n_types + 1, sizeof(*g->types)) < 0)
		goto oom;
	i = (uint32_t)g->n_types++;
	g->types[i] = (struct hg_type){.id = id};
	size_t s = hash_slot(id, g->hash_cap);
	while (g->type_hash[s])
		s = (s + 1) & (g->hash_cap - 1);
	g->type_hash[s] = i + 1;
	return i;
oom:
	*ret_err = -ENOMEM;
	return HG_NONE;
}

/* Reads the UTF-16 string at p (avail bytes) into a new UTF-8 string,
 * cut at NAME_MAX_BYTES. Returns the bytes it occupied, 0 when it has no NUL
 * within avail (or within NAME_MAX_UNITS). *ret_name NULL when out of memory. */
static size_t read_name(const uint8_t *p, size_t avail, char **ret_name)
{
	size_t units, len;

	*ret_name = NULL;
	if (text_utf16_scan(p, avail, NAME_MAX_UNITS, &units, &len) < 0)
		return 0;
	if (len >= NAME_MAX_BYTES)
		len = NAME_MAX_BYTES - 1;
	char *s = malloc(len + 1);
	if (s)
		text_utf16_to_utf8(p, units, s, len + 1);
	*ret_name = s;
	return 2 * units + 2;
}

/* Writes a type name as PerfView and dotnet-gcdump show it, in place:
 * "System.Collections.Generic.List`1[System.Byte[]]" becomes
 * "System.Collections.Generic.List<System.Byte[]>" (the arity dropped, the
 * type arguments in angle brackets); array ranks ("[]", "[,]") stay. The
 * result is never longer than the name. */
static void display_name(char *s)
{
	/* Whether each open bracket (up to a depth of 64) was a generic's. */
	uint64_t generic = 0;
	int depth = 0;
	char *w = s;

	for (const char *r = s; *r; r++) {
		if (*r == '`' && r[1] >= '0' && r[1] <= '9') {
			while (r[1] >= '0' && r[1] <= '9')
				r++;
			continue;
		}
		if (*r == '[') {
			size_t commas = strspn(r + 1, ",");
			if (r[1 + commas] == ']') { /* an array rank */
				memmove(w, r, commas + 2);
				w += commas + 2;
				r += commas + 1;
				continue;
			}
			if (depth < 64)
				generic |= 1ULL << depth;
			depth++;
			*w++ = '<';
			continue;
		}
		if (*r == ']' && depth > 0) {
			depth--;
			*w++ = depth < 64 && (generic >> depth & 1) ? '>' : ']';
			continue;
		}
		*w++ = *r;
	}
	*w = '\0';
}

static int bulk_type(struct heapgraph *g, const uint8_t *p, size_t len, char *err, size_t errlen)
{
	if (len < 6)
		return bad(err, errlen, "GCBulkType: payload of %zu bytes, need 6", len);
	uint32_t count = le32_at(p);
	size_t off = 6;
	for (uint32_t k = 0; k < count; k++) {
		if (len - off < 25)
			return bad(err, errlen, "GCBulkType: type %u of %u ends at byte %zu of %zu", k, count, off,
			           len);
		uint64_t id = le64_at(p + off), module = le64_at(p + off + 8);
		off += 25;
		size_t units;
		if (text_utf16_scan(p + off, len - off, NAME_MAX_UNITS, &units, NULL) < 0)
			return bad(err, errlen, "GCBulkType: the name of type %u of %u has no end", k, count);
		const uint8_t *name = p + off;
		off += 2 * units + 2;
		if (len - off < 4)
			return bad(err, errlen, "GCBulkType: type %u of %u ends in its parameter count", k, count);
		uint32_t n_params = le32_at(p + off);
		off += 4;
		if (n_params > (len - off) / 8)
			return bad(err, errlen,
			           "GCBulkType: type %u of %u declares %u type parameters, the payload holds %zu", k,
			           count, n_params, (len - off) / 8);
		off += (size_t)n_params * 8;
		int e = 0;
		uint32_t i = type_intern(g, id, &e);
		if (e < 0)
			return e;
		if (i == HG_NONE || g->types[i].name)
			continue; /* cut, or named before (the runtime logs a type once a session, mostly) */
		g->types[i].module = module;
		if (g->name_bytes >= g->lim.max_name_bytes) {
			g->cut.names++;
			continue;
		}
		char *s;
		read_name(name, len - (size_t)(name - p), &s);
		if (!s)
			return -ENOMEM;
		display_name(s);
		g->name_bytes += strlen(s) + 1;
		g->types[i].name = s;
	}
	return 1;
}

static int add_root(struct heapgraph *g, uint64_t addr, uint8_t kind, uint32_t flags, uint64_t id, uint32_t owner_type,
                    char *name)
{
	if (addr == 0 || g->histogram) { /* a root that holds nothing (a cleared handle), or no graph */
		free(name);
		return 0;
	}
	if (g->n_roots >= g->lim.max_roots) {
		g->cut.roots++;
		free(name);
		return 0;
	}
	size_t cap = g->cap_roots;
	if (grow((void **)&g->roots, &cap, g->n_roots + 1, sizeof(*g->roots)) < 0 ||
	    grow((void **)&g->root_addr, &g->cap_roots, g->n_roots + 1, sizeof(*g->root_addr)) < 0) {
		free(name);
		return -ENOMEM;
	}
	g->roots[g->n_roots] = (struct hg_root){
	    .node = HG_NONE, .kind = kind, .flags = flags, .id = id, .owner_type = owner_type, .name = name};
	g->root_addr[g->n_roots++] = addr;
	return 0;
}

/* The header of the Index/Count events: checks that Count values of sz
 * bytes fit. Returns the count, or -EBADMSG. */
static int64_t indexed_header(const uint8_t *p, size_t len, size_t sz, const char *what, uint32_t *ret_index, char *err,
                              size_t errlen)
{
	if (len < 10)
		return bad(err, errlen, "%s: payload of %zu bytes, need 10", what, len);
	uint32_t count = le32_at(p + 4);
	if (count > (len - 10) / sz)
		return bad(err, errlen, "%s: %u values declared, the payload of %zu bytes holds %zu", what, count, len,
		           (len - 10) / sz);
	*ret_index = le32_at(p);
	return count;
}

static int bulk_root_edge(struct heapgraph *g, const uint8_t *p, size_t len, int ps, char *err, size_t errlen)
{
	size_t sz = 2 * (size_t)ps + 5;
	uint32_t index;
	int64_t count = indexed_header(p, len, sz, "GCBulkRootEdge", &index, err, errlen);
	if (count < 0)
		return (int)count;
	for (int64_t k = 0; k < count; k++) {
		const uint8_t *v = p + 10 + (size_t)k * sz;
		uint8_t kind = v[ps];
		if (kind > HG_ROOT_OVERFLOW)
			kind = HG_ROOT_OTHER;
		int r = add_root(g, rdptr(v, ps), kind, le32_at(v + ps + 1), rdptr(v + ps + 5, ps), HG_NONE, NULL);
		if (r < 0)
			return r;
	}
	return 1;
}

static int bulk_root_cwt(struct heapgraph *g, const uint8_t *p, size_t len, int ps, char *err, size_t errlen)
{
	size_t sz = 3 * (size_t)ps;
	uint32_t index;
	int64_t count = indexed_header(p, len, sz, "GCBulkRootConditionalWeakTableElementEdge", &index, err, errlen);
	if (count < 0)
		return (int)count;
	for (int64_t k = 0; k < count; k++) {
		const uint8_t *v = p + 10 + (size_t)k * sz;
		/* The value lives as long as its key: held by a dependent handle. */
		int r = add_root(g, rdptr(v + ps, ps), HG_ROOT_CWT, 0, rdptr(v + 2 * ps, ps), HG_NONE, NULL);
		if (r < 0)
			return r;
	}
	return 1;
}

/* ---- a histogram's cells ---- */

static size_t cell_slot(uint32_t type, uint64_t mib, size_t cap)
{
	return (size_t)(((mib * 0x9E3779B97F4A7C15ULL) ^ (type * 0xC2B2AE3D27D4EB4FULL)) >> 17) & (cap - 1);
}

static struct cell *cell_find(struct cell *v, size_t cap, uint32_t type, uint64_t mib)
{
	size_t s = cell_slot(type, mib, cap);
	while (v[s].count && (v[s].type != type || v[s].mib != mib))
		s = (s + 1) & (cap - 1);
	return &v[s];
}

static int cells_rehash(struct heapgraph *g)
{
	size_t cap = g->cap_cells ? g->cap_cells * 2 : 4096;
	struct cell *v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < g->cap_cells; i++)
		if (g->cells[i].count)
			*cell_find(v, cap, g->cells[i].type, g->cells[i].mib) = g->cells[i];
	free(g->cells);
	g->cells = v;
	g->cap_cells = cap;
	return 0;
}

/* Counts one object in its cell. Past MAX_CELLS cells, a new (type, MiB)
 * goes to the type's cell of no MiB, whose generation is unknown. */
static int cell_add(struct heapgraph *g, uint32_t type, uint64_t addr, uint64_t size)
{
	uint64_t mib = addr >> 20;

	if ((g->n_cells + 1) * 2 > g->cap_cells && cells_rehash(g) < 0)
		return -ENOMEM;
	struct cell *c = cell_find(g->cells, g->cap_cells, type, mib);
	if (!c->count && g->n_cells >= MAX_CELLS) {
		mib = CELL_NO_MIB;
		c = cell_find(g->cells, g->cap_cells, type, mib);
	}
	if (!c->count) {
		*c = (struct cell){.mib = mib, .type = type, .lo = addr, .hi = addr};
		g->n_cells++;
	}
	c->count++;
	c->bytes += size;
	if (addr < c->lo)
		c->lo = addr;
	if (addr > c->hi)
		c->hi = addr;
	return 0;
}

static int bulk_node(struct heapgraph *g, const uint8_t *p, size_t len, int ps, char *err, size_t errlen)
{
	size_t sz = (size_t)ps + 24;
	uint32_t index;
	int64_t count = indexed_header(p, len, sz, "GCBulkNode", &index, err, errlen);
	if (count < 0)
		return (int)count;
	if (index != g->next_node_index)
		g->cut.lost_batches++;
	g->next_node_index = index + 1;
	for (int64_t k = 0; k < count; k++) {
		const uint8_t *v = p + 10 + (size_t)k * sz;
		uint64_t n_edges = le64_at(v + ps + 16);
		if (n_edges > UINT32_MAX)
			return bad(err, errlen, "GCBulkNode: node %lld of %lld declares %llu references", (long long)k,
			           (long long)count, (unsigned long long)n_edges);
		if (g->histogram) {
			uint64_t tid = le64_at(v + ps + 8), size = le64_at(v + ps);
			int e = 0;
			uint32_t t = tid ? type_intern(g, tid, &e) : HG_NONE;
			if (e < 0 || (e = cell_add(g, t, rdptr(v, ps), size)) < 0)
				return e;
			g->walk_bytes += size;
			g->declared_edges += n_edges;
			continue;
		}
		if (g->n_nodes >= g->lim.max_nodes) {
			/* Its edges still arrive: they are cut at hg_finish, past
			 * the last node kept. */
			g->cut.nodes++;
			continue;
		}
		if (grow_mapped((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(*g->nodes)) < 0)
			return -ENOMEM;
		uint64_t tid = le64_at(v + ps + 8);
		int e = 0;
		uint32_t t = tid ? type_intern(g, tid, &e) : HG_NONE;
		if (e < 0)
			return e;
		uint64_t first = g->declared_edges;
		g->walk_bytes += le64_at(v + ps);
		g->nodes[g->n_nodes++] = (struct hg_node){
		    .addr = rdptr(v, ps),
		    .size = le64_at(v + ps),
		    .type = t,
		    .first_edge = first >= HG_NONE ? HG_NONE : (uint32_t)first,
		    .n_edges = (uint32_t)n_edges,
		    .gen = HG_GEN_UNKNOWN,
		};
		g->declared_edges += n_edges;
	}
	return 1;
}

static int bulk_edge(struct heapgraph *g, const uint8_t *p, size_t len, int ps, char *err, size_t errlen)
{
	size_t sz = (size_t)ps + 4;
	uint32_t index;
	int64_t count = indexed_header(p, len, sz, "GCBulkEdge", &index, err, errlen);
	if (count < 0)
		return (int)count;
	if (index != g->next_edge_index)
		g->cut.lost_batches++;
	g->next_edge_index = index + 1;
	if (g->histogram) { /* counted, not kept */
		g->n_edges += (size_t)count;
		return 1;
	}
	size_t keep = (size_t)count;
	if (g->n_edges + keep > g->lim.max_edges) {
		keep = (size_t)(g->lim.max_edges - g->n_edges);
		g->cut.edges += (uint64_t)count - keep;
	}
	if (grow_mapped(&g->edges, &g->cap_edges, g->n_edges + keep, sizeof(uint64_t)) < 0)
		return -ENOMEM;
	uint64_t *e = g->edges;
	for (size_t k = 0; k < keep; k++)
		e[g->n_edges++] = rdptr(p + 10 + k * sz, ps);
	return 1;
}

static int generation_range(struct heapgraph *g, const uint8_t *p, size_t len, int ps, char *err, size_t errlen)
{
	if (len < 17 + (size_t)ps)
		return bad(err, errlen, "GCGenerationRange: payload of %zu bytes, need %d", len, 17 + ps);
	uint8_t gen = p[0];
	uint64_t start = rdptr(p + 1, ps), used = le64_at(p + 1 + ps);
	if (gen > HG_POH || used == 0 || start + used < start)
		return 1; /* a generation this reader has no place for, or empty */
	if (g->n_ranges >= MAX_RANGES)
		return 1;
	if (grow((void **)&g->ranges, &g->cap_ranges, g->n_ranges + 1, sizeof(*g->ranges)) < 0)
		return -ENOMEM;
	g->ranges[g->n_ranges++] = (struct range){
	    .start = start, .end = start + used, .gen = gen, .in_walk = (uint8_t)(g->gc_started && !g->gc_ended)};
	return 1;
}

static int bulk_root_ccw(struct heapgraph *g, const uint8_t *p, size_t len, char *err, size_t errlen)
{
	if (len < 6)
		return bad(err, errlen, "GCBulkRootCCW: payload of %zu bytes, need 6", len);
	uint32_t count = le32_at(p);
	if (count > (len - 6) / 44)
		return bad(err, errlen, "GCBulkRootCCW: %u values declared, the payload holds %zu", count,
		           (len - 6) / 44);
	for (uint32_t k = 0; k < count; k++) {
		const uint8_t *v = p + 6 + (size_t)k * 44;
		int r = add_root(g, le64_at(v + 8), HG_ROOT_COM, le32_at(v + 40), le64_at(v), HG_NONE, NULL);
		if (r < 0)
			return r;
	}
	return 1;
}

static int bulk_rcw(struct heapgraph *g, const uint8_t *p, size_t len, char *err, size_t errlen)
{
	if (len < 6)
		return bad(err, errlen, "GCBulkRCW: payload of %zu bytes, need 6", len);
	uint32_t count = le32_at(p);
	if (count > (len - 6) / 40)
		return bad(err, errlen, "GCBulkRCW: %u values declared, the payload holds %zu", count, (len - 6) / 40);
	for (uint32_t k = 0; k < count; k++) {
		const uint8_t *v = p + 6 + (size_t)k * 40;
		int r = add_root(g, le64_at(v), HG_ROOT_COM, le32_at(v + 36), le64_at(v + 16), HG_NONE, NULL);
		if (r < 0)
			return r;
	}
	return 1;
}

static int bulk_root_static(struct heapgraph *g, const uint8_t *p, size_t len, char *err, size_t errlen)
{
	if (len < 14)
		return bad(err, errlen, "GCBulkRootStaticVar: payload of %zu bytes, need 14", len);
	uint32_t count = le32_at(p);
	size_t off = 14;
	for (uint32_t k = 0; k < count; k++) {
		if (len - off < 30)
			return bad(err, errlen, "GCBulkRootStaticVar: value %u of %u ends at byte %zu of %zu", k, count,
			           off, len);
		const uint8_t *v = p + off;
		char *name;
		size_t used = read_name(v + 28, len - off - 28, &name);
		if (used == 0)
			return bad(err, errlen, "GCBulkRootStaticVar: the field name of value %u of %u has no end", k,
			           count);
		if (!name)
			return -ENOMEM;
		off += 28 + used;
		int e = 0;
		uint64_t tid = le64_at(v + 16);
		uint32_t owner = tid ? type_intern(g, tid, &e) : HG_NONE;
		if (e < 0) {
			free(name);
			return e;
		}
		int r = add_root(g, le64_at(v + 8), HG_ROOT_STATIC, le32_at(v + 24), le64_at(v), owner, name);
		if (r < 0)
			return r;
	}
	return 1;
}

static void count_lost(struct heapgraph *g, const struct nettrace_event *ev)
{
	for (size_t i = 0; i < g->n_seqs; i++) {
		struct seq *q = &g->seqs[i];
		if (q->thread != ev->capture_thread_id)
			continue;
		if (ev->sequence > q->last + 1)
			g->cut.lost_events += ev->sequence - q->last - 1;
		q->last = ev->sequence;
		return;
	}
	if (g->n_seqs < SEQ_THREADS)
		g->seqs[g->n_seqs++] = (struct seq){.thread = ev->capture_thread_id, .last = ev->sequence};
}

/* GCStart: v1+ u32 Count, u32 Depth, u32 Reason, u32 Type. The walk is the
 * first blocking gen2 GC of the session (what dotnet-gcdump waits for). */
static void gc_start(struct heapgraph *g, const struct nettrace_event *ev)
{
	if (g->gc_started || ev->meta->version < 1 || ev->payload_size < 16)
		return;
	uint32_t depth = le32_at(ev->payload + 4), type = le32_at(ev->payload + 12);
	if (depth != 2 || type == 1) /* 1: a background GC, which does not walk */
		return;
	g->gc_count = le32_at(ev->payload);
	g->gc_started = 1;
	g->walk_begin = ev->timestamp;
	g->pause_begin = g->suspend_ts;
}

int hg_feed(struct heapgraph *g, const struct nettrace_event *ev, int pointer_size, char *err, size_t errlen)
{
	const struct nettrace_metadata *m = ev->meta;

	if (!m || !m->provider || strcmp(m->provider, EV_RUNTIME_PROVIDER) != 0)
		return 0;
	if (g->finished)
		return 0;
	if (pointer_size != 4 && pointer_size != 8)
		return bad(err, errlen, "pointer size %d", pointer_size);
	const uint8_t *p = ev->payload;
	size_t len = ev->payload_size;
	count_lost(g, ev);
	switch (m->event_id) {
	case EV_GC_SUSPEND_EE_BEGIN:
		if (!g->gc_started)
			g->suspend_ts = ev->timestamp;
		return 1;
	case EV_GC_START:
		gc_start(g, ev);
		return 1;
	case EV_GC_END:
		if (g->gc_started && !g->gc_ended && len >= 4 && le32_at(p) == g->gc_count) {
			g->gc_ended = 1;
			g->walk_end = ev->timestamp;
		}
		return 1;
	case EV_GC_HEAP_STATS:
		/* v0/v1: GenerationSize0..3 at 0, 16, 32, 48 (each followed by
		 * its promoted size); v2 (.NET 5+): GenerationSize4 at 94. */
		if (g->gc_started && !g->reported_bytes && len >= 56) {
			g->reported_bytes = le64_at(p) + le64_at(p + 16) + le64_at(p + 32) + le64_at(p + 48);
			if (m->version >= 2 && len >= 102)
				g->reported_bytes += le64_at(p + 94);
		}
		return 1;
	case EV_GC_RESTART_EE_END:
		/* The walk's GC has ended even when its GCEnd was lost. */
		if (g->gc_started && !g->gc_ended) {
			g->gc_ended = 1;
			g->walk_end = ev->timestamp;
		}
		if (g->gc_ended && !g->pause_end)
			g->pause_end = ev->timestamp;
		return 1;
	default:
		break;
	}
	switch (m->event_id) {
	case HG_EV_BULK_TYPE:
	case HG_EV_BULK_ROOT_EDGE:
	case HG_EV_BULK_ROOT_CWT_EDGE:
	case HG_EV_BULK_NODE:
	case HG_EV_BULK_EDGE:
	case HG_EV_GENERATION_RANGE:
	case HG_EV_BULK_ROOT_CCW:
	case HG_EV_BULK_RCW:
	case HG_EV_BULK_ROOT_STATIC_VAR:
		/* Version 0 is the only one: a later one may change the size
		 * of the values, which would be misread. */
		if (m->version != 0)
			return bad(err, errlen, "runtime event %u: version %u is not known here", m->event_id,
			           m->version);
		break;
	default:
		return 0;
	}
	switch (m->event_id) {
	case HG_EV_BULK_TYPE:
		return bulk_type(g, p, len, err, errlen);
	case HG_EV_BULK_ROOT_EDGE:
		return bulk_root_edge(g, p, len, pointer_size, err, errlen);
	case HG_EV_BULK_ROOT_CWT_EDGE:
		return bulk_root_cwt(g, p, len, pointer_size, err, errlen);
	case HG_EV_BULK_NODE:
		return bulk_node(g, p, len, pointer_size, err, errlen);
	case HG_EV_BULK_EDGE:
		return bulk_edge(g, p, len, pointer_size, err, errlen);
	case HG_EV_GENERATION_RANGE:
		return generation_range(g, p, len, pointer_size, err, errlen);
	case HG_EV_BULK_ROOT_CCW:
		return bulk_root_ccw(g, p, len, err, errlen);
	case HG_EV_BULK_RCW:
		return bulk_rcw(g, p, len, err, errlen);
	default:
		return bulk_root_static(g, p, len, err, errlen);
	}
}

int hg_walk_done(const struct heapgraph *g)
{
	return g->gc_started && g->gc_ended;
}
