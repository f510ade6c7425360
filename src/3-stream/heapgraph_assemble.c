/* The heap graph's assembly, once the walk has arrived: the nodes sorted by
 * address in place, edge targets and roots resolved to node indices, objects
 * placed in generations; and the accessors. See heapgraph.h, and
 * heapgraph.c for the decoders that fill it. */
#include "dumpwatch/heapgraph.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "heapgraph_shared.h"

/* Sorts the nodes by address in place. Not qsort: glibc's (2.36, Debian 12)
 * is a merge sort that mallocs a copy of the array, 32 bytes more an object
 * at the peak (1 M objects: 72 MB instead of 45 MB). A quicksort (median of
 * three, the smaller side first so the stack stays O(log n)) that turns to
 * heapsort past 2 log2 n levels, so that no input makes it quadratic. The
 * walk gives the nodes mostly in order already: checked first. */
static void swap_nodes(struct hg_node *a, struct hg_node *b)
{
	struct hg_node t = *a;
	*a = *b;
	*b = t;
}

static void sift_down(struct hg_node *v, size_t root, size_t n)
{
	for (;;) {
		size_t c = 2 * root + 1;
		if (c >= n)
			return;
		if (c + 1 < n && v[c + 1].addr > v[c].addr)
			c++;
		if (v[root].addr >= v[c].addr)
			return;
		swap_nodes(&v[root], &v[c]);
		root = c;
	}
}

static void heap_sort(struct hg_node *v, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift_down(v, i, n);
	for (size_t end = n; end-- > 1;) {
		swap_nodes(&v[0], &v[end]);
		sift_down(v, 0, end);
	}
}

static void sort_nodes(struct hg_node *v, size_t n, int depth)
{
	while (n > 16) {
		if (depth-- <= 0) {
			heap_sort(v, n);
			return;
		}
		size_t mid = n / 2;
		if (v[mid].addr < v[0].addr)
			swap_nodes(&v[mid], &v[0]);
		if (v[n - 1].addr < v[0].addr)
			swap_nodes(&v[n - 1], &v[0]);
		if (v[n - 1].addr < v[mid].addr)
			swap_nodes(&v[n - 1], &v[mid]);
		uint64_t pivot = v[mid].addr;
		size_t i = 0, j = n - 1;
		for (;;) {
			while (v[i].addr < pivot)
				i++;
			while (v[j].addr > pivot)
				j--;
			if (i >= j)
				break;
			swap_nodes(&v[i], &v[j]);
			i++;
			j--;
		}
		/* [0, j] and [j + 1, n) */
		size_t left = j + 1;
		if (left < n - left) {
			sort_nodes(v, left, depth);
			v += left;
			n -= left;
		} else {
			sort_nodes(v + left, n - left, depth);
			n = left;
		}
	}
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && v[k - 1].addr > v[k].addr; k--)
			swap_nodes(&v[k - 1], &v[k]);
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

