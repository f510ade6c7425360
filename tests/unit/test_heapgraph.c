/* The heap-walk decoders, the graph assembly, the histogram and the
 * summary: on heap snapshots recorded from .NET 8, 9 and 10
 * (tests/data/heap-net*.nettrace, GcLab "cache 3 100000 1000"), then on
 * hand-made payloads, malformed ones included. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dumpwatch/events.h"
#include "dumpwatch/heapgraph.h"
#include "dumpwatch/heapsum.h"
#include "dumpwatch/nettrace.h"
#include "heaprec.h"

/* ---- recorded snapshots ---- */

static const struct hs_row *row_named(const struct heapgraph *g, const struct heapsum *s, const char *name)
{
	for (size_t i = 0; i < s->n_rows; i++) {
		const struct hg_type *t = s->rows[i].type == HG_NONE ? NULL : hg_type(g, s->rows[i].type);
		if (t && strcmp(t->name, name) == 0)
			return &s->rows[i];
	}
	return NULL;
}

static const struct hs_path *path_of(const struct heapgraph *g, const struct heapsum *s, const char *name)
{
	const struct hs_row *r = row_named(g, s, name);
	for (size_t i = 0; r && i < s->n_paths; i++)
		if (&s->rows[s->paths[i].row] == r)
			return &s->paths[i];
	return NULL;
}

static const char *step_name(const struct heapgraph *g, const struct hs_path *p, size_t i)
{
	const struct hg_type *t = p->steps[i] == HG_NONE ? NULL : hg_type(g, p->steps[i]);
	return t ? t->name : "?";
}

