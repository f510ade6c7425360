/* Retained sizes (heapdom_build) on a synthetic heap of NODES objects
 * (default 10 M), assembled the way a snapshot is: GCBulkNode and
 * GCBulkEdge payloads fed to hg_feed in batches of 10,000, then hg_finish.
 * The shape is a heap's: a spanning tree where most objects hang off a
 * recent one (a third off the one just before, so runs of linked lists),
 * a linked list of 1 M objects, arrays of 16 to 1,000 references, a third of
 * the objects with one more reference to any object (sharing and cycles),
 * 5 % with one to a pool of 1,000 shared objects (strings, boxed
 * constants), and 5,000 roots besides the tree's.
 *
 * Prints one line: the graph (objects, references, time to assemble, the
 * resident set it takes), then heapdom_build's best and median time over
 * ROUNDS rounds, its passes and steps, and its peak memory: the rise of the
 * resident set's high-water mark over the graph's (the mark is reset through
 * /proc/self/clear_refs before each round).
 *   usage: bench_heapdom [NODES] [ROUNDS] */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dumpwatch/events.h"
#include "dumpwatch/heapdom.h"
#include "dumpwatch/heapgraph.h"
#include "dumpwatch/heapsum.h"

#define BATCH 10000
#define N_TYPES 200
#define N_SHARED 1000
#define N_ROOTS 5000

static uint64_t rng = 0x2545F4914F6CDD1DULL;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)((rng >> 11) % n);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A line of /proc/self/status, in KiB. */
static long status_kib(const char *key)
{
	char line[256];
	long v = -1;
	size_t kl = strlen(key);
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, kl) == 0 && line[kl] == ':')
			v = atol(line + kl + 1);
	if (f)
		fclose(f);
	return v;
}

