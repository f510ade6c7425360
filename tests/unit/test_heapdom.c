/* Dominators and retained sizes: on graphs built through hg_feed from
 * hand-made GCBulk* payloads whose dominators are known (a diamond, a chain,
 * a cycle, nested objects of one type, unreachable objects, several roots
 * to one object, a weak root), on random graphs against a brute force
 * (remove an object, see what can no longer be reached), at the limits, and
 * on the heap snapshots recorded from .NET 8, 9 and 10
 * (tests/data/heap-net*.nettrace, GcLab "cache 3 100000 1000"), where the
 * summary's rows (heapsum_retained) must say the same. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dumpwatch/events.h"
#include "dumpwatch/heapdom.h"
#include "dumpwatch/heapgraph.h"
#include "dumpwatch/heapsum.h"
#include "dumpwatch/nettrace.h"
#include "heaprec.h"

/* ---- graphs from GCBulk* payloads ---- */

struct buf {
	uint8_t *b;
	size_t n, cap;
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2;
		b->b = realloc(b->b, b->cap);
	}
	memcpy(b->b + b->n, p, n);
	b->n += n;
}
static void p8(struct buf *b, uint8_t v)
{
	put(b, &v, 1);
}
static void p16(struct buf *b, uint16_t v)
{
	v = htole16(v);
	put(b, &v, 2);
}
static void p32(struct buf *b, uint32_t v)
{
	v = htole32(v);
	put(b, &v, 4);
}
static void p64(struct buf *b, uint64_t v)
{
	v = htole64(v);
	put(b, &v, 8);
}

static struct nettrace_metadata meta = {.provider = EV_RUNTIME_PROVIDER, .event_name = ""};

static void feed(struct heapgraph *g, uint32_t id, const struct buf *b)
{
	char err[256];
	meta.event_id = id;
	meta.version = 0;
	struct nettrace_event ev = {.meta = &meta, .payload = b->b, .payload_size = (uint32_t)b->n};
	int r = hg_feed(g, &ev, 8, err, sizeof(err));
	CHECK_MSG(r == 1, "hg_feed: %d %s", r, r < 0 ? err : "");
}

/* A graph of n objects (object i at 0x1000 * (i + 1), so that its index is
 * i), where `refs` lists each object's references as "i>j" pairs, `types`
 * gives each object's type (0 no type) and `sizes` its size (NULL: 8 + i,
 * sizes all different so that a wrong sum shows). Roots: `roots` lists the
 * rooted objects, `weak` those rooted only by a weak handle. */
struct spec {
	size_t n;
	const char *refs; /* "0>1 1>2 ..." */
	const uint32_t *types;
	const uint64_t *sizes;
	const char *roots; /* "0 3" */
	const char *weak;
};

static uint64_t size_of(const struct spec *s, size_t i)
{
	return s->sizes ? s->sizes[i] : 8 + i;
}

static struct heapgraph *build(const struct spec *s)
{
	struct heapgraph *g = hg_new(NULL);
	struct buf b = {0};
	size_t *from = NULL, *to = NULL, ne = 0;
	const char *p = s->refs;

