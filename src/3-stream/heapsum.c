/* The heap summary; see heapsum.h. Work is linear in nodes and edges (one
 * pass for the histogram, one breadth-first search, one pass for the paths),
 * and the extra memory is 8 bytes an object (its path id and its place in
 * the queue) plus the bounded path table. */
#include "dumpwatch/heapsum.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PATHS (1u << 20)
#define MAX_LABELS 65536

struct pstep {
	uint32_t parent; /* HG_NONE for a root label */
	uint32_t what;   /* a type index, or for a root the label index */
	uint8_t depth;   /* types after the root */
	uint8_t nested, cut;
};

struct ptab {
	struct pstep *v;
	size_t n, cap;
	uint32_t *hash; /* id + 1 */
	size_t hcap;
	char **labels;
	size_t n_labels;
};

static size_t mix(uint64_t k, size_t cap)
{
	return (size_t)((k * 0x9E3779B97F4A7C15ULL) >> 20) & (cap - 1);
}

static int ptab_grow(struct ptab *t)
{
	if (t->n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct pstep *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	if ((t->n + 1) * 2 > t->hcap) {
		size_t hcap = t->hcap ? t->hcap * 2 : 2048;
		uint32_t *h = calloc(hcap, sizeof(*h));
		if (!h)
			return -ENOMEM;
		for (size_t i = 0; i < t->n; i++) {
			size_t s = mix(((uint64_t)t->v[i].parent << 32) | t->v[i].what, hcap);
			while (h[s])
				s = (s + 1) & (hcap - 1);
			h[s] = (uint32_t)i + 1;
		}
		free(t->hash);
		t->hash = h;
		t->hcap = hcap;
	}
	return 0;
}

/* The id of (parent, what); added when new. HG_NONE when the table is full,
 * -ENOMEM in *e. */
static uint32_t ptab_intern(struct ptab *t, uint32_t parent, uint32_t what, int *e)
{
	uint64_t key = ((uint64_t)parent << 32) | what;

	if (t->hcap) {
		size_t s = mix(key, t->hcap);
		while (t->hash[s]) {
			struct pstep *p = &t->v[t->hash[s] - 1];
			if (p->parent == parent && p->what == what)
				return t->hash[s] - 1;
			s = (s + 1) & (t->hcap - 1);
		}
	}
	if (t->n >= MAX_PATHS)
		return HG_NONE;
	if (ptab_grow(t) < 0) {
		*e = -ENOMEM;
		return HG_NONE;
	}
	uint32_t id = (uint32_t)t->n++;
	t->v[id] = (struct pstep){
	    .parent = parent, .what = what, .depth = parent == HG_NONE ? 0 : (uint8_t)(t->v[parent].depth + 1)};
	size_t s = mix(key, t->hcap);
	while (t->hash[s])
		s = (s + 1) & (t->hcap - 1);
	t->hash[s] = id + 1;
	return id;
}

/* The path of an object of type `type` held by one whose path is parent. */
static uint32_t ptab_step(struct ptab *t, uint32_t parent, uint32_t type, int *e)
{
	struct pstep *p = &t->v[parent];

	if (p->parent != HG_NONE && p->what == type) {
		p->nested = 1;
		return parent;
	}
	if (p->depth >= HS_MAX_STEPS) {
		p->cut = 1;
		return parent;
	}
	uint32_t id = ptab_intern(t, parent, type, e);
	if (id == HG_NONE) {
		t->v[parent].cut = 1;
		return parent;
	}
	return id;
}

const char *heapsum_root_label(const struct hg_root *r, char *buf, size_t len)
{
	const char *kind;

	switch (r->kind) {
	case HG_ROOT_STATIC:
		/* The runtime names the field but not the class that declares
		 * it (GCBulkRootStaticVar's TypeID is the value's type): the
		 * class is there when the assemblies' metadata named it. */
		if (r->owner)
			snprintf(buf, len, "%s.%s (static)", r->owner, r->name ? r->name : "?");
		else
			snprintf(buf, len, "%s (static)", r->name ? r->name : "?");
		return buf;
	case HG_ROOT_STACK:
		kind = "[stack]";
		break;
	case HG_ROOT_FINALIZER:
		kind = "[finalizer]";
		break;
	case HG_ROOT_HANDLE:
		kind = r->flags & 1 ? "[pinned handle]" : "[handle]";
		break;
	case HG_ROOT_OLDER:
		kind = "[older generation]";
		break;
	case HG_ROOT_SIZEDREF:
		kind = "[sized ref handle]";
		break;
	case HG_ROOT_CWT:
		kind = "[dependent handle]";
		break;
	case HG_ROOT_COM:
		kind = "[COM]";
		break;
	default:
		kind = "[other root]";
		break;
	}
	snprintf(buf, len, "%s", kind);
	return buf;
}

/* The label index of root r, interned in t (linear in the labels of its
 * kind: static fields are few thousand at most, bounded by MAX_LABELS). */
static uint32_t root_label(struct ptab *t, const struct hg_root *r, int *e)
{
	char buf[256];

	heapsum_root_label(r, buf, sizeof(buf));
	if (t->n_labels >= MAX_LABELS && r->kind == HG_ROOT_STATIC)
		snprintf(buf, sizeof(buf), "[static]");
	for (size_t i = 0; i < t->n_labels; i++)
		if (strcmp(t->labels[i], buf) == 0)
			return ptab_intern(t, HG_NONE, (uint32_t)i, e);
	char **l = realloc(t->labels, (t->n_labels + 1) * sizeof(*l));
	if (!l || !(l[t->n_labels] = strdup(buf))) {
		if (l)
			t->labels = l;
		*e = -ENOMEM;
		return HG_NONE;
	}
	t->labels = l;
	return ptab_intern(t, HG_NONE, (uint32_t)t->n_labels++, e);
}

static int root_rank(uint8_t kind)
{
	switch (kind) {
	case HG_ROOT_STATIC:
		return 0;
	case HG_ROOT_HANDLE:
	case HG_ROOT_SIZEDREF:
		return 1;
	case HG_ROOT_STACK:
		return 2;
	case HG_ROOT_FINALIZER:
		return 3;
	default:
		return 4;
	}
}

static int cmp_row(const void *a, const void *b)
{
	const struct hs_row *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->type < y->type ? -1 : x->type > y->type;
}

struct agg {
	uint64_t key; /* row << 32 | path, +1; 0 empty */
	uint64_t bytes, count;
};

void heapsum_free(struct heapsum *s)
{
	if (!s)
		return;
	free(s->rows);
	free(s->paths);
	free(s);
}

static void ptab_free(struct ptab *t)
{
	for (size_t i = 0; i < t->n_labels; i++)
		free(t->labels[i]);
	free(t->labels);
	free(t->v);
	free(t->hash);
}

int heapsum_build(const struct heapgraph *g, size_t top_paths, struct heapsum **ret)
{
	size_t nn = hg_n_nodes(g), nt = hg_n_types(g), nr = hg_n_roots(g);
	struct heapsum *s = calloc(1, sizeof(*s));
	struct hs_row *by_type = calloc(nt + 1, sizeof(*by_type)); /* [nt]: objects of no known type */
	uint32_t *path = malloc((nn ? nn : 1) * sizeof(*path));
	uint32_t *queue = malloc((nn ? nn : 1) * sizeof(*queue));
	uint32_t *row_of = NULL;
	struct agg *agg = NULL;
	struct ptab t = {0};
	int e = 0;

	*ret = NULL;
	if (!s || !by_type || !path || !queue)
		goto oom;

	/* The histogram: a histogram graph's rows, or the nodes counted. */
	for (size_t i = 0; hg_is_histogram(g) && i <= nt; i++) {
		const struct hg_tally *ta = hg_tally(g, i);
		if (!ta)
			break;
		struct hs_row *r = &by_type[i];
		r->count = ta->count;
		r->bytes = ta->bytes;
		memcpy(r->gen_count, ta->gen_count, sizeof(r->gen_count));
		memcpy(r->gen_bytes, ta->gen_bytes, sizeof(r->gen_bytes));
		for (int k = 0; k < HG_N_GENS; k++) {
			s->gen_count[k] += ta->gen_count[k];
			s->gen_bytes[k] += ta->gen_bytes[k];
		}
		s->total_count += ta->count;
		s->total_bytes += ta->bytes;
	}
	for (size_t i = 0; i < nn; i++) {
		const struct hg_node *n = hg_node(g, i);
		struct hs_row *r = &by_type[n->type < nt ? n->type : nt];
		uint8_t gen = n->gen < HG_N_GENS ? n->gen : HG_GEN_UNKNOWN;
		r->count++;
		r->bytes += n->size;
		r->gen_count[gen]++;
		r->gen_bytes[gen] += n->size;
		s->gen_count[gen]++;
		s->gen_bytes[gen] += n->size;
		s->total_count++;
		s->total_bytes += n->size;
	}
	s->rows = malloc((nt + 1) * sizeof(*s->rows));
	if (!s->rows)
		goto oom;
	for (size_t i = 0; i <= nt; i++) {
		if (!by_type[i].count)
			continue;
		by_type[i].type = i < nt ? (uint32_t)i : HG_NONE;
		s->rows[s->n_rows++] = by_type[i];
	}
	if (s->n_rows)
		qsort(s->rows, s->n_rows, sizeof(*s->rows), cmp_row);

	/* The search, roots in rank order. */
	for (size_t i = 0; i < nn; i++)
		path[i] = HG_NONE;
	size_t head = 0, tail = 0;
	for (int rank = 0; rank <= 4; rank++) {
		for (size_t i = 0; i < nr; i++) {
			const struct hg_root *r = hg_root(g, i);
			if (r->node == HG_NONE || path[r->node] != HG_NONE || root_rank(r->kind) != rank)
				continue;
			uint32_t lp = root_label(&t, r, &e);
			if (e < 0)
				goto oom;
			if (lp == HG_NONE)
				continue; /* the path table is full of roots: leave it to the next */
			path[r->node] = ptab_step(&t, lp, hg_node(g, r->node)->type, &e);
			if (e < 0)
				goto oom;
			queue[tail++] = r->node;
		}
	}
	while (head < tail) {
		uint32_t u = queue[head++];
		size_t ne;
		const uint32_t *to = hg_edges(g, u, &ne);
		for (size_t k = 0; k < ne; k++) {
			uint32_t v = to[k];
			if (v == HG_NONE || v >= nn || path[v] != HG_NONE)
				continue;
			path[v] = ptab_step(&t, path[u], hg_node(g, v)->type, &e);
			if (e < 0)
				goto oom;
			queue[tail++] = v;
		}
	}
	free(queue);
	queue = NULL;

	/* Bytes per (top row, path). */
	size_t k_top = top_paths < s->n_rows ? top_paths : s->n_rows;
	row_of = malloc((nt + 1) * sizeof(*row_of));
	if (!row_of)
		goto oom;
	for (size_t i = 0; i <= nt; i++)
		row_of[i] = HG_NONE;
	for (size_t k = 0; k < k_top; k++)
		row_of[s->rows[k].type == HG_NONE ? nt : s->rows[k].type] = (uint32_t)k;
	size_t acap = 1024, an = 0;
	agg = calloc(acap, sizeof(*agg));
	if (!agg)
		goto oom;
	for (size_t i = 0; i < nn; i++) {
		const struct hg_node *n = hg_node(g, i);
		uint32_t k = row_of[n->type < nt ? n->type : nt];
		if (k == HG_NONE)
			continue;
		if (path[i] == HG_NONE) {
			continue;
		}
		uint64_t key = (((uint64_t)k << 32) | path[i]) + 1;
		if ((an + 1) * 2 > acap) {
			size_t ncap = acap * 2;
			struct agg *na = calloc(ncap, sizeof(*na));
			if (!na)
				goto oom;
			for (size_t j = 0; j < acap; j++) {
				if (!agg[j].key)
					continue;
				size_t q = mix(agg[j].key, ncap);
				while (na[q].key)
					q = (q + 1) & (ncap - 1);
				na[q] = agg[j];
			}
			free(agg);
			agg = na;
			acap = ncap;
		}
		size_t q = mix(key, acap);
		while (agg[q].key && agg[q].key != key)
			q = (q + 1) & (acap - 1);
		if (!agg[q].key) {
			agg[q].key = key;
			an++;
		}
		agg[q].bytes += n->size;
		agg[q].count++;
	}
	for (size_t i = 0; i < nn; i++) {
		if (path[i] == HG_NONE) {
			s->unreachable_count++;
			s->unreachable_bytes += hg_node(g, i)->size;
		}
	}

	s->paths = calloc(k_top ? k_top : 1, sizeof(*s->paths));
	if (!s->paths)
		goto oom;
	for (size_t k = 0; k < k_top; k++) {
		const struct agg *best = NULL;
		for (size_t j = 0; j < acap; j++)
			if (agg[j].key && ((agg[j].key - 1) >> 32) == k && (!best || agg[j].bytes > best->bytes))
				best = &agg[j];
		if (!best)
			continue;
		struct hs_path *p = &s->paths[s->n_paths++];
		uint32_t id = (uint32_t)((best->key - 1) & 0xffffffffu);
		uint32_t chain[HS_MAX_STEPS + 2];
		size_t depth = 0;
		p->row = (uint32_t)k;
		p->bytes = best->bytes;
		p->count = best->count;
		while (id != HG_NONE && depth < HS_MAX_STEPS + 2) {
			chain[depth++] = id;
			id = t.v[id].parent;
		}
		/* chain[depth-1] is the root label. */
		const struct pstep *root = &t.v[chain[depth - 1]];
		snprintf(p->root, sizeof(p->root), "%s", t.labels[root->what]);
		for (size_t d = depth - 1; d-- > 0;) {
			const struct pstep *st = &t.v[chain[d]];
			p->steps[p->n_steps] = st->what;
			p->nested[p->n_steps] = st->nested;
			p->cut |= st->cut;
			p->n_steps++;
		}
	}
	free(agg);
	free(row_of);
	free(path);
	free(by_type);
	ptab_free(&t);
	*ret = s;
	return 0;
oom:
	free(agg);
	free(row_of);
	free(queue);
	free(path);
	free(by_type);
	ptab_free(&t);
	heapsum_free(s);
	return -ENOMEM;
}

int heapsum_retained(const struct heapgraph *g, struct heapsum *s, const struct hd_limits *lim)
{
	struct heapdom *d;
	int r = heapdom_build(g, lim, &d);

	if (r < 0) {
		snprintf(s->retained_why, sizeof(s->retained_why), "out of memory");
		return r;
	}
	s->retained_passes = d->passes;
	if (d->status != HD_DONE) {
		heapdom_why(d, s->retained_why, sizeof(s->retained_why));
		heapdom_free(d);
		return 0;
	}
	for (size_t i = 0; i < s->n_rows; i++) {
		uint32_t t = s->rows[i].type;
		s->rows[i].retained = d->type_retained[t < d->n_types ? t : d->n_types];
	}
	s->retained_unreachable_bytes = d->unreachable_bytes;
	s->retained_done = 1;
	heapdom_free(d);
	return 0;
}