uint32_t hg_find(const struct heapgraph *g, uint64_t addr)
{
	size_t lo = 0, hi = g->n_nodes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (g->nodes[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->n_nodes && g->nodes[lo].addr == addr ? (uint32_t)lo : HG_NONE;
}

static uint8_t place(const struct range *r, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	/* The last range starting at or below addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= r[lo - 1].end)
		return HG_GEN_UNKNOWN;
	return r[lo - 1].gen;
}

/* Generations: the ranges the runtime gave during the walk, or all when
 * none came then, sorted by start, at the front of g->ranges. Their count. */
static size_t select_ranges(struct heapgraph *g)
{
	size_t n = 0;
	int any_walk = 0;
	for (size_t i = 0; i < g->n_ranges; i++)
		any_walk |= g->ranges[i].in_walk;
	for (size_t i = 0; i < g->n_ranges; i++)
		if (!any_walk || g->ranges[i].in_walk)
			g->ranges[n++] = g->ranges[i];
	if (n)
		qsort(g->ranges, n, sizeof(*g->ranges), cmp_range);
	return n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* How many of the sorted v[n] are at most x. */
static size_t count_le(const uint64_t *v, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int name_types(struct heapgraph *g);
static int finish_histogram(struct heapgraph *g);

int hg_finish(struct heapgraph *g)
{
	if (g->finished)
		return 0;
	g->finished = 1;
	if (g->histogram)
		return finish_histogram(g);

	/* Each node's edges, as far as they arrived; the rest is cut. Edges
	 * past the last kept node's belong to nodes the limit dropped, or to
	 * none (more edges than the nodes declared). */
	for (size_t i = 0; i < g->n_nodes; i++) {
		struct hg_node *n = &g->nodes[i];
		uint64_t first = n->first_edge, end = first + n->n_edges;
		if (n->first_edge == HG_NONE || first >= g->n_edges) {
			n->first_edge = (uint32_t)g->n_edges;
			n->n_edges = 0;
		} else if (end > g->n_edges) {
			n->n_edges = (uint32_t)(g->n_edges - first);
		}
	}
	size_t used_edges = g->declared_edges < g->n_edges ? (size_t)g->declared_edges : g->n_edges;
	if (g->n_edges > used_edges && g->cut.nodes == 0)
		g->cut.extra_edges += g->n_edges - used_edges;

	int in_order = 1;
	for (size_t i = 1; i < g->n_nodes && in_order; i++)
		in_order = g->nodes[i - 1].addr <= g->nodes[i].addr;
	if (!in_order) {
		int depth = 0;
		for (size_t n = g->n_nodes; n > 1; n >>= 1)
			depth += 2;
		sort_nodes(g->nodes, g->n_nodes, depth);
	}

	/* Addresses to indices, in place: index k is written at byte 4k,
	 * after address k at byte 8k was read. */
	uint64_t *addr = g->edges;
	uint32_t *idx = g->edges;
	for (size_t k = 0; k < g->n_edges; k++) {
		uint64_t a = addr[k];
		uint32_t t = hg_find(g, a);
		if (t == HG_NONE && k < used_edges)
			g->cut.unresolved_edges++;
		idx[k] = t;
	}
	/* The upper half of what the indices no longer use goes back. */
	if (g->edges) {
		size_t page = 4096, used = (g->n_edges * sizeof(uint32_t) + page - 1) / page * page;
		size_t mapped = g->cap_edges * sizeof(uint64_t);
		if (used < mapped)
			madvise((char *)g->edges + used, mapped - used, MADV_DONTNEED);
	}

	for (size_t i = 0; i < g->n_roots; i++) {
		g->roots[i].node = hg_find(g, g->root_addr[i]);
		if (g->roots[i].node == HG_NONE)
			g->cut.unresolved_roots++;
	}
	free(g->root_addr);
	g->root_addr = NULL;

	size_t n = select_ranges(g);
	for (size_t i = 0; i < g->n_nodes; i++)
		g->nodes[i].gen = place(g->ranges, n, g->nodes[i].addr);
	return name_types(g);
}

/* A histogram's cells folded into a row a type: each cell's objects in the
 * generation of the range they lie in, when no range begins or ends between
 * its lowest and its highest object (place() is the same for all of them). */
static int finish_histogram(struct heapgraph *g)
{
	size_t n = select_ranges(g), nb = 0;
	uint64_t *bounds = malloc((2 * n + 1) * sizeof(*bounds));

	g->tallies = calloc(g->n_types + 1, sizeof(*g->tallies));
	if (!bounds || !g->tallies) {
		free(bounds);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		bounds[nb++] = g->ranges[i].start;
		bounds[nb++] = g->ranges[i].end;
	}
	if (nb)
		qsort(bounds, nb, sizeof(*bounds), cmp_u64);
	for (size_t i = 0; i < g->cap_cells; i++) {
		const struct cell *c = &g->cells[i];
		if (!c->count)
			continue;
		uint8_t gen = HG_GEN_UNKNOWN;
		if (c->mib != CELL_NO_MIB && count_le(bounds, nb, c->lo) == count_le(bounds, nb, c->hi))
			gen = place(g->ranges, n, c->lo);
		else
			g->cut.unplaced += c->count;
		struct hg_tally *t = &g->tallies[c->type < g->n_types ? c->type : g->n_types];
		t->count += c->count;
		t->bytes += c->bytes;
		t->gen_count[gen] += c->count;
		t->gen_bytes[gen] += c->bytes;
	}
	free(bounds);
	free(g->cells);
	g->cells = NULL;
	g->cap_cells = g->n_cells = 0;
	return name_types(g);
}

/* Types no GCBulkType named get a made-up name. */
static int name_types(struct heapgraph *g)
{
	for (size_t i = 0; i < g->n_types; i++) {
		if (g->types[i].name)
			continue;
		char buf[40];
		snprintf(buf, sizeof(buf), "Type 0x%llx", (unsigned long long)g->types[i].id);
		g->types[i].name = strdup(buf);
		if (!g->types[i].name)
			return -ENOMEM;
	}
	return 0;
}

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
	return i < g->n_nodes ? &g->nodes[i] : NULL;
}

const struct hg_type *hg_type(const struct heapgraph *g, size_t i)
{
	return i < g->n_types ? &g->types[i] : NULL;
}

const struct hg_root *hg_root(const struct heapgraph *g, size_t i)
{
	return i < g->n_roots ? &g->roots[i] : NULL;
}

int hg_root_set_owner(struct heapgraph *g, size_t i, const char *owner)
{
	if (i >= g->n_roots || g->roots[i].kind != HG_ROOT_STATIC)
		return -EINVAL;
	char *copy = owner ? strdup(owner) : NULL;
	if (owner && !copy)
		return -ENOMEM;
	free(g->roots[i].owner);
	g->roots[i].owner = copy;
	return 0;
}

const uint32_t *hg_edges(const struct heapgraph *g, size_t i, size_t *n)
{
	*n = 0;
	if (!g->finished || i >= g->n_nodes)
		return NULL;
	*n = g->nodes[i].n_edges;
	return *n ? (const uint32_t *)g->edges + g->nodes[i].first_edge : NULL;
}

const struct hg_cut *hg_cut(const struct heapgraph *g)
{
	return &g->cut;
}

uint32_t hg_gc_count(const struct heapgraph *g)
{
	return g->gc_count;
}

int hg_pause(const struct heapgraph *g, int64_t *ret_begin, int64_t *ret_end)
{
	if (!g->pause_begin || !g->pause_end || g->pause_end < g->pause_begin)
		return -ENODATA;
	*ret_begin = g->pause_begin;
	*ret_end = g->pause_end;
	return 0;
}

int hg_walk_span(const struct heapgraph *g, int64_t *ret_begin, int64_t *ret_end)
{
	if (!g->gc_started || !g->gc_ended)
		return -ENODATA;
	*ret_begin = g->walk_begin;
	*ret_end = g->walk_end;
	return 0;
}

const struct hg_tally *hg_tally(const struct heapgraph *g, size_t t)
{
	return g->tallies && t <= g->n_types ? &g->tallies[t] : NULL;
}

uint64_t hg_walk_bytes(const struct heapgraph *g)
{
	return g->walk_bytes;
}

uint64_t hg_reported_bytes(const struct heapgraph *g)
{
	return g->reported_bytes;
}
