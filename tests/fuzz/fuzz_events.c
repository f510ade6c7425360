/* Fuzz target: the payload decoders, under the metadata the .NET runtime
 * really sends. At start the recorded trace gc-alloc-counters.nettrace is
 * parsed and its metadata records (runtime GC events, EventCounters of
 * System.Runtime) kept. Input: byte 0 picks the metadata, byte 1 the pointer
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
static nettrace_parser *parser; /* owns the metadata; kept for the run */
static uint32_t meta_ids[MAX_METAS];
static const struct nettrace_metadata *metas[MAX_METAS];
static size_t n_metas;

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
	for (size_t i = 0; i < n_metas; i++)
		if (meta_ids[i] == ev->meta->id)
			metas[i] = ev->meta;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static uint8_t buf[1 << 16];
	struct nettrace_callbacks cb = {.on_metadata = on_meta, .on_event = on_event};
	FILE *f = fopen(DW_TEST_DATA "/gc-alloc-counters.nettrace", "rb");
	size_t n;

	(void)argc;
	(void)argv;
	parser = nettrace_new(&cb, NULL);
	if (!f || !parser) {
		fprintf(stderr, "fuzz_events: cannot read the recorded trace\n");
		exit(1);
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (nettrace_feed(parser, buf, n) < 0)
			break;
	fclose(f);
	/* Keep only records an event used (their pointers are known). */
	size_t k = 0;
	for (size_t i = 0; i < n_metas; i++)
		if (metas[i])
			metas[k++] = metas[i];
	n_metas = k;
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
