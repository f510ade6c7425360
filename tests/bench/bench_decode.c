/* dumpwatch's parser and decoders over a whole recorded nettrace file, the
 * way tests/bench/parser_vs_traceevent.sh times TraceEvent on the same file:
 * ROUNDS rounds, each a fresh parser fed the whole file (held in memory) and
 * every event decoded (events_decode); the first round is a warm-up. Prints
 * the best and median round in one line the script reads.
 *   usage: bench_decode FILE [ROUNDS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dumpwatch/events.h"
#include "dumpwatch/nettrace.h"

struct count {
	int pointer_size;
	long events, decoded, errors;
	double sink;
};

static void on_info(void *ctx, const struct nettrace_info *info)
{
	((struct count *)ctx)->pointer_size = info->pointer_size;
}

static void on_event(void *ctx, const struct nettrace_event *ev)
{
	struct count *c = ctx;
	struct ev_record r;
	int rc = events_decode(ev, c->pointer_size, &r, NULL, 0);

	c->events++;
	if (rc < 0)
		c->errors++;
	if (rc == 1) {
		c->decoded++;
		c->sink += (double)r.type;
	}
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int rounds = argc > 2 ? atoi(argv[2]) : 10;
	FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
	struct count c;

	if (!f || rounds < 1) {
		fprintf(stderr, "usage: bench_decode FILE [ROUNDS]\n");
		return 2;
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *data = malloc(n > 0 ? (size_t)n : 1);
	double *times = calloc((size_t)rounds, sizeof(*times));
	if (!data || !times || fread(data, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "bench_decode: cannot read %s\n", argv[1]);
		return 1;
	}
	fclose(f);
	for (int r = 0; r <= rounds; r++) {
		struct nettrace_callbacks cb = {.ctx = &c, .on_info = on_info, .on_event = on_event};
		memset(&c, 0, sizeof(c));
		double t0 = now_ms();
		nettrace_parser *p = nettrace_new(&cb, NULL);
		if (!p || nettrace_feed(p, data, (size_t)n) < 0) {
			fprintf(stderr, "bench_decode: %s does not parse\n", argv[1]);
			return 1;
		}
		nettrace_free(p);
		if (r > 0)
			times[r - 1] = now_ms() - t0;
	}
	qsort(times, (size_t)rounds, sizeof(*times), cmp);
	printf("dumpwatch bytes=%ld events=%ld decoded=%ld errors=%ld best_ms=%.2f median_ms=%.2f\n", n, c.events,
	       c.decoded, c.errors, times[0], times[rounds / 2]);
	free(times);
	free(data);
	return 0;
}