static int reset_peak(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (!f)
		return -1;
	int ok = fputs("5", f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

struct out {
	uint8_t *b;
	size_t n;
};

static void put(struct out *o, const void *p, size_t n)
{
	memcpy(o->b + o->n, p, n);
	o->n += n;
}
static void p16(struct out *o, uint16_t v)
{
	v = htole16(v);
	put(o, &v, 2);
}
static void p32(struct out *o, uint32_t v)
{
	v = htole32(v);
	put(o, &v, 4);
}
static void p64(struct out *o, uint64_t v)
{
	v = htole64(v);
	put(o, &v, 8);
}

static struct nettrace_metadata meta = {.provider = EV_RUNTIME_PROVIDER, .event_name = ""};

static void feed(struct heapgraph *g, uint32_t id, const struct out *o)
{
	char err[256];
	meta.event_id = id;
	struct nettrace_event ev = {.meta = &meta, .payload = o->b, .payload_size = (uint32_t)o->n};
	if (hg_feed(g, &ev, 8, err, sizeof(err)) != 1) {
		fprintf(stderr, "bench_heapdom: hg_feed: %s\n", err);
		exit(1);
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 10000000;
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	if (n < 2 * N_SHARED || rounds < 1) {
		fprintf(stderr, "usage: bench_heapdom [NODES] [ROUNDS]\n");
		return 2;
	}

	/* The spanning tree as parents, then as children lists. */
	double t0 = now_ms();
	uint32_t *parent = malloc((size_t)n * sizeof(*parent)), *off = calloc((size_t)n + 2, sizeof(*off));
	uint32_t *kids = malloc((size_t)n * sizeof(*kids));
	if (!parent || !off || !kids)
		return 1;
	uint32_t list_from = n - n / 10 < n - 1000000 ? n - 1000000 : n - n / 10;
	for (uint32_t i = 1; i < n; i++) {
		uint32_t back = i < 1000 ? i : 1000;
		if (i >= list_from || rnd(3) == 0)
			parent[i] = i - 1;
		else if (rnd(50) == 0) /* an array: its elements follow it */
			parent[i] = i - 1 - rnd(back < 16 ? back : 16);
		else
			parent[i] = i - 1 - rnd(back);
		off[parent[i] + 2]++;
	}
	for (uint32_t i = 0; i < n; i++)
		off[i + 2] += off[i + 1];
	for (uint32_t i = 1; i < n; i++)
		kids[off[parent[i] + 1]++] = i;
	free(parent);
	/* off[i]..off[i + 1] are now i's children. */

	struct heapgraph *g = hg_new(NULL);
	struct out o = {.b = malloc(10 + (size_t)BATCH * 32)};
	uint32_t *extra = malloc((size_t)n * sizeof(*extra)); /* HG_NONE, or one more reference */
	uint64_t n_edges = 0;
	uint32_t bi = 0, k = 0;
	if (!g || !o.b || !extra)
		return 1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t r = rnd(100);
		extra[i] = r < 33 ? rnd(n) : r < 38 ? rnd(N_SHARED) : HG_NONE;
	}
	for (uint32_t i = 0; i < n; i += BATCH) {
		uint32_t c = n - i < BATCH ? n - i : BATCH;
		o.n = 0;
		p32(&o, bi++);
		p32(&o, c);
		p16(&o, 1);
		for (uint32_t j = i; j < i + c; j++) {
			uint32_t ne = off[j + 1] - off[j] + (extra[j] != HG_NONE);
			p64(&o, 0x10000000ULL + 64ULL * j);
			p64(&o, 24 + 8 * (uint64_t)rnd(8) + (rnd(100) == 0 ? rnd(100000) : 0));
			p64(&o, 0x7f0000000000ULL + 8 * (uint64_t)(1 + rnd(N_TYPES)));
			p64(&o, ne);
			n_edges += ne;
		}
		feed(g, HG_EV_BULK_NODE, &o);
	}
	/* The references, node by node, in batches. */
	bi = 0;
	o.n = 10;
	for (uint32_t i = 0; i < n; i++) {
		for (uint32_t e = off[i]; e <= off[i + 1]; e++) {
			uint32_t to = e < off[i + 1] ? kids[e] : extra[i];
			if (to == HG_NONE)
				continue;
			p64(&o, 0x10000000ULL + 64ULL * to);
			p32(&o, 0);
			if (++k == BATCH) {
				size_t len = o.n;
				o.n = 0;
				p32(&o, bi++);
				p32(&o, k);
				p16(&o, 1);
				o.n = len;
				feed(g, HG_EV_BULK_EDGE, &o);
				o.n = 10;
				k = 0;
			}
		}
	}
	if (k) {
		size_t len = o.n;
		o.n = 0;
		p32(&o, bi++);
		p32(&o, k);
		p16(&o, 1);
		o.n = len;
		feed(g, HG_EV_BULK_EDGE, &o);
	}
	free(kids);
	free(off);
	free(extra);
	/* Roots: the tree's, then N_ROOTS on any object. */
	for (uint32_t i = 0; i <= N_ROOTS; i++) {
		o.n = 0;
		p32(&o, i);
		p32(&o, 1);
		p16(&o, 1);
		p64(&o, 0x10000000ULL + 64ULL * (i ? rnd(n) : 0));
		uint8_t kind = HG_ROOT_HANDLE;
		put(&o, &kind, 1);
		p32(&o, 0);
		p64(&o, 0x5000 + i);
		feed(g, HG_EV_BULK_ROOT_EDGE, &o);
	}
	free(o.b);
	if (hg_finish(g) < 0) {
		fprintf(stderr, "bench_heapdom: out of memory\n");
		return 1;
	}
	double build_ms = now_ms() - t0;
	long graph_kib = status_kib("VmRSS");

	double *times = calloc((size_t)rounds, sizeof(*times));
	long peak_kib = -1;
	struct heapdom *d = NULL;
	for (int r = 0; r < rounds; r++) {
		heapdom_free(d);
		d = NULL;
		long before = status_kib("VmRSS");
		int reset = reset_peak();
		t0 = now_ms();
		if (heapdom_build(g, NULL, &d) < 0) {
			fprintf(stderr, "bench_heapdom: out of memory\n");
			return 1;
		}
		times[r] = now_ms() - t0;
		long rise = status_kib("VmHWM") - before;
		if (reset == 0 && rise > peak_kib)
			peak_kib = rise;
	}
	char why[160];
	if (d->status != HD_DONE) {
		fprintf(stderr, "bench_heapdom: not computed: %s\n", heapdom_why(d, why, sizeof(why)));
		return 1;
	}
	/* The summary with and without retained sizes, for scale. */
	struct heapsum *s;
	t0 = now_ms();
	if (heapsum_build(g, 10, &s) < 0)
		return 1;
	double sum_ms = now_ms() - t0;
	heapsum_free(s);

	qsort(times, (size_t)rounds, sizeof(*times), cmp);
	printf("heapdom nodes=%zu references=%zu assemble_ms=%.0f graph_rss_mib=%.0f best_ms=%.0f median_ms=%.0f "
	       "passes=%u steps=%llu peak_rise_mib=%.0f unreachable=%llu heapsum_ms=%.0f\n",
	       hg_n_nodes(g), hg_n_edges(g), build_ms, (double)graph_kib / 1024, times[0], times[rounds / 2], d->passes,
	       (unsigned long long)d->steps, peak_kib < 0 ? -1.0 : (double)peak_kib / 1024,
	       (unsigned long long)d->unreachable_count, sum_ms);
	(void)n_edges;
	heapdom_free(d);
	hg_free(g);
	free(times);
	return 0;
}