	while (p && *p) {
		char *end;
		unsigned long a = strtoul(p, &end, 10);
		if (end == p)
			break;
		unsigned long z = strtoul(end + 1, &end, 10);
		if ((ne & (ne - 1)) == 0) { /* at powers of two: grown by doubling */
			from = realloc(from, (ne ? 2 * ne : 1) * sizeof(*from));
			to = realloc(to, (ne ? 2 * ne : 1) * sizeof(*to));
		}
		from[ne] = a;
		to[ne++] = z;
		p = end;
		while (*p == ' ')
			p++;
	}
	/* Nodes, each with its count of references; then the references in
	 * the same order (by referring object, in the order given). */
	size_t *count = calloc(s->n + 1, sizeof(*count)), *sorted = malloc((ne + 1) * sizeof(*sorted));
	for (size_t e = 0; e < ne; e++)
		count[from[e] + 1]++;
	p32(&b, 0);
	p32(&b, (uint32_t)s->n);
	p16(&b, 1);
	for (size_t i = 0; i < s->n; i++) {
		p64(&b, 0x1000 * (i + 1));
		p64(&b, size_of(s, i));
		p64(&b, s->types ? s->types[i] : 0);
		p64(&b, count[i + 1]);
	}
	feed(g, HG_EV_BULK_NODE, &b);
	for (size_t i = 0; i < s->n; i++)
		count[i + 1] += count[i];
	for (size_t e = 0; e < ne; e++)
		sorted[count[from[e]]++] = to[e];
	b.n = 0;
	p32(&b, 0);
	p32(&b, (uint32_t)ne);
	p16(&b, 1);
	for (size_t e = 0; e < ne; e++) {
		p64(&b, 0x1000 * (sorted[e] + 1));
		p32(&b, 0);
	}
	feed(g, HG_EV_BULK_EDGE, &b);
	free(count);
	free(sorted);
	uint32_t index = 0;
	for (int weak = 0; weak < 2; weak++) {
		for (p = weak ? s->weak : s->roots; p && *p;) {
			char *end;
			unsigned long a = strtoul(p, &end, 10);
			if (end == p)
				break;
			b.n = 0;
			p32(&b, index++);
			p32(&b, 1);
			p16(&b, 1);
			p64(&b, 0x1000 * (a + 1));
			p8(&b, HG_ROOT_HANDLE);
			p32(&b, weak ? 2 : 0);
			p64(&b, 0x9000 + a);
			feed(g, HG_EV_BULK_ROOT_EDGE, &b);
			p = end;
			while (*p == ' ')
				p++;
		}
	}
	free(b.b);
	free(from);
	free(to);
	CHECK(hg_finish(g) == 0);
	CHECK(hg_n_nodes(g) == s->n);
	return g;
}

static struct heapdom *dom(const struct heapgraph *g)
{
	struct heapdom *d = NULL;
	CHECK(heapdom_build(g, NULL, &d) == 0);
	CHECK(d && d->status == HD_DONE);
	return d;
}

/* The sizes of objects a..b (inclusive) of spec s, added. */
static uint64_t sizes(const struct spec *s, size_t a, size_t b)
{
	uint64_t t = 0;
	for (size_t i = a; i <= b; i++)
		t += size_of(s, i);
	return t;
}

static void test_diamond(void)
{
	/* 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3, 3 -> 4: 0 dominates all; 3 its 4. */
	struct spec s = {.n = 5, .refs = "0>1 0>2 1>3 2>3 3>4", .roots = "0"};
	struct heapgraph *g = build(&s);
	struct heapdom *d = dom(g);
	CHECK(d->idom[0] == HD_ROOT && d->idom[1] == 0 && d->idom[2] == 0 && d->idom[3] == 0 && d->idom[4] == 3);
	CHECK(d->retained[0] == sizes(&s, 0, 4));
	CHECK(d->retained[1] == size_of(&s, 1) && d->retained[2] == size_of(&s, 2));
	CHECK(d->retained[3] == size_of(&s, 3) + size_of(&s, 4));
	CHECK(d->reachable_count == 5 && d->reachable_bytes == sizes(&s, 0, 4));
	CHECK(d->unreachable_count == 0);
	CHECK(d->passes >= 2);
	heapdom_free(d);
	hg_free(g);
}

