/* Fuzz target: the heap-walk decoders, the graph assembly and the summary
 * (heapgraph.h, heapsum.h). Two shapes of input:
 *  - a nettrace stream ("Nettrace..."): parsed, every event fed to one
 *    graph, as the snapshot driver does (seeds: the recorded heap snapshots
 *    tests/data/heap-net*.nettrace);
 *  - else a list of events: byte 0 the pointer size (4 when odd, else 8),
 *    then records of one byte choosing the event (and its version when the
 *    top bit is set: 1), a u16 length and the payload, so that mutations hit
 *    the payloads directly.
 * Small limits make the cutting paths run. Every event goes to a graph and
 * to a histogram (hg_new_histogram). After the input, hg_finish, every
 * accessor and heapsum_build, for both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/events.h"
#include "dumpwatch/heapgraph.h"
#include "dumpwatch/heapsum.h"
#include "dumpwatch/nettrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint32_t ids[] = {1,
                               2,
                               3,
                               9,
                               HG_EV_BULK_TYPE,
                               HG_EV_BULK_ROOT_EDGE,
                               HG_EV_BULK_ROOT_CWT_EDGE,
                               HG_EV_BULK_NODE,
                               HG_EV_BULK_EDGE,
                               HG_EV_GENERATION_RANGE,
                               HG_EV_BULK_ROOT_CCW,
                               HG_EV_BULK_RCW,
                               HG_EV_BULK_ROOT_STATIC_VAR};

struct ctx {
	struct heapgraph *g, *h;
	int ps;
};

static void on_info(void *c, const struct nettrace_info *info)
{
	((struct ctx *)c)->ps = info->pointer_size;
}

static void on_event(void *c, const struct nettrace_event *ev)
{
	struct ctx *x = c;
	char err[256];
	hg_feed(x->g, ev, x->ps, err, sizeof(err));
	hg_feed(x->h, ev, x->ps, err, sizeof(err));
}

static void walk(struct heapgraph *g)
{
	volatile uint64_t sink = 0;

	if (hg_finish(g) < 0)
		return;
	for (size_t i = 0; i < hg_n_nodes(g); i++) {
		size_t n;
		const uint32_t *e = hg_edges(g, i, &n);
		for (size_t k = 0; k < n; k++)
			sink += e[k] == HG_NONE ? 1 : hg_node(g, e[k])->size;
		const struct hg_node *nd = hg_node(g, i);
		if (nd->type != HG_NONE)
			sink += strlen(hg_type(g, nd->type)->name);
		sink += hg_find(g, nd->addr);
	}
	for (size_t i = 0; i < hg_n_roots(g); i++) {
		const struct hg_root *r = hg_root(g, i);
		sink += r->node != HG_NONE ? hg_node(g, r->node)->size : 0;
		if (r->owner_type != HG_NONE)
			sink += strlen(hg_type(g, r->owner_type)->name);
	}
	for (size_t t = 0; hg_is_histogram(g) && t <= hg_n_types(g); t++) {
		const struct hg_tally *ta = hg_tally(g, t);
		sink += ta->count + ta->bytes + ta->gen_count[HG_GEN_UNKNOWN];
		if (t < hg_n_types(g))
			sink += strlen(hg_type(g, t)->name);
	}
	sink += hg_walk_bytes(g);
	struct heapsum *s;
	if (heapsum_build(g, 8, &s) == 0) {
		for (size_t i = 0; i < s->n_paths; i++)
			for (size_t k = 0; k < s->paths[i].n_steps; k++)
				if (s->paths[i].steps[k] != HG_NONE)
					sink += strlen(hg_type(g, s->paths[i].steps[k])->name);
		heapsum_free(s);
	}
	(void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hg_limits lim = {
	    .max_nodes = 5000, .max_edges = 5000, .max_types = 500, .max_roots = 500, .max_name_bytes = 65536};
	struct ctx x = {.g = hg_new(&lim), .h = hg_new_histogram(&lim), .ps = 8};

	if (!x.g || !x.h) {
		hg_free(x.g);
		hg_free(x.h);
		return 0;
	}
	if (size >= 8 && memcmp(data, "Nettrace", 8) == 0) {
		struct nettrace_callbacks cb = {.ctx = &x, .on_info = on_info, .on_event = on_event};
		nettrace_parser *p = nettrace_new(&cb, NULL);
		if (p) {
			nettrace_feed(p, data, size);
			nettrace_free(p);
		}
	} else if (size > 0) {
		struct nettrace_metadata meta = {.provider = EV_RUNTIME_PROVIDER, .event_name = ""};
		int ps = data[0] & 1 ? 4 : 8;
		size_t off = 1;
		while (size - off >= 3) {
			uint8_t sel = data[off];
			size_t len = (size_t)data[off + 1] | (size_t)data[off + 2] << 8;
			off += 3;
			if (len > size - off)
				len = size - off;
			meta.event_id = ids[(sel & 0x7f) % (sizeof(ids) / sizeof(ids[0]))];
			meta.version = sel & 0x80 ? 1 : 0;
			if (meta.event_id < 10)
				meta.version = 1;
			/* A copy of its own, so that a read past it is seen. */
			uint8_t *payload = malloc(len ? len : 1);
			if (!payload)
				break;
			memcpy(payload, data + off, len);
			struct nettrace_event ev = {.meta = &meta,
			                            .payload = payload,
			                            .payload_size = (uint32_t)len,
			                            .timestamp = (int64_t)off};
			char err[256];
			hg_feed(x.g, &ev, ps, err, sizeof(err));
			hg_feed(x.h, &ev, ps, err, sizeof(err));
			free(payload);
			off += len;
		}
	}
	walk(x.g);
	walk(x.h);
	hg_free(x.g);
	hg_free(x.h);
	return 0;
}
