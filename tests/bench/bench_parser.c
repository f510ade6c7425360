/* Throughput of the nettrace parser on one core, for a recorded trace held in
 * memory. Not a test: it prints numbers.
 *
 *   bench_parser [TRACE] [MB]
 *
 * The trace's header, Trace object and metadata/stack/sequence-point blocks
 * are kept once; its EventBlocks are re-framed (with the alignment padding of
 * their new offsets) and repeated until the stream holds about MB megabytes
 * (default 200). The stream is then parsed whole in one nettrace_feed() call
 * (blocks parsed in place) and in 64 KiB and 4 KiB chunks (the way a socket
 * delivers it, blocks straddling chunks are gathered). Wall time is
 * CLOCK_MONOTONIC; the best of 3 runs is reported, with peak RSS. */
#include "dumpwatch/nettrace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#ifndef DW_TEST_DATA
#define DW_TEST_DATA "tests/data"
#endif

struct buf {
	uint8_t *d;
	size_t n, cap;
};

static int put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 1 << 20;
		uint8_t *nd;

		while (cap < b->n + n)
			cap *= 2;
		nd = realloc(b->d, cap);
		if (!nd)
			return -1;
		b->d = nd;
		b->cap = cap;
	}
	memcpy(b->d + b->n, p, n);
	b->n += n;
	return 0;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Writes one block object named name with the given body at the end of out. */
static int put_block(struct buf *out, const char *name, const uint8_t *body, uint32_t size)
{
	uint8_t hdr[15] = {5, 5, 1, 2, 0, 0, 0, 2, 0, 0, 0};
	uint32_t len = (uint32_t)strlen(name);
	static const uint8_t zeros[3], end = 6;

	memcpy(hdr + 11, &len, 4);
	if (put(out, hdr, sizeof(hdr)) || put(out, name, len) || put(out, &end, 1) || put(out, &size, 4))
		return -1;
	if (out->n % 4 && put(out, zeros, 4 - out->n % 4))
		return -1;
	return put(out, body, size) || put(out, &end, 1) ? -1 : 0;
}

/* Builds the benchmark stream from a trace; returns 0 or -1. */
static int build(const uint8_t *t, size_t n, size_t target, struct buf *out)
{
	struct {
		size_t body;
		uint32_t size;
	} blocks[4096];
	size_t nblocks = 0, pos = 32, prologue_end;
	static const uint8_t null_tag = 1;

	if (n < 32 || memcmp(t, "Nettrace", 8) != 0)
		return -1;
	/* Walk the objects; remember where each EventBlock body is. */
	while (pos < n && t[pos] == 5) {
		uint32_t len, size;
		size_t name;

		if (pos + 15 > n)
			return -1;
		len = rd32(t + pos + 11);
		name = pos + 15;
		if (len > 64 || name + len + 1 > n)
			return -1;
		pos = name + len + 1;
		if (len == 5 && memcmp(t + name, "Trace", 5) == 0) {
			pos += 49;
			continue;
		}
		if (pos + 4 > n)
			return -1;
		size = rd32(t + pos);
		pos += 4;
		pos = (pos + 3) & ~(size_t)3;
		if (pos + size + 1 > n)
			return -1;
		if (len == 10 && memcmp(t + name, "EventBlock", 10) == 0 && nblocks < 4096) {
			blocks[nblocks].body = pos;
			blocks[nblocks].size = size;
			nblocks++;
		}
		pos += size + 1;
	}
	if (pos >= n || t[pos] != 1 || nblocks == 0)
		return -1;
	prologue_end = pos; /* the whole original stream but its closing tag */
	if (put(out, t, prologue_end))
		return -1;
	while (out->n < target)
		for (size_t i = 0; i < nblocks; i++)
			if (put_block(out, "EventBlock", t + blocks[i].body, blocks[i].size))
				return -1;
	return put(out, &null_tag, 1);
}

struct counts {
	uint64_t events;
	uint64_t payload_bytes;
};

static void on_event(void *ctx, const struct nettrace_event *ev)
{
	struct counts *c = ctx;

	c->events++;
	c->payload_bytes += ev->payload_size;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Parses the stream in chunks of `chunk` bytes; returns seconds or -1. */
static double run(const struct buf *s, size_t chunk, struct counts *c)
{
	struct nettrace_callbacks cb = {.ctx = c, .on_event = on_event};
	nettrace_parser *p;
	double t0, t1;
	int r = 0;

	memset(c, 0, sizeof(*c));
	p = nettrace_new(&cb, NULL);
	if (!p)
		return -1;
	t0 = now();
	for (size_t pos = 0; pos < s->n && r == 0; pos += chunk)
		r = nettrace_feed(p, s->d + pos, chunk < s->n - pos ? chunk : s->n - pos);
	if (r == 0)
		r = nettrace_finish(p);
	t1 = now();
	if (r < 0)
		fprintf(stderr, "bench_parser: %s\n", nettrace_error(p));
	nettrace_free(p);
	return r < 0 ? -1 : t1 - t0;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : DW_TEST_DATA "/gc-alloc-counters.nettrace";
	size_t mb = argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 200;
	struct buf trace = {0}, stream = {0};
	uint8_t chunk[65536];
	struct rusage ru;
	size_t got;
	FILE *f = fopen(path, "rb");

	if (!f) {
		perror(path);
		return 1;
	}
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (put(&trace, chunk, got)) {
			fprintf(stderr, "bench_parser: out of memory\n");
			return 1;
		}
	fclose(f);
	if (build(trace.d, trace.n, mb * 1000000, &stream)) {
		fprintf(stderr, "bench_parser: %s is not a nettrace stream this tool can replicate\n", path);
		return 1;
	}
	printf("trace %s: %zu bytes, stream %.1f MB\n", path, trace.n, (double)stream.n / 1e6);

	static const size_t chunks[] = {0, 65536, 4096};
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		size_t c = chunks[i] ? chunks[i] : stream.n;
		double best = -1;
		struct counts cnt;

		for (int k = 0; k < 3; k++) {
			double t = run(&stream, c, &cnt);

			if (t < 0)
				return 1;
			if (best < 0 || t < best)
				best = t;
		}
		printf("%-14s %8.0f MB/s %8.1f M events/s  (%" PRIu64 " events, %.3f s)\n",
		       chunks[i] ? (chunks[i] == 65536 ? "64 KiB chunks" : "4 KiB chunks") : "one buffer",
		       (double)stream.n / 1e6 / best, (double)cnt.events / 1e6 / best, cnt.events, best);
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("peak RSS %ld MB (the stream itself is %.0f MB)\n", ru.ru_maxrss / 1024, (double)stream.n / 1e6);
	free(trace.d);
	free(stream.d);
	return 0;
}