static void test_chain(void)
{
	struct spec s = {.n = 5, .refs = "0>1 1>2 2>3 3>4", .roots = "0"};
	struct heapgraph *g = build(&s);
	struct heapdom *d = dom(g);
	CHECK(d->idom[0] == HD_ROOT);
	for (uint32_t i = 1; i < 5; i++)
		CHECK(d->idom[i] == i - 1);
	for (size_t i = 0; i < 5; i++)
		CHECK(d->retained[i] == sizes(&s, i, 4));
	heapdom_free(d);
	hg_free(g);

	/* A chain too deep for a recursive search. */
	enum { DEEP = 300000 };
	struct spec deep = {.n = DEEP, .roots = "0"};
	size_t cap = (size_t)DEEP * 16, o = 0;
	char *refs = malloc(cap);
	for (size_t i = 0; i + 1 < DEEP; i++)
		o += (size_t)snprintf(refs + o, cap - o, "%zu>%zu ", i, i + 1);
	deep.refs = refs;
	g = build(&deep);
	d = dom(g);
	int ok = 1;
	for (uint32_t i = 1; i < DEEP; i++)
		ok &= d->idom[i] == i - 1;
	CHECK(ok);
	CHECK(d->retained[0] == sizes(&deep, 0, DEEP - 1));
	CHECK(d->retained[DEEP / 2] == sizes(&deep, DEEP / 2, DEEP - 1));
	heapdom_free(d);
	hg_free(g);
	free(refs);
}

static void test_cycle(void)
{
	/* 0 -> 1 -> 2 -> 3 -> 1, and 3 -> 4: the cycle's entry 1 dominates the
	 * rest; 2 dominates 3 and 4. A second cycle entered at two points
	 * (0 -> 5, 0 -> 6, 5 <-> 6): neither dominates the other. */
	struct spec s = {.n = 7, .refs = "0>1 1>2 2>3 3>1 3>4 0>5 0>6 5>6 6>5", .roots = "0"};
	struct heapgraph *g = build(&s);
	struct heapdom *d = dom(g);
	CHECK(d->idom[1] == 0 && d->idom[2] == 1 && d->idom[3] == 2 && d->idom[4] == 3);
	CHECK(d->idom[5] == 0 && d->idom[6] == 0);
	CHECK(d->retained[1] == sizes(&s, 1, 4));
	CHECK(d->retained[5] == size_of(&s, 5) && d->retained[6] == size_of(&s, 6));
	CHECK(d->retained[0] == sizes(&s, 0, 6));
	heapdom_free(d);
	hg_free(g);
}

/* The index of the type of TypeID id, as hg_finish numbered them. */
static uint32_t type_of(const struct heapgraph *g, uint64_t id)
{
	for (size_t i = 0; i < hg_n_types(g); i++)
		if (hg_type(g, i)->id == id)
			return (uint32_t)i;
	return HG_NONE;
}

static void test_nested(void)
{
	/* A holder (type 1) of a list of three nodes (type 2), each with a leaf
	 * (type 3); the second holds a holder of its own. Node 6 is a node
	 * reached from two nodes: the first node dominates it all the same. */
	static const uint32_t types[] = {1, 2, 2, 2, 3, 3, 2, 1, 3};
	struct spec s = {.n = 9, .types = types, .refs = "0>1 1>2 2>3 1>4 2>5 2>6 3>6 2>7 7>8", .roots = "0"};
	struct heapgraph *g = build(&s);
	struct heapdom *d = dom(g);
	uint32_t holder = type_of(g, 1), node = type_of(g, 2), leaf = type_of(g, 3);
	CHECK(holder != HG_NONE && node != HG_NONE && leaf != HG_NONE);
	CHECK(d->idom[6] == 2 && d->idom[3] == 2 && d->idom[2] == 1);
	/* The first node holds all but the holder; the nested nodes and holder
	 * count once. */
	CHECK(d->retained[1] == sizes(&s, 1, 8));
	CHECK(d->type_retained[node] == sizes(&s, 1, 8));
	CHECK(d->type_retained[holder] == sizes(&s, 0, 8));
	/* The leaves: none holds another. */
	CHECK(d->type_retained[leaf] == size_of(&s, 4) + size_of(&s, 5) + size_of(&s, 8));
	CHECK(d->n_types == hg_n_types(g) && d->type_retained[d->n_types] == 0);
	heapdom_free(d);
	hg_free(g);
}