static void test_recorded(const char *file)
{
	size_t len;
	uint8_t *b = testdata_load(file, &len);
	CHECK_MSG(b != NULL, "%s missing", file);
	if (!b)
		return;
	struct run r = {.g = hg_new(NULL)};
	struct nettrace_callbacks cb = {.ctx = &r, .on_info = on_info, .on_event = on_event};
	nettrace_parser *p = nettrace_new(&cb, NULL);
	CHECK(nettrace_feed(p, b, len) == 0);
	CHECK_MSG(nettrace_finish(p) == 0, "%s: %s", file, nettrace_error(p));
	nettrace_free(p);
	free(b);

	CHECK_MSG(r.errors == 0, "%s: %d payload errors", file, r.errors);
	CHECK(r.pointer_size == 8);
	CHECK(hg_walk_done(r.g));
	CHECK(hg_gc_count(r.g) > 0);
	/* What the runtimes send for a walk (and each in version 0). */
	CHECK_MSG(r.by_id[HG_EV_BULK_TYPE] > 0 && r.by_id[HG_EV_BULK_NODE] > 0 && r.by_id[HG_EV_BULK_EDGE] > 0 &&
	              r.by_id[HG_EV_BULK_ROOT_EDGE] > 0 && r.by_id[HG_EV_BULK_ROOT_STATIC_VAR] > 0 &&
	              r.by_id[HG_EV_GENERATION_RANGE] > 0,
	          "%s: types %u nodes %u edges %u roots %u statics %u ranges %u", file, r.by_id[HG_EV_BULK_TYPE],
	          r.by_id[HG_EV_BULK_NODE], r.by_id[HG_EV_BULK_EDGE], r.by_id[HG_EV_BULK_ROOT_EDGE],
	          r.by_id[HG_EV_BULK_ROOT_STATIC_VAR], r.by_id[HG_EV_GENERATION_RANGE]);
	CHECK(r.bad_version == 0);
	CHECK(hg_finish(r.g) == 0);

	const struct hg_cut *cut = hg_cut(r.g);
	CHECK(cut->nodes == 0 && cut->edges == 0 && cut->types == 0 && cut->roots == 0);
	CHECK_MSG(cut->lost_batches == 0, "%s: %llu batches lost", file, (unsigned long long)cut->lost_batches);
	CHECK_MSG(cut->extra_edges == 0, "%s: %llu extra edges", file, (unsigned long long)cut->extra_edges);
	/* Every reference is to an object of the walk, every root too. */
	CHECK_MSG(cut->unresolved_edges == 0, "%s: %llu unresolved", file, (unsigned long long)cut->unresolved_edges);
	CHECK_MSG(cut->unresolved_roots == 0, "%s: %llu unresolved roots", file,
	          (unsigned long long)cut->unresolved_roots);
	size_t nn = hg_n_nodes(r.g);
	CHECK(nn > 2000 && nn < 10000);
	int sorted = 1, named = 1;
	for (size_t i = 1; i < nn; i++)
		sorted &= hg_node(r.g, i - 1)->addr < hg_node(r.g, i)->addr;
	CHECK(sorted);
	for (size_t i = 0; i < nn; i++)
		named &= hg_node(r.g, i)->type != HG_NONE;
	CHECK(named);
	for (size_t i = 0; i < hg_n_types(r.g); i++)
		named &= strncmp(hg_type(r.g, i)->name, "Type 0x", 7) != 0;
	CHECK_MSG(named, "%s: a type the walk used was never named", file);
	CHECK(hg_find(r.g, hg_node(r.g, nn / 2)->addr) == nn / 2);
	CHECK(hg_find(r.g, hg_node(r.g, nn / 2)->addr + 1) == HG_NONE);
	int64_t pb, pe;
	CHECK(hg_pause(r.g, &pb, &pe) == 0 && pe > pb);

	struct heapsum *s;
	CHECK(heapsum_build(r.g, 5, &s) == 0);
	const struct hs_row *node = row_named(r.g, s, "HeapNode"), *leaf = row_named(r.g, s, "HeapLeaf"),
	                    *bytes = row_named(r.g, s, "System.Byte[]");
	CHECK(node && node->count == 1000 && node->bytes == 40000 && node->gen_count[HG_GEN2] == 1000);
	CHECK(leaf && leaf->count == 1000 && leaf->bytes == 24000);
	/* The three 100,000-byte arrays (100,024 with the header) in the LOH. */
	CHECK_MSG(bytes && bytes->gen_count[HG_LOH] == 3 && bytes->gen_bytes[HG_LOH] == 3 * 100024, "%s: LOH %llu %llu",
	          file, bytes ? (unsigned long long)bytes->gen_count[HG_LOH] : 0,
	          bytes ? (unsigned long long)bytes->gen_bytes[HG_LOH] : 0);
	CHECK(s->rows[0].type == bytes->type);
	uint64_t sum = 0;
	for (int k = 0; k < HG_N_GENS; k++)
		sum += s->gen_bytes[k];
	CHECK(sum == s->total_bytes);
	/* The walk, whole, adds up to what the runtime counts in its heap
	 * (99.7 % to 100.1 % in these). */
	uint64_t rep = hg_reported_bytes(r.g);
	CHECK_MSG(rep > 0 && s->total_bytes >= rep / 100 * 99 && s->total_bytes <= rep / 100 * 101,
	          "%s: walk %llu bytes, GCHeapStats %llu", file, (unsigned long long)s->total_bytes,
	          (unsigned long long)rep);

	const struct hs_path *pb_ = path_of(r.g, s, "System.Byte[]");
	CHECK(pb_ != NULL);
	if (pb_) {
		CHECK_STR(pb_->root, "s_entries (static)");
		CHECK(pb_->n_steps == 3);
		CHECK_STR(step_name(r.g, pb_, 0), "System.Collections.Generic.List<System.Byte[]>");
		CHECK_STR(step_name(r.g, pb_, 1), "System.Byte[][]");
		CHECK_STR(step_name(r.g, pb_, 2), "System.Byte[]");
		CHECK(pb_->count == 3 && pb_->bytes == 3 * 100024);
	}
	const struct hs_path *pl = path_of(r.g, s, "HeapLeaf");
	CHECK(pl != NULL);
	if (pl) {
		CHECK_STR(pl->root, "s_root (static)");
		CHECK(pl->n_steps == 2 && pl->nested[0] && !pl->nested[1]);
		CHECK_STR(step_name(r.g, pl, 0), "HeapNode");
		CHECK(pl->count == 1000);
	}
	heapsum_free(s);
	hg_free(r.g);
}

