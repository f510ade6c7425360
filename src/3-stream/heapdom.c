/* Dominators and retained sizes; see heapdom.h.
 *
 * Design. Node n stands for the virtual root, so the arrays have n + 1
 * entries. A depth-first search (iterative: a chain of 10 M objects is a
 * heap's ordinary linked list) numbers the reachable nodes in postorder;
 * from there on everything works on postorder numbers, so that the
 * predecessor lists, the dominator array and the "walk up until the two
 * fingers meet" step of Cooper-Harvey-Kennedy compare plain integers: an
 * object's dominator always has a higher number than the object.
 *
 *   po[x]      node -> postorder number (HG_NONE: not reached); once the
 *              predecessors are built, the same array holds idom by number
 *   order[i]   number -> node
 *   off, pred  predecessors by number (CSR, 4 bytes a reference), later the
 *              dominator tree's children
 *
 * Retained sizes then add up in postorder (children before their
 * dominators), and the per-type sums walk the dominator tree down once,
 * counting for each type how many of the current object's dominators are of
 * that type: an object adds its retained size to its type only when none
 * is. */
#include "dumpwatch/heapdom.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ON_STACK HD_ROOT /* in po[]: reached, not yet numbered */

void heapdom_free(struct heapdom *d)
{
	if (!d)
		return;
	free(d->idom);
	free(d->retained);
	free(d->type_retained);
	free(d);
}

const char *heapdom_why(const struct heapdom *d, char *buf, size_t len)
{
	switch (d->status) {
	case HD_DONE:
		snprintf(buf, len, "%s", "");
		break;
	case HD_TOO_MANY_NODES:
		snprintf(buf, len, "the heap has %zu objects, more than the %llu retained sizes are computed for",
		         d->n_nodes, (unsigned long long)d->lim.max_nodes);
		break;
	case HD_TOO_MANY_EDGES:
		snprintf(buf, len,
		         "the heap has more references and roots than the %llu retained sizes are computed for",
		         (unsigned long long)d->lim.max_edges);
		break;
	case HD_PASS_CAP:
		snprintf(buf, len, "the dominators had not settled after %u passes", d->lim.max_passes);
		break;
	case HD_STEP_CAP:
		snprintf(buf, len, "the dominators had not settled within %llu steps",
		         (unsigned long long)d->lim.max_steps);
		break;
	}
	return buf;
}

struct work {
	const struct heapgraph *g;
	uint32_t n;      /* nodes; n is the virtual root */
	uint32_t *rootv; /* the virtual root's successors: strongly rooted nodes */
	size_t n_rootv;
	uint32_t *po, *order; /* see above */
	uint32_t r;           /* numbered nodes, the virtual root included (its number is r - 1) */
	uint32_t *off, *pred;
	uint64_t steps;
};

static const uint32_t *succ(const struct work *w, uint32_t u, size_t *ne)
{
	if (u == w->n) {
		*ne = w->n_rootv;
		return w->rootv;
	}
	return hg_edges(w->g, u, ne);
}

/* Postorder numbers from the virtual root. */
static int number(struct work *w)
{
	uint32_t *stack = malloc(((size_t)w->n + 1) * sizeof(*stack));
	uint32_t *cursor = malloc(((size_t)w->n + 1) * sizeof(*cursor));
	size_t sp = 0;

	if (!stack || !cursor) {
		free(stack);
		free(cursor);
		return -ENOMEM;
	}
	for (size_t i = 0; i <= w->n; i++)
		w->po[i] = HG_NONE;
	w->r = 0;
	stack[sp] = w->n;
	cursor[sp++] = 0;
	w->po[w->n] = ON_STACK;
	while (sp) {
		uint32_t u = stack[sp - 1];
		size_t ne, k = cursor[sp - 1];
		const uint32_t *to = succ(w, u, &ne);
		for (; k < ne; k++) {
			uint32_t v = to[k];
			if (v < w->n && w->po[v] == HG_NONE)
				break;
		}
		w->steps += k - cursor[sp - 1];
		if (k < ne) {
			cursor[sp - 1] = (uint32_t)k + 1;
			w->po[to[k]] = ON_STACK;
			stack[sp] = to[k];
			cursor[sp++] = 0;
		} else {
			w->po[u] = w->r;
			w->order[w->r++] = u;
			sp--;
		}
	}
	free(stack);
	free(cursor);
	return 0;
}