static void test_unreachable(void)
{
	/* 3 and 4 are reached from no root; 3 refers to the reachable 1 and to
	 * 4, which retain nothing of it. 5 is rooted only weakly. */
	static const uint32_t types[] = {1, 2, 2, 2, 2, 2};
	struct spec s = {.n = 6, .types = types, .refs = "0>1 1>2 3>1 3>4 5>2", .roots = "0", .weak = "5"};
	struct heapgraph *g = build(&s);
	struct heapdom *d = dom(g);
	uint32_t t2 = type_of(g, 2);
	CHECK(d->idom[1] == 0 && d->idom[2] == 1);
	CHECK(d->idom[3] == HG_NONE && d->idom[4] == HG_NONE && d->idom[5] == HG_NONE);
	CHECK(d->retained[3] == size_of(&s, 3) && d->retained[4] == size_of(&s, 4) && d->retained[5] == size_of(&s, 5));
	CHECK(d->unreachable_count == 3 && d->unreachable_bytes == sizes(&s, 3, 5));
	CHECK(d->reachable_count == 3 && d->reachable_bytes == sizes(&s, 0, 2));
	/* Type 2: 1 (holding 2) and the three unreachable, each itself. */
	CHECK(d->type_retained[t2] == sizes(&s, 1, 5));
	heapdom_free(d);
	hg_free(g);
}

static void test_roots(void)
{
	/* Two roots to 0 (one object, held by the roots, retains its child);
	 * 1 and 2 rooted apart share 3: only the virtual root dominates it. */
	struct spec s = {.n = 5, .refs = "0>4 1>3 2>3", .roots = "0 0 1 2"};
	struct heapgraph *g = build(&s);
	struct heapdom *d = dom(g);
	CHECK(d->idom[0] == HD_ROOT && d->idom[1] == HD_ROOT && d->idom[2] == HD_ROOT && d->idom[3] == HD_ROOT);
	CHECK(d->idom[4] == 0);
	CHECK(d->retained[0] == size_of(&s, 0) + size_of(&s, 4));
	CHECK(d->retained[1] == size_of(&s, 1) && d->retained[2] == size_of(&s, 2));
	CHECK(d->reachable_bytes == sizes(&s, 0, 4));
	/* A root that is also referred to from inside: 0 -> 1, roots 0 and 1. */
	struct spec s2 = {.n = 2, .refs = "0>1", .roots = "0 1"};
	struct heapgraph *g2 = build(&s2);
	struct heapdom *d2 = dom(g2);
	CHECK(d2->idom[1] == HD_ROOT && d2->retained[0] == size_of(&s2, 0));
	heapdom_free(d2);
	hg_free(g2);
	heapdom_free(d);
	hg_free(g);
}

/* ---- random graphs against a brute force ---- */

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* Which nodes are reached from the strong roots when node `cut` is
 * removed (cut >= n: none removed). */
static void reach(const struct heapgraph *g, size_t cut, uint8_t *seen, uint32_t *queue)
{
	size_t n = hg_n_nodes(g), head = 0, tail = 0;
	memset(seen, 0, n);
	for (size_t i = 0; i < hg_n_roots(g); i++) {
		const struct hg_root *r = hg_root(g, i);
		if (r->node < n && r->node != cut && !(r->flags & 2) && !seen[r->node]) {
			seen[r->node] = 1;
			queue[tail++] = r->node;
		}
	}
	while (head < tail) {
		size_t ne;
		const uint32_t *to = hg_edges(g, queue[head++], &ne);
		for (size_t k = 0; k < ne; k++)
			if (to[k] < n && to[k] != cut && !seen[to[k]]) {
				seen[to[k]] = 1;
				queue[tail++] = to[k];
			}
	}
}