/* The same recording as a graph and as a histogram: the same rows, type
 * by type, generation by generation, and the same totals. */
static void test_histogram_recorded(const char *file)
{
	size_t len;
	uint8_t *b = testdata_load(file, &len);
	CHECK_MSG(b != NULL, "%s missing", file);
	if (!b)
		return;
	struct run full = {.g = hg_new(NULL)}, hist = {.g = hg_new_histogram(NULL)};
	struct run *runs[2] = {&full, &hist};
	for (int k = 0; k < 2; k++) {
		struct nettrace_callbacks cb = {.ctx = runs[k], .on_info = on_info, .on_event = on_event};
		nettrace_parser *p = nettrace_new(&cb, NULL);
		CHECK(nettrace_feed(p, b, len) == 0);
		CHECK(nettrace_finish(p) == 0);
		nettrace_free(p);
		CHECK_MSG(runs[k]->errors == 0, "%s: %d payload errors", file, runs[k]->errors);
		CHECK(hg_finish(runs[k]->g) == 0);
	}
	free(b);
	CHECK(!hg_is_histogram(full.g) && hg_is_histogram(hist.g));
	CHECK(hg_n_nodes(hist.g) == 0 && hg_n_roots(hist.g) == 0);
	CHECK(hg_n_nodes(full.g) > 1000);
	CHECK_MSG(hg_walk_bytes(full.g) == hg_walk_bytes(hist.g) && hg_walk_bytes(hist.g) > 0, "%s: %llu vs %llu", file,
	          (unsigned long long)hg_walk_bytes(full.g), (unsigned long long)hg_walk_bytes(hist.g));
	CHECK(hg_n_edges(full.g) == hg_n_edges(hist.g));
	CHECK(hg_reported_bytes(full.g) == hg_reported_bytes(hist.g));
	CHECK(hg_cut(hist.g)->unplaced == 0);
	CHECK(hg_tally(full.g, 0) == NULL && hg_tally(hist.g, hg_n_types(hist.g) + 1) == NULL);

	struct heapsum *sf, *sh;
	CHECK(heapsum_build(full.g, 5, &sf) == 0);
	CHECK(heapsum_build(hist.g, 5, &sh) == 0);
	CHECK(sh->n_paths == 0 && sf->n_paths > 0);
	CHECK(sf->total_count == hg_n_nodes(full.g) && sh->total_count == sf->total_count);
	CHECK(sh->total_bytes == sf->total_bytes);
	CHECK(memcmp(sh->gen_count, sf->gen_count, sizeof(sf->gen_count)) == 0);
	CHECK(memcmp(sh->gen_bytes, sf->gen_bytes, sizeof(sf->gen_bytes)) == 0);
	/* Generations were told: most objects are in gen2 after the induced GC
	 * (some, outside every range the runtime gave, are unknown in both). */
	CHECK_MSG(sh->gen_count[HG_GEN2] > sh->total_count / 2, "%s: gen2 %llu of %llu", file,
	          (unsigned long long)sh->gen_count[HG_GEN2], (unsigned long long)sh->total_count);
	CHECK_MSG(sh->n_rows == sf->n_rows && sh->n_rows > 10, "%s: %zu rows vs %zu", file, sh->n_rows, sf->n_rows);
	size_t same = 0;
	for (size_t i = 0; i < sh->n_rows && i < sf->n_rows; i++) {
		const struct hs_row *x = &sf->rows[i], *y = &sh->rows[i];
		const struct hg_type *tx = x->type == HG_NONE ? NULL : hg_type(full.g, x->type);
		const struct hg_type *ty = y->type == HG_NONE ? NULL : hg_type(hist.g, y->type);
		same += (tx ? ty && strcmp(tx->name, ty->name) == 0 : !ty) && x->count == y->count &&
		        x->bytes == y->bytes && memcmp(x->gen_count, y->gen_count, sizeof(x->gen_count)) == 0 &&
		        memcmp(x->gen_bytes, y->gen_bytes, sizeof(x->gen_bytes)) == 0;
	}
	CHECK_MSG(same == sf->n_rows, "%s: %zu of %zu rows agree", file, same, sf->n_rows);
	heapsum_free(sf);
	heapsum_free(sh);
	hg_free(full.g);
	hg_free(hist.g);
}