/* Predecessors by number, from the references between reached nodes. */
static int predecessors(struct work *w)
{
	uint32_t r = w->r;
	size_t total = 0;

	w->off = calloc((size_t)r + 1, sizeof(*w->off));
	if (!w->off)
		return -ENOMEM;
	for (uint32_t i = 0; i < r; i++) {
		size_t ne;
		const uint32_t *to = succ(w, w->order[i], &ne);
		for (size_t k = 0; k < ne; k++) {
			uint32_t v = to[k];
			if (v < w->n && v != w->order[i] && w->po[v] < r) {
				w->off[w->po[v]]++;
				total++;
			}
		}
		w->steps += ne;
	}
	/* off[i] the end of i's list; filled downwards it becomes the start, and
	 * off[i + 1] (the next start) the end. */
	for (uint32_t i = 1; i < r; i++)
		w->off[i] += w->off[i - 1];
	w->off[r] = (uint32_t)total;
	w->pred = malloc((total ? total : 1) * sizeof(*w->pred));
	if (!w->pred)
		return -ENOMEM;
	for (uint32_t i = 0; i < r; i++) {
		size_t ne;
		const uint32_t *to = succ(w, w->order[i], &ne);
		for (size_t k = 0; k < ne; k++) {
			uint32_t v = to[k];
			if (v < w->n && v != w->order[i] && w->po[v] < r)
				w->pred[--w->off[w->po[v]]] = i;
		}
	}
	return 0;
}

/* Cooper-Harvey-Kennedy over reverse postorder; idom (by number) in po. */
static enum hd_status iterate(struct work *w, const struct hd_limits *lim, uint32_t *ret_passes)
{
	uint32_t r = w->r, *idom = w->po, passes = 0;
	int changed = 1;

	for (uint32_t i = 0; i + 1 < r; i++)
		idom[i] = HG_NONE;
	idom[r - 1] = r - 1;
	while (changed) {
		if (passes >= lim->max_passes) {
			*ret_passes = passes;
			return HD_PASS_CAP;
		}
		passes++;
		changed = 0;
		for (uint32_t i = r - 1; i-- > 0;) {
			uint32_t nd = HG_NONE;
			/* One predecessor is the dominator, from the first pass on. */
			if (passes > 1 && w->off[i + 1] - w->off[i] == 1)
				continue;
			for (uint32_t k = w->off[i]; k < w->off[i + 1]; k++) {
				uint32_t a = w->pred[k], b = nd;
				/* In the first pass, those numbered above i have been
				 * seen; the others not yet. */
				if (passes == 1 && a < i)
					continue;
				if (b == HG_NONE) {
					nd = a;
					continue;
				}
				uint64_t s = 0;
				while (a != b) {
					for (; a < b; s++)
						a = idom[a];
					for (; b < a; s++)
						b = idom[b];
				}
				nd = a;
				w->steps += s;
				if (w->steps > lim->max_steps) {
					*ret_passes = passes;
					return HD_STEP_CAP;
				}
			}
			w->steps += w->off[i + 1] - w->off[i];
			if (idom[i] != nd) {
				idom[i] = nd;
				changed = 1;
			}
		}
		if (w->steps > lim->max_steps) {
			*ret_passes = passes;
			return HD_STEP_CAP;
		}
	}
	*ret_passes = passes;
	return HD_DONE;
}