static void test_random(void)
{
	for (int round = 0; round < 60; round++) {
		size_t n = 2 + rnd(120), ne = rnd((uint32_t)(n * 3));
		uint32_t types[128];
		char refs[128 * 3 * 12], roots[256], weak[64];
		size_t o = 0;
		for (size_t e = 0; e < ne; e++) {
			/* Mostly forward, tree-like; some back and cross references. */
			uint32_t a = rnd((uint32_t)n), z = rnd(4) ? a + 1 + rnd(8) : rnd((uint32_t)n);
			if (z >= n)
				z = rnd((uint32_t)n);
			o += (size_t)snprintf(refs + o, sizeof(refs) - o, "%u>%u ", a, z);
		}
		refs[o] = '\0';
		o = 0;
		for (int k = 0, nr = 1 + (int)rnd(4); k < nr; k++)
			o += (size_t)snprintf(roots + o, sizeof(roots) - o, "%u ", rnd((uint32_t)n));
		snprintf(weak, sizeof(weak), "%u", rnd((uint32_t)n));
		for (size_t i = 0; i < n; i++)
			types[i] = 1 + rnd(4);
		struct spec s = {.n = n, .refs = refs, .types = types, .roots = roots, .weak = weak};
		struct heapgraph *g = build(&s);
		struct heapdom *d = dom(g);
		if (!d || d->status != HD_DONE) {
			heapdom_free(d);
			hg_free(g);
			continue;
		}
		uint8_t *all = malloc(n), *without = malloc(n), *dominated = calloc(n * n, 1);
		uint32_t *queue = malloc(n * sizeof(*queue));
		reach(g, n, all, queue);
		int ok = 1;
		for (size_t x = 0; x < n; x++) {
			/* x dominates y (or is y) when removing x loses y. */
			reach(g, x, without, queue);
			uint64_t ret = size_of(&s, x);
			for (size_t y = 0; y < n; y++) {
				dominated[x * n + y] = all[x] && (y == x || (all[y] && !without[y]));
				if (y != x && dominated[x * n + y])
					ret += size_of(&s, y);
			}
			ok &= d->retained[x] == ret;
			ok &= (d->idom[x] == HG_NONE) == !all[x];
		}
		/* The immediate dominator: a dominator that every other strict
		 * dominator dominates. */
		for (size_t y = 0; y < n; y++) {
			if (!all[y] || d->idom[y] == HD_ROOT) {
				for (size_t x = 0; all[y] && x < n; x++)
					ok &= x == y || !dominated[x * n + y];
				continue;
			}
			size_t i = d->idom[y];
			ok &= i < n && i != y && dominated[i * n + y];
			for (size_t x = 0; i < n && x < n; x++)
				if (x != y && dominated[x * n + y])
					ok &= dominated[x * n + i];
		}
		/* A type: each object held by an object of it (or one of it). */
		for (uint32_t t = 1; t <= 4; t++) {
			uint32_t ti = type_of(g, t);
			if (ti == HG_NONE)
				continue;
			uint64_t want = 0;
			for (size_t y = 0; y < n; y++) {
				int held = 0;
				for (size_t x = 0; x < n && !held; x++)
					held = types[x] == t && (dominated[x * n + y] || (x == y && !all[y]));
				if (held)
					want += size_of(&s, y);
			}
			ok &= d->type_retained[ti] == want;
		}
		CHECK_MSG(ok, "round %d: n %zu refs \"%s\" roots \"%s\" weak %s", round, n, refs, roots, weak);
		free(all);
		free(without);
		free(dominated);
		free(queue);
		heapdom_free(d);
		hg_free(g);
	}
}

