/* Recorded heap snapshots (tests/data/heap-net*.nettrace) fed through the
 * nettrace parser into a heapgraph, for the unit tests of the graph and of
 * what is built on it. */
#ifndef DUMPWATCH_TEST_HEAPREC_H
#define DUMPWATCH_TEST_HEAPREC_H

#include <stdio.h>
#include <stdlib.h>

#include "dumpwatch/heapgraph.h"
#include "dumpwatch/nettrace.h"
#include "testdata.h"

struct run {
	struct heapgraph *g;
	int pointer_size;
	int errors;
	char err[256];
	unsigned by_id[64];
	unsigned bad_version;
};

static void on_info(void *ctx, const struct nettrace_info *info)
{
	((struct run *)ctx)->pointer_size = info->pointer_size;
}

static void on_event(void *ctx, const struct nettrace_event *ev)
{
	struct run *r = ctx;
	int k = hg_feed(r->g, ev, r->pointer_size, r->err, sizeof(r->err));
	if (k < 0) {
		r->errors++;
		fprintf(stderr, "hg_feed: %s\n", r->err);
	}
	if (k == 1 && ev->meta->event_id < 64) {
		r->by_id[ev->meta->event_id]++;
		if (ev->meta->version != 0 && ev->meta->event_id >= 15)
			r->bad_version++;
	}
}

/* The finished graph of a recorded snapshot, NULL when it cannot be read
 * or fed whole. */
static inline struct heapgraph *heaprec_graph(const char *name)
{
	size_t len;
	uint8_t *b = testdata_load(name, &len);
	if (!b)
		return NULL;
	struct run r = {.g = hg_new(NULL)};
	struct nettrace_callbacks cb = {.ctx = &r, .on_info = on_info, .on_event = on_event};
	nettrace_parser *p = nettrace_new(&cb, NULL);
	int ok = r.g && p && nettrace_feed(p, b, len) == 0 && nettrace_finish(p) == 0;
	nettrace_free(p);
	free(b);
	if (!ok || r.errors || hg_finish(r.g) < 0) {
		hg_free(r.g);
		return NULL;
	}
	return r.g;
}

#endif