/* ---- hand-made payloads ---- */

static struct nettrace_metadata meta = {.provider = EV_RUNTIME_PROVIDER, .event_name = ""};

struct buf {
	uint8_t b[4096];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
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
static void pstr(struct buf *b, const char *s)
{
	for (; *s; s++)
		p16(b, (uint8_t)*s);
	p16(b, 0);
}

static int feed(struct heapgraph *g, uint32_t id, uint32_t version, const struct buf *b, int ps, char *err)
{
	meta.event_id = id;
	meta.version = version;
	struct nettrace_event ev = {.meta = &meta, .payload = b->b, .payload_size = (uint32_t)b->n};
	return hg_feed(g, &ev, ps, err, 256);
}

/* GCBulkNode/GCBulkEdge header. */
static void hdr(struct buf *b, uint32_t index, uint32_t count)
{
	b->n = 0;
	p32(b, index);
	p32(b, count);
	p16(b, 1);
}

static void node(struct buf *b, uint64_t addr, uint64_t size, uint64_t type, uint64_t edges)
{
	p64(b, addr);
	p64(b, size);
	p64(b, type);
	p64(b, edges);
}

static void type_event(struct buf *b, uint64_t id, const char *name)
{
	b->n = 0;
	p32(b, 1);
	p16(b, 1);
	p64(b, id);
	p64(b, 0x5000);
	p32(b, 0);
	p32(b, 0);
	p8(b, 0x12);
	pstr(b, name);
	p32(b, 1);
	p64(b, 0x99);
}

static void test_assembly(void)
{
	struct heapgraph *g = hg_new(NULL);
	struct buf b;
	char err[256];

	/* Edges first: their batch may come before the nodes'. Node 0x300
	 * refers to 0x100 and 0x200, 0x100 to 0x300 and to 0x999 (no such
	 * object), 0x200 to none. */
	hdr(&b, 0, 4);
	p64(&b, 0x100);
	p32(&b, 0);
	p64(&b, 0x200);
	p32(&b, 0);
	p64(&b, 0x300);
	p32(&b, 0);
	p64(&b, 0x999);
	p32(&b, 0);
	CHECK(feed(g, HG_EV_BULK_EDGE, 0, &b, 8, err) == 1);
	hdr(&b, 0, 3);
	node(&b, 0x300, 48, 0xA, 2);
	node(&b, 0x100, 24, 0xB, 2);
	node(&b, 0x200, 100000, 0xC, 0);
	CHECK(feed(g, HG_EV_BULK_NODE, 0, &b, 8, err) == 1);
	type_event(&b, 0xA, "Holder`2[System.Int32,System.String[,]]");
	CHECK(feed(g, HG_EV_BULK_TYPE, 0, &b, 8, err) == 1);
	type_event(&b, 0xB, "Item");
	CHECK(feed(g, HG_EV_BULK_TYPE, 0, &b, 8, err) == 1);
	/* Roots: a static s_holder -> 0x300; a handle to 0 (ignored). */
	b.n = 0;
	p32(&b, 1);
	p64(&b, 1);
	p16(&b, 1);
	p64(&b, 0x7000);
	p64(&b, 0x300);
	p64(&b, 0xA);
	p32(&b, 0);
	pstr(&b, "s_holder");
	CHECK(feed(g, HG_EV_BULK_ROOT_STATIC_VAR, 0, &b, 8, err) == 1);
	hdr(&b, 0, 1);
	p64(&b, 0);
	p8(&b, HG_ROOT_HANDLE);
	p32(&b, 0);
	p64(&b, 0x8000);
	CHECK(feed(g, HG_EV_BULK_ROOT_EDGE, 0, &b, 8, err) == 1);
	/* 0x200 in the LOH, the rest in gen0. */
	b.n = 0;
	p8(&b, 3);
	p64(&b, 0x200);
	p64(&b, 0x100);
	p64(&b, 0x1000);
	p16(&b, 1);
	CHECK(feed(g, HG_EV_GENERATION_RANGE, 0, &b, 8, err) == 1);
	b.n = 0;
	p8(&b, 0);
	p64(&b, 0x100);
	p64(&b, 0x100);
	p64(&b, 0x1000);
	p16(&b, 1);
	CHECK(feed(g, HG_EV_GENERATION_RANGE, 0, &b, 8, err) == 1);
	CHECK(!hg_walk_done(g));
	CHECK(hg_finish(g) == 0);

	CHECK(hg_n_nodes(g) == 3);
	CHECK(hg_node(g, 0)->addr == 0x100 && hg_node(g, 2)->addr == 0x300);
	CHECK(hg_node(g, 1)->gen == HG_LOH && hg_node(g, 0)->gen == HG_GEN0 && hg_node(g, 2)->gen == HG_GEN_UNKNOWN);
	size_t n;
	const uint32_t *e = hg_edges(g, 2, &n); /* 0x300 */
	CHECK(n == 2 && e[0] == 0 && e[1] == 1);
	e = hg_edges(g, 0, &n); /* 0x100 */
	CHECK(n == 2 && e[0] == 2 && e[1] == HG_NONE);
	e = hg_edges(g, 1, &n);
	CHECK(n == 0);
	CHECK(hg_cut(g)->unresolved_edges == 1);
	CHECK(hg_n_roots(g) == 1);
	CHECK(hg_root(g, 0)->node == 2 && hg_root(g, 0)->kind == HG_ROOT_STATIC);
	CHECK_STR(hg_root(g, 0)->name, "s_holder");
	CHECK_STR(hg_type(g, hg_node(g, 2)->type)->name, "Holder<System.Int32,System.String[,]>");
	CHECK_STR(hg_type(g, hg_node(g, 1)->type)->name, "Type 0xc");

	struct heapsum *s;
	CHECK(heapsum_build(g, 10, &s) == 0);
	CHECK(s->total_count == 3 && s->total_bytes == 100072);
	CHECK(s->n_rows == 3 && s->rows[0].bytes == 100000);
	CHECK(s->unreachable_count == 0);
	CHECK(s->n_paths == 3);
	/* Item (0x100) is held by the holder: root -> Holder -> Item. */
	const struct hs_path *p = path_of(g, s, "Item");
	CHECK(p && p->n_steps == 2 && strcmp(p->root, "s_holder (static)") == 0);
	heapsum_free(s);
	hg_free(g);
}

static void test_malformed(void)
{
	struct heapgraph *g = hg_new(NULL);
	struct buf b;
	char err[256];

	/* Not a runtime event, or not a heap event. */
	struct nettrace_metadata other = {.provider = "Other", .event_name = "", .event_id = HG_EV_BULK_NODE};
	struct nettrace_event ev = {.meta = &other, .payload = b.b, .payload_size = 0};
	CHECK(hg_feed(g, &ev, 8, err, sizeof(err)) == 0);
	b.n = 0;
	CHECK(feed(g, 80, 0, &b, 8, err) == 0);

	/* Truncated headers. */
	for (size_t cut = 0; cut < 10; cut++) {
		hdr(&b, 0, 0);
		b.n = cut;
		CHECK(feed(g, HG_EV_BULK_NODE, 0, &b, 8, err) == -EBADMSG);
		CHECK(feed(g, HG_EV_BULK_EDGE, 0, &b, 8, err) == -EBADMSG);
		CHECK(feed(g, HG_EV_BULK_ROOT_EDGE, 0, &b, 8, err) == -EBADMSG);
	}
	/* Counts beyond the payload, and huge ones. */
	hdr(&b, 0, 2);
	node(&b, 0x100, 24, 1, 0);
	CHECK(feed(g, HG_EV_BULK_NODE, 0, &b, 8, err) == -EBADMSG);
	CHECK(strstr(err, "GCBulkNode") != NULL);
	hdr(&b, 0, UINT32_MAX);
	CHECK(feed(g, HG_EV_BULK_EDGE, 0, &b, 8, err) == -EBADMSG);
	b.n = 0;
	p32(&b, UINT32_MAX);
	p16(&b, 1);
	CHECK(feed(g, HG_EV_BULK_TYPE, 0, &b, 8, err) == -EBADMSG);
	CHECK(feed(g, HG_EV_BULK_ROOT_CCW, 0, &b, 8, err) == -EBADMSG);
	CHECK(feed(g, HG_EV_BULK_RCW, 0, &b, 8, err) == -EBADMSG);
	b.n = 0;
	p32(&b, UINT32_MAX);
	p64(&b, 1);
	p16(&b, 1);
	CHECK(feed(g, HG_EV_BULK_ROOT_STATIC_VAR, 0, &b, 8, err) == -EBADMSG);
	/* A node declaring more references than can be. */
	hdr(&b, 0, 1);
	node(&b, 0x100, 24, 1, (uint64_t)1 << 40);
	CHECK(feed(g, HG_EV_BULK_NODE, 0, &b, 8, err) == -EBADMSG);
	/* A type name with no end; a parameter count past the payload. */
	type_event(&b, 5, "Name");
	b.n -= 14; /* into the name */
	CHECK(feed(g, HG_EV_BULK_TYPE, 0, &b, 8, err) == -EBADMSG);
	type_event(&b, 5, "Name");
	b.n -= 12;
	p32(&b, 1000);
	CHECK(feed(g, HG_EV_BULK_TYPE, 0, &b, 8, err) == -EBADMSG);
	/* A static field name with no end. */
	b.n = 0;
	p32(&b, 1);
	p64(&b, 1);
	p16(&b, 1);
	p64(&b, 0x7000);
	p64(&b, 0x300);
	p64(&b, 0xA);
	p32(&b, 0);
	p16(&b, 'x');
	CHECK(feed(g, HG_EV_BULK_ROOT_STATIC_VAR, 0, &b, 8, err) == -EBADMSG);
	/* A version not known. */
	hdr(&b, 0, 0);
	CHECK(feed(g, HG_EV_BULK_NODE, 1, &b, 8, err) == -EBADMSG);
	/* Nothing of the above was kept. */
	CHECK(hg_n_nodes(g) == 0 && hg_n_types(g) == 0 && hg_n_roots(g) == 0);
	hg_free(g);
}

static void test_limits(void)
{
	struct hg_limits lim = {.max_nodes = 2, .max_edges = 3};
	struct heapgraph *g = hg_new(&lim);
	struct buf b;
	char err[256];

	/* Three nodes of one edge each, then a batch lost (Index 0, then 2),
	 * then more edges than were declared. */
	hdr(&b, 0, 3);
	node(&b, 0x100, 24, 1, 1);
	node(&b, 0x200, 24, 1, 1);
	node(&b, 0x300, 24, 1, 1);
	CHECK(feed(g, HG_EV_BULK_NODE, 0, &b, 8, err) == 1);
	hdr(&b, 2, 0);
	CHECK(feed(g, HG_EV_BULK_NODE, 0, &b, 8, err) == 1);
	hdr(&b, 0, 5);
	for (int i = 0; i < 5; i++) {
		p64(&b, 0x200);
		p32(&b, 0);
	}
	CHECK(feed(g, HG_EV_BULK_EDGE, 0, &b, 8, err) == 1);
	CHECK(hg_finish(g) == 0);
	const struct hg_cut *c = hg_cut(g);
	CHECK(hg_n_nodes(g) == 2 && c->nodes == 1);
	CHECK(hg_n_edges(g) == 3 && c->edges == 2);
	CHECK(c->lost_batches == 1);
	size_t n;
	const uint32_t *e = hg_edges(g, 1, &n);
	CHECK(n == 1 && e[0] == 1);
	hg_free(g);

	/* 4-byte pointers; a node limit of 0 means the default. */
	struct hg_limits none = {0};
	g = hg_new(&none);
	hdr(&b, 0, 2);
	p32(&b, 0x2000);
	p64(&b, 12);
	p64(&b, 7);
	p64(&b, 1);
	p32(&b, 0x1000);
	p64(&b, 16);
	p64(&b, 7);
	p64(&b, 0);
	CHECK(feed(g, HG_EV_BULK_NODE, 0, &b, 4, err) == 1);
	hdr(&b, 0, 1);
	p32(&b, 0x1000);
	p32(&b, 0);
	CHECK(feed(g, HG_EV_BULK_EDGE, 0, &b, 4, err) == 1);
	CHECK(hg_finish(g) == 0);
	CHECK(hg_n_nodes(g) == 2 && hg_node(g, 0)->addr == 0x1000 && hg_node(g, 1)->size == 12);
	e = hg_edges(g, 1, &n);
	CHECK(n == 1 && e[0] == 0);
	hg_free(g);
}

/* The in-place sort, on the orders a walk could give: shuffled, reversed,
 * many equal addresses; each node keeps its own size and edges. */
static void test_sort(void)
{
	enum { N = 20000, BATCH = 100 };
	for (int shape = 0; shape < 3; shape++) {
		struct heapgraph *g = hg_new(NULL);
		struct buf b;
		char err[256];
		uint64_t seed = 12345;
		for (int k = 0; k < N / BATCH; k++) {
			hdr(&b, (uint32_t)k, BATCH);
			for (int i = 0; i < BATCH; i++) {
				int idx = k * BATCH + i;
				uint64_t a;
				seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
				if (shape == 0)
					a = 0x10000 + (seed >> 33) % 1000000 * 8 * 64 +
					    (uint64_t)idx * 8; /* distinct */
				else if (shape == 1)
					a = 0x10000 + (uint64_t)(N - idx) * 16;
				else
					a = 0x10000 + (uint64_t)(idx % 7) * 16;
				/* The size says which node it was: a + 1. */
				node(&b, a, a + 1, 0, idx == 0 ? 1 : 0);
			}
			CHECK(feed(g, HG_EV_BULK_NODE, 0, &b, 8, err) == 1);
		}
		hdr(&b, 0, 1);
		p64(&b, 0x10000 + 16);
		p32(&b, 0);
		CHECK(feed(g, HG_EV_BULK_EDGE, 0, &b, 8, err) == 1);
		CHECK(hg_finish(g) == 0);
		int ok = 1, edges = 0;
		for (size_t i = 0; i < hg_n_nodes(g); i++) {
			const struct hg_node *nd = hg_node(g, i);
			ok &= nd->size == nd->addr + 1;
			if (i > 0)
				ok &= hg_node(g, i - 1)->addr <= nd->addr;
			edges += (int)nd->n_edges;
		}
		CHECK_MSG(ok, "shape %d not sorted", shape);
		CHECK(hg_n_nodes(g) == N && edges == 1);
		if (shape == 1)
			CHECK(hg_find(g, 0x10000 + 16) == 0 && hg_find(g, 0x10000 + 16 * N) == N - 1);
		hg_free(g);
	}
}

static void range_event(struct buf *b, uint8_t gen, uint64_t start, uint64_t used)
{
	b->n = 0;
	p8(b, gen);
	p64(b, start);
	p64(b, used);
	p64(b, used);
	p16(b, 1);
}

/* A histogram places the objects of a type in a MiB when no generation
 * boundary lies among them, and counts them unplaced when one does
 * (segments: gen1 and gen0 in one MiB); the ranges may come after the
 * objects. */
static void test_histogram_places(void)
{
	struct heapgraph *g = hg_new_histogram(NULL);
	struct buf b;
	char err[256];

	hdr(&b, 0, 5);
	node(&b, 0x10000100, 24, 0xA, 1);  /* gen1 */
	node(&b, 0x10000200, 24, 0xA, 0);  /* gen1 */
	node(&b, 0x10080100, 32, 0xA, 0);  /* gen0, with the two above: unplaced */
	node(&b, 0x10080200, 40, 0xB, 0);  /* gen0 */
	node(&b, 0x30000000, 90000, 0, 0); /* no type, LOH */
	CHECK(feed(g, HG_EV_BULK_NODE, 0, &b, 8, err) == 1);
	hdr(&b, 0, 1);
	p64(&b, 0x10000200);
	p32(&b, 0);
	CHECK(feed(g, HG_EV_BULK_EDGE, 0, &b, 8, err) == 1);
	type_event(&b, 0xB, "List`1[System.String]");
	CHECK(feed(g, HG_EV_BULK_TYPE, 0, &b, 8, err) == 1);
	range_event(&b, 1, 0x10000000, 0x80000);
	CHECK(feed(g, HG_EV_GENERATION_RANGE, 0, &b, 8, err) == 1);
	range_event(&b, 0, 0x10080000, 0x80000);
	CHECK(feed(g, HG_EV_GENERATION_RANGE, 0, &b, 8, err) == 1);
	range_event(&b, 3, 0x30000000, 0x100000);
	CHECK(feed(g, HG_EV_GENERATION_RANGE, 0, &b, 8, err) == 1);
	CHECK(hg_tally(g, 0) == NULL); /* before hg_finish */
	CHECK(hg_finish(g) == 0);
	CHECK(hg_n_types(g) == 2 && hg_n_edges(g) == 1 && hg_n_nodes(g) == 0);
	CHECK(hg_walk_bytes(g) == 24 + 24 + 32 + 40 + 90000);
	const struct hg_tally *a = hg_tally(g, 0), *t = hg_tally(g, 1), *none = hg_tally(g, 2);
	CHECK(a && t && none);
	if (!a || !t || !none) {
		hg_free(g);
		return;
	}
	CHECK(strcmp(hg_type(g, 0)->name, "Type 0xa") == 0 && strcmp(hg_type(g, 1)->name, "List<System.String>") == 0);
	CHECK(a->count == 3 && a->bytes == 80 && a->gen_count[HG_GEN_UNKNOWN] == 3 &&
	      a->gen_bytes[HG_GEN_UNKNOWN] == 80);
	CHECK(t->count == 1 && t->gen_count[HG_GEN0] == 1 && t->gen_bytes[HG_GEN0] == 40);
	CHECK(none->count == 1 && none->gen_bytes[HG_LOH] == 90000);
	CHECK(hg_cut(g)->unplaced == 3);
	hg_free(g);
}

static void test_walk_events(void)
{
	struct heapgraph *g = hg_new(NULL);
	struct buf b;
	char err[256];
	struct nettrace_event ev = {.meta = &meta};

	meta.version = 1;
	/* GCSuspendEEBegin, a gen1 GC (not the walk), then the gen2 one. */
	meta.event_id = 9;
	ev.timestamp = 100;
	ev.payload_size = 0;
	CHECK(hg_feed(g, &ev, 8, err, sizeof(err)) == 1);
	uint32_t start[5] = {htole32(7), htole32(1), htole32(1), htole32(0), 0};
	meta.event_id = 1;
	ev.payload = (const uint8_t *)start;
	ev.payload_size = 18;
	CHECK(hg_feed(g, &ev, 8, err, sizeof(err)) == 1);
	CHECK(hg_gc_count(g) == 0);
	start[0] = htole32(8);
	start[1] = htole32(2);
	ev.timestamp = 150;
	CHECK(hg_feed(g, &ev, 8, err, sizeof(err)) == 1);
	CHECK(hg_gc_count(g) == 8 && !hg_walk_done(g));
	meta.event_id = 2;
	ev.timestamp = 400;
	CHECK(hg_feed(g, &ev, 8, err, sizeof(err)) == 1);
	CHECK(hg_walk_done(g));
	meta.event_id = 3;
	ev.timestamp = 420;
	ev.payload_size = 0;
	CHECK(hg_feed(g, &ev, 8, err, sizeof(err)) == 1);
	int64_t pb, pe;
	CHECK(hg_pause(g, &pb, &pe) == 0 && pb == 100 && pe == 420);
	CHECK(hg_walk_span(g, &pb, &pe) == 0 && pb == 150 && pe == 400);
	(void)b;
	hg_free(g);
}

int main(void)
{
	test_recorded("heap-net10.nettrace");
	test_recorded("heap-net9.nettrace");
	test_recorded("heap-net8.nettrace");
	test_histogram_recorded("heap-net10.nettrace");
	test_histogram_recorded("heap-net9.nettrace");
	test_histogram_recorded("heap-net8.nettrace");
	test_histogram_places();
	test_assembly();
	test_malformed();
	test_limits();
	test_sort();
	test_walk_events();
	return check_done();
}