static void test_limits(void)
{
	struct spec s = {.n = 6, .refs = "0>1 1>2 2>3 3>1 0>4 4>5 5>4", .roots = "0 3"};
	struct heapgraph *g = build(&s);
	struct heapdom *d = NULL;
	char why[160];

	struct hd_limits few = {.max_nodes = 5};
	CHECK(heapdom_build(g, &few, &d) == 0 && d->status == HD_TOO_MANY_NODES);
	CHECK(!d->idom && !d->retained && !d->type_retained);
	CHECK_STR(heapdom_why(d, why, sizeof(why)),
	          "the heap has 6 objects, more than the 5 retained sizes are computed for");
	heapdom_free(d);
	struct hd_limits refs = {.max_edges = 8}; /* 7 references and 2 roots */
	CHECK(heapdom_build(g, &refs, &d) == 0 && d->status == HD_TOO_MANY_EDGES);
	heapdom_free(d);
	/* A first pass always sets the dominators; a second sees them settle. */
	struct hd_limits one = {.max_passes = 1};
	CHECK(heapdom_build(g, &one, &d) == 0 && d->status == HD_PASS_CAP && d->passes == 1 && !d->retained);
	CHECK_STR(heapdom_why(d, why, sizeof(why)), "the dominators had not settled after 1 passes");
	heapdom_free(d);
	struct hd_limits steps = {.max_steps = 3};
	CHECK(heapdom_build(g, &steps, &d) == 0 && d->status == HD_STEP_CAP && !d->retained);
	heapdom_free(d);
	struct hd_limits exact = {.max_nodes = 6, .max_edges = 9};
	CHECK(heapdom_build(g, &exact, &d) == 0 && d->status == HD_DONE);
	CHECK(d->idom[1] == HD_ROOT && d->idom[2] == 1 && d->idom[3] == HD_ROOT && d->idom[5] == 4);
	CHECK_STR(heapdom_why(d, why, sizeof(why)), "");
	heapdom_free(d);
	hg_free(g);

	/* An empty graph. */
	struct spec none = {.n = 0};
	g = build(&none);
	d = dom(g);
	CHECK(d->reachable_count == 0 && d->unreachable_count == 0 && d->reachable_bytes == 0);
	heapdom_free(d);
	hg_free(g);
	heapdom_free(NULL);
}

/* ---- recorded snapshots ---- */

static uint32_t type_named(const struct heapgraph *g, const char *name)
{
	for (size_t i = 0; i < hg_n_types(g); i++)
		if (strcmp(hg_type(g, i)->name, name) == 0)
			return (uint32_t)i;
	return HG_NONE;
}

/* The objects of type t: their count, their bytes, and the first. */
static uint32_t objects_of(const struct heapgraph *g, uint32_t t, size_t *ret_count, uint64_t *ret_bytes)
{
	uint32_t first = HG_NONE;
	*ret_count = 0;
	*ret_bytes = 0;
	for (size_t i = 0; i < hg_n_nodes(g); i++)
		if (hg_node(g, i)->type == t) {
			if (first == HG_NONE)
				first = (uint32_t)i;
			(*ret_count)++;
			*ret_bytes += hg_node(g, i)->size;
		}
	return first;
}

