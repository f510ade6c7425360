/* Fuzz target: the payload decoders, under the metadata the .NET runtime
 * really sends. At start the recorded traces gc-alloc-counters.nettrace,
 * exceptions-net10.nettrace and meters-net10.nettrace are parsed and their
 * metadata records (runtime GC and exception events, EventCounters of
 * System.Runtime, System.Diagnostics.Metrics values) kept. Input: byte 0 picks the metadata, byte 1 the pointer
 * size, the rest is the payload. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/events.h"
#include "dumpwatch/nettrace.h"

#ifndef DW_TEST_DATA
#error "DW_TEST_DATA: the directory of the recorded traces"
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_METAS 64
static nettrace_parser *parsers[3]; /* own the metadata; kept for the run */
static uint32_t meta_ids[MAX_METAS];
static const struct nettrace_metadata *metas[MAX_METAS];
static size_t n_metas;
static size_t cur_first; /* the first record of the trace being read */

static void on_meta(void *ctx, const struct nettrace_metadata *m)
{
	(void)ctx;
	if (n_metas < MAX_METAS)
		meta_ids[n_metas++] = m->id;
}

/* Pointers are taken once the whole trace is read: a record stays valid
 * until its id is defined again. */
static void on_event(void *ctx, const struct nettrace_event *ev)
{
	(void)ctx;
	for (size_t i = cur_first; i < n_metas; i++)
		if (meta_ids[i] == ev->meta->id)
			metas[i] = ev->meta;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static uint8_t buf[1 << 16];
	static const char *const files[3] = {DW_TEST_DATA "/gc-alloc-counters.nettrace",
	                                     DW_TEST_DATA "/exceptions-net10.nettrace",
	                                     DW_TEST_DATA "/meters-net10.nettrace"};
	struct nettrace_callbacks cb = {.on_metadata = on_meta, .on_event = on_event};
	size_t n, k = 0;

	(void)argc;
	(void)argv;
	for (int fi = 0; fi < 3; fi++) {
		FILE *f = fopen(files[fi], "rb");
		size_t first = n_metas;
		cur_first = first;
		parsers[fi] = nettrace_new(&cb, NULL);
		if (!f || !parsers[fi]) {
			fprintf(stderr, "fuzz_events: cannot read the recorded trace %s\n", files[fi]);
			exit(1);
		}
		while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
			if (nettrace_feed(parsers[fi], buf, n) < 0)
				break;
		fclose(f);
		/* Keep only records an event used (their pointers are known). */
		for (size_t i = first; i < n_metas; i++)
			if (metas[i]) {
				meta_ids[k] = meta_ids[i];
				metas[k++] = metas[i];
			}
		n_metas = k;
	}
	if (n_metas == 0) {
		fprintf(stderr, "fuzz_events: no metadata in the recorded trace\n");
		exit(1);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nettrace_event ev;
	struct ev_record r;
	char err[256];

	if (size < 2)
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.meta = metas[data[0] % n_metas];
	int ps = (data[1] & 1) ? 8 : 4;
	/* A copy of exactly the payload's size, so reads past it are caught. */
	uint8_t *payload = malloc(size - 2 ? size - 2 : 1);
	if (!payload)
		return 0;
	memcpy(payload, data + 2, size - 2);
	ev.payload = payload;
	ev.payload_size = (uint32_t)(size - 2);
	(void)events_decode(&ev, ps, &r, err, sizeof(err));
	free(payload);
	return 0;
}