/* Retained sizes per node, and per type. */
static int retained(struct work *w, struct heapdom *d)
{
	const struct heapgraph *g = w->g;
	uint32_t r = w->r, n = w->n, *idom = w->po, *order = w->order;
	size_t nt = d->n_types;
	uint32_t *active, *cursor;

	/* The predecessors are done with: keep room for the r - 1 children. */
	uint32_t *p = realloc(w->pred, (r > 1 ? r - 1 : 1) * sizeof(*p));
	if (p)
		w->pred = p;
	d->retained = malloc(((size_t)n + 1) * sizeof(*d->retained));
	d->type_retained = calloc(nt + 1, sizeof(*d->type_retained));
	/* The search's cursors by number first, then idom by node. */
	d->idom = malloc(((size_t)n + 1) * sizeof(*d->idom));
	active = calloc(nt + 1, sizeof(*active));
	if (!d->retained || !d->type_retained || !d->idom || !active) {
		free(active);
		return -ENOMEM;
	}
	cursor = d->idom;
	for (uint32_t x = 0; x < n; x++)
		d->retained[x] = hg_node(g, x)->size;
	d->retained[n] = 0;
	for (uint32_t i = 0; i + 1 < r; i++)
		d->retained[order[idom[i]]] += d->retained[order[i]];
	d->reachable_count = r - 1;
	d->reachable_bytes = d->retained[n];

	/* The dominator tree's children by number, in place of the predecessors
	 * (each reached node had at least one, so pred is large enough). */
	memset(w->off, 0, ((size_t)r + 1) * sizeof(*w->off));
	for (uint32_t i = 0; i + 1 < r; i++)
		w->off[idom[i]]++;
	for (uint32_t i = 1; i < r; i++)
		w->off[i] += w->off[i - 1];
	w->off[r] = r - 1;
	for (uint32_t i = 0; i + 1 < r; i++)
		w->pred[--w->off[idom[i]]] = i;
	for (uint32_t i = 0; i < r; i++)
		cursor[i] = w->off[i];

	/* Down the tree from the virtual root, up by idom. */
	uint32_t x = r - 1;
	for (;;) {
		if (cursor[x] < w->off[x + 1]) {
			uint32_t c = w->pred[cursor[x]++], node = order[c];
			uint32_t t = hg_node(g, node)->type;
			if (t >= nt)
				t = (uint32_t)nt;
			if (active[t]++ == 0)
				d->type_retained[t] += d->retained[node];
			x = c;
		} else {
			if (x == r - 1)
				break;
			uint32_t t = hg_node(g, order[x])->type;
			active[t < nt ? t : nt]--;
			x = idom[x];
		}
	}
	free(active);

	for (uint32_t v = 0; v < n; v++)
		d->idom[v] = HG_NONE;
	for (uint32_t i = 0; i + 1 < r; i++)
		d->idom[order[i]] = idom[i] == r - 1 ? HD_ROOT : order[idom[i]];
	for (uint32_t v = 0; v < n; v++) {
		if (d->idom[v] != HG_NONE)
			continue;
		const struct hg_node *nd = hg_node(g, v);
		d->unreachable_count++;
		d->unreachable_bytes += nd->size;
		d->type_retained[nd->type < nt ? nd->type : nt] += nd->size;
	}
	return 0;
}

int heapdom_build(const struct heapgraph *g, const struct hd_limits *lim, struct heapdom **ret)
{
	size_t n = hg_n_nodes(g), nr = hg_n_roots(g), m = hg_n_edges(g);
	struct heapdom *d = calloc(1, sizeof(*d));
	struct work w = {.g = g};
	int e = 0;

	*ret = NULL;
	if (!d)
		return -ENOMEM;
	d->lim = (struct hd_limits){.max_nodes = 16000000, .max_edges = 80000000, .max_passes = 64};
	if (lim) {
		if (lim->max_nodes)
			d->lim.max_nodes = lim->max_nodes;
		if (lim->max_edges)
			d->lim.max_edges = lim->max_edges;
		if (lim->max_passes)
			d->lim.max_passes = lim->max_passes;
		d->lim.max_steps = lim->max_steps;
	}
	/* The arrays hold numbers below HD_ROOT and offsets below 2^32. */
	if (d->lim.max_nodes > HD_ROOT - 2)
		d->lim.max_nodes = HD_ROOT - 2;
	if (d->lim.max_edges > HG_NONE - 1)
		d->lim.max_edges = HG_NONE - 1;
	if (!d->lim.max_steps)
		d->lim.max_steps = 64 * ((uint64_t)n + m) + (1u << 20);
	d->n_nodes = n;
	d->n_types = hg_n_types(g);
	*ret = d;
	if (n > d->lim.max_nodes) {
		d->status = HD_TOO_MANY_NODES;
		return 0;
	}
	if ((uint64_t)m + nr > d->lim.max_edges) {
		d->status = HD_TOO_MANY_EDGES;
		return 0;
	}

	w.n = (uint32_t)n;
	w.rootv = malloc((nr ? nr : 1) * sizeof(*w.rootv));
	w.po = malloc((n + 1) * sizeof(*w.po));
	w.order = malloc((n + 1) * sizeof(*w.order));
	if (!w.rootv || !w.po || !w.order)
		goto oom;
	for (size_t i = 0; i < nr; i++) {
		const struct hg_root *rt = hg_root(g, i);
		if (rt->node < n && !(rt->flags & 2))
			w.rootv[w.n_rootv++] = rt->node;
	}
	if ((e = number(&w)) < 0 || (e = predecessors(&w)) < 0)
		goto oom;
	d->status = iterate(&w, &d->lim, &d->passes);
	d->steps = w.steps;
	if (d->status == HD_DONE && (e = retained(&w, d)) < 0)
		goto oom;
	free(w.rootv);
	free(w.po);
	free(w.order);
	free(w.off);
	free(w.pred);
	return 0;
oom:
	free(w.rootv);
	free(w.po);
	free(w.order);
	free(w.off);
	free(w.pred);
	heapdom_free(d);
	*ret = NULL;
	return -ENOMEM;
}