static void test_recorded(const char *file)
{
	struct run r = {.g = heaprec_graph(file)};
	CHECK_MSG(r.g != NULL, "%s missing or not read whole", file);
	if (!r.g)
		return;
	const struct heapgraph *g = r.g;
	struct heapdom *d = dom(g);
	if (!d || d->status != HD_DONE) {
		heapdom_free(d);
		hg_free(r.g);
		return;
	}

	/* Everything is held by the roots or by nothing, once. */
	uint64_t total = 0, top = 0;
	for (size_t i = 0; i < hg_n_nodes(g); i++) {
		total += hg_node(g, i)->size;
		if (d->idom[i] == HD_ROOT)
			top += d->retained[i];
	}
	CHECK(top == d->reachable_bytes && top + d->unreachable_bytes == total);
	CHECK(d->reachable_count + d->unreachable_count == hg_n_nodes(g));
	CHECK_MSG(d->passes >= 2 && d->passes <= 4, "%s: %u passes", file, d->passes);

	/* s_entries -> List<byte[]> -> byte[][] -> 3 x byte[] of 100,024: the
	 * list retains its array and the three arrays, and nothing else holds
	 * them. */
	uint32_t tl = type_named(g, "System.Collections.Generic.List<System.Byte[]>");
	uint32_t ta = type_named(g, "System.Byte[][]");
	CHECK(tl != HG_NONE && ta != HG_NONE);
	size_t n_lists;
	uint64_t b_lists;
	uint32_t list = objects_of(g, tl, &n_lists, &b_lists), arr = HG_NONE;
	CHECK_MSG(n_lists == 1, "%s: %zu lists", file, n_lists);
	if (list != HG_NONE) {
		size_t ne;
		const uint32_t *to = hg_edges(g, list, &ne);
		for (size_t k = 0; k < ne; k++)
			if (to[k] != HG_NONE && hg_node(g, to[k])->type == ta)
				arr = to[k];
	}
	CHECK(arr != HG_NONE);
	if (list != HG_NONE && arr != HG_NONE) {
		uint64_t b_arrays = hg_node(g, arr)->size;
		CHECK(d->idom[arr] == list);
		size_t ne;
		const uint32_t *to = hg_edges(g, arr, &ne);
		uint64_t held = 0;
		size_t big = 0;
		for (size_t k = 0; k < ne; k++) {
			if (to[k] == HG_NONE)
				continue;
			CHECK(d->idom[to[k]] == arr);
			held += hg_node(g, to[k])->size;
			big += hg_node(g, to[k])->size == 100024;
		}
		CHECK_MSG(big == 3, "%s: %zu arrays of 100,024 bytes", file, big);
		CHECK_MSG(d->retained[list] == b_lists + b_arrays + held, "%s: the list retains %llu, not %llu", file,
		          (unsigned long long)d->retained[list], (unsigned long long)(b_lists + b_arrays + held));
		CHECK(d->retained[list] >= 3 * 100024);
		CHECK(d->type_retained[tl] == d->retained[list]);
		/* byte[] retains at least its own bytes; the three big ones. */
		uint32_t tb = type_named(g, "System.Byte[]");
		size_t n_b;
		uint64_t b_b;
		objects_of(g, tb, &n_b, &b_b);
		CHECK(d->type_retained[tb] == b_b);
	}
	/* HeapNode: a list of 1000 nested nodes, each with a HeapLeaf: counted
	 * once, its leaves in it; HeapLeaf retains just itself. */
	uint32_t tn = type_named(g, "HeapNode"), tleaf = type_named(g, "HeapLeaf");
	size_t n_n, n_l;
	uint64_t b_n, b_l;
	objects_of(g, tn, &n_n, &b_n);
	objects_of(g, tleaf, &n_l, &b_l);
	CHECK(n_n == 1000 && n_l == 1000);
	CHECK_MSG(d->type_retained[tn] >= b_n + b_l && d->type_retained[tn] < 2 * (b_n + b_l), "%s: HeapNode %llu",
	          file, (unsigned long long)d->type_retained[tn]);
	CHECK(d->type_retained[tleaf] == b_l);

	/* The same in the summary's rows; and the reason when not computed. */
	struct heapsum *s;
	CHECK(heapsum_build(g, 5, &s) == 0);
	CHECK(!s->retained_done && s->retained_why[0] == '\0');
	CHECK(heapsum_retained(g, s, NULL) == 0 && s->retained_done && s->retained_passes == d->passes);
	int same = 1;
	for (size_t i = 0; i < s->n_rows; i++)
		same &=
		    s->rows[i].retained == d->type_retained[s->rows[i].type] && s->rows[i].retained >= s->rows[i].bytes;
	CHECK(same);
	CHECK(s->retained_unreachable_bytes == d->unreachable_bytes);
	heapsum_free(s);
	CHECK(heapsum_build(g, 5, &s) == 0);
	struct hd_limits few = {.max_nodes = 100};
	CHECK(heapsum_retained(g, s, &few) == 0 && !s->retained_done && s->rows[0].retained == 0);
	CHECK_MSG(strstr(s->retained_why, "more than the 100") != NULL, "%s", s->retained_why);
	heapsum_free(s);
	heapdom_free(d);
	hg_free(r.g);
}

int main(void)
{
	test_diamond();
	test_chain();
	test_cycle();
	test_nested();
	test_unreachable();
	test_roots();
	test_random();
	test_limits();
	test_recorded("heap-net10.nettrace");
	test_recorded("heap-net9.nettrace");
	test_recorded("heap-net8.nettrace");
	return check_done();
}
