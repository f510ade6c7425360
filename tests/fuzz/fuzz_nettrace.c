/* Fuzz target: the nettrace stream parser, fed in chunks whose sizes the
 * input chooses, with every event it delivers run through the payload
 * decoders. The input is the stream (a recorded trace is a seed as it is);
 * its length picks the chunking. */
#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/events.h"
#include "dumpwatch/nettrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz {
	int pointer_size;
	uint64_t decoded;
};

static void on_info(void *ctx, const struct nettrace_info *info)
{
	struct fz *z = ctx;
	z->pointer_size = info->pointer_size;
}

static void on_event(void *ctx, const struct nettrace_event *ev)
{
	struct fz *z = ctx;
	struct ev_record r;
	char err[256];

	if (events_decode(ev, z->pointer_size, &r, err, sizeof(err)) == 1)
		z->decoded++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t chunks[8] = {1, 3, 7, 64, 513, 4096, 65536, (size_t)-1};
	struct fz z = {8, 0};
	struct nettrace_callbacks cb = {.ctx = &z, .on_info = on_info, .on_event = on_event};
	/* Small limits keep each run's memory bounded. */
	struct nettrace_limits lim = {.max_block = 1u << 20, .max_metadata = 512, .max_fields = 256};
	nettrace_parser *p;

	size_t chunk = chunks[size % 8];
	p = nettrace_new(&cb, &lim);
	if (!p)
		return 0;
	for (size_t off = 0; off < size;) {
		size_t n = size - off < chunk ? size - off : chunk;
		if (nettrace_feed(p, data + off, n) < 0)
			break;
		off += n;
	}
	nettrace_finish(p);
	(void)nettrace_error(p);
	nettrace_free(p);
	return 0;
}
