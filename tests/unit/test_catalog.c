/* Unit tests for catalog.c: every built-in name resolves with its unit, needs
 * and flags; EventCounters by provider/name and by bare System.Runtime name;
 * malformed and unknown names; suggestions. */
#include "dumpwatch/catalog.h"

#include <errno.h>
#include <string.h>

#include "check.h"

struct gc_case {
	const char *name;
	enum metric_id id;
	enum unit_kind unit;
	unsigned needs;
	int is_event;
};

static const struct gc_case gc_cases[] = {
    {"loh-size", M_LOH_SIZE, UNIT_BYTES, NEED_GC | NEED_ALLOC_TICKS | NEED_RUNTIME_COUNTERS, 0},
    {"poh-size", M_POH_SIZE, UNIT_BYTES, NEED_GC | NEED_ALLOC_TICKS | NEED_RUNTIME_COUNTERS, 0},
    {"gen0-size", M_GEN0_SIZE, UNIT_BYTES, NEED_GC | NEED_RUNTIME_COUNTERS, 0},
    {"gen1-size", M_GEN1_SIZE, UNIT_BYTES, NEED_GC | NEED_RUNTIME_COUNTERS, 0},
    {"gen2-size", M_GEN2_SIZE, UNIT_BYTES, NEED_GC | NEED_RUNTIME_COUNTERS, 0},
    {"heap-size", M_HEAP_SIZE, UNIT_BYTES, NEED_GC | NEED_ALLOC_TICKS | NEED_RUNTIME_COUNTERS, 0},
    {"gc-pause", M_GC_PAUSE, UNIT_MS, NEED_GC, 1},
    {"gc-count", M_GC_COUNT, UNIT_COUNT, NEED_GC, 0},
    {"gc-rate", M_GC_RATE, UNIT_PER_SEC, NEED_GC, 0},
    {"gen0-gc-rate", M_GEN0_GC_RATE, UNIT_PER_SEC, NEED_GC, 0},
    {"gen1-gc-rate", M_GEN1_GC_RATE, UNIT_PER_SEC, NEED_GC, 0},
    {"gen2-gc-rate", M_GEN2_GC_RATE, UNIT_PER_SEC, NEED_GC, 0},
    {"alloc-rate", M_ALLOC_RATE, UNIT_BYTES_PER_SEC, NEED_ALLOC_TICKS, 0},
    {"soh-alloc-rate", M_SOH_ALLOC_RATE, UNIT_BYTES_PER_SEC, NEED_ALLOC_TICKS, 0},
    {"loh-alloc-rate", M_LOH_ALLOC_RATE, UNIT_BYTES_PER_SEC, NEED_ALLOC_TICKS, 0},
    {"poh-alloc-rate", M_POH_ALLOC_RATE, UNIT_BYTES_PER_SEC, NEED_ALLOC_TICKS, 0},
    {"appdomain-allocated", M_APPDOMAIN_ALLOCATED, UNIT_BYTES, NEED_GC | NEED_ALLOC_TICKS, 0},
    {"appdomain-survived", M_APPDOMAIN_SURVIVED, UNIT_BYTES, NEED_GC | NEED_ALLOC_TICKS | NEED_RUNTIME_COUNTERS, 0},
    {"appdomain-freed", M_APPDOMAIN_FREED, UNIT_BYTES, NEED_GC | NEED_ALLOC_TICKS, 0},
    {"time-in-gc", M_TIME_IN_GC, UNIT_PERCENT, NEED_GC, 0},
    {"rss", M_RSS, UNIT_BYTES, NEED_PROC | NEED_GC, 0},
    {"private-memory", M_PRIVATE_MEMORY, UNIT_BYTES, NEED_PROC | NEED_GC, 0},
    {"swap", M_SWAP, UNIT_BYTES, NEED_PROC | NEED_GC, 0},
    {"threads", M_THREADS, UNIT_COUNT, NEED_PROC | NEED_GC, 0},
    {"fds", M_FDS, UNIT_COUNT, NEED_PROC | NEED_PROC_FDS | NEED_GC, 0},
    {"exception-rate", M_EXCEPTION_RATE, UNIT_PER_SEC, NEED_EXCEPTIONS, 0},
};

struct counter_case {
	const char *name;
	enum unit_kind unit;
	double scale;
};

/* The System.Runtime counters of .NET 10 with their units (PROTOCOL.md §4). */
static const struct counter_case counter_cases[] = {
    {"cpu-usage", UNIT_PERCENT, 1},
    {"working-set", UNIT_BYTES, 1e6},
    {"gc-heap-size", UNIT_BYTES, 1e6},
    {"gen-0-gc-count", UNIT_COUNT, 1},
    {"gen-1-gc-count", UNIT_COUNT, 1},
    {"gen-2-gc-count", UNIT_COUNT, 1},
    {"gen-0-gc-budget", UNIT_BYTES, 1e6},
    {"threadpool-thread-count", UNIT_COUNT, 1},
    {"monitor-lock-contention-count", UNIT_COUNT, 1},
    {"threadpool-queue-length", UNIT_COUNT, 1},
    {"threadpool-completed-items-count", UNIT_COUNT, 1},
    {"alloc-rate", UNIT_BYTES, 1},
    {"active-timer-count", UNIT_COUNT, 1},
    {"gc-fragmentation", UNIT_PERCENT, 1},
    {"gc-committed", UNIT_BYTES, 1e6},
    {"exception-count", UNIT_COUNT, 1},
    {"time-in-gc", UNIT_PERCENT, 1},
    {"total-pause-time-by-gc", UNIT_MS, 1},
    {"gen-0-size", UNIT_BYTES, 1},
    {"gen-1-size", UNIT_BYTES, 1},
    {"gen-2-size", UNIT_BYTES, 1},
    {"loh-size", UNIT_BYTES, 1},
    {"poh-size", UNIT_BYTES, 1},
    {"assembly-count", UNIT_COUNT, 1},
    {"il-bytes-jitted", UNIT_BYTES, 1},
    {"methods-jitted-count", UNIT_COUNT, 1},
    {"time-in-jit", UNIT_MS, 1},
};

#define N_COUNTERS (sizeof(counter_cases) / sizeof(counter_cases[0]))

static void test_gc_metrics(void)
{
	struct metric_ref m;
	char err[256];

	/* Every built-in but the exception condition, which is not a name. */
	CHECK(sizeof(gc_cases) / sizeof(gc_cases[0]) == (size_t)M_COUNTER - 1);
	CHECK(catalog_resolve("exception", &m, err, sizeof(err)) == -ENOENT);
	for (size_t i = 0; i < sizeof(gc_cases) / sizeof(gc_cases[0]); i++) {
		const struct gc_case *g = &gc_cases[i];
		memset(&m, 0x5a, sizeof(m));
		int r = catalog_resolve(g->name, &m, err, sizeof(err));
		CHECK_MSG(r == 0, "%s: %s", g->name, err);
		CHECK_MSG(m.id == g->id, "%s: id %d", g->name, (int)m.id);
		CHECK_STR(m.name, g->name);
		CHECK_MSG(m.unit == g->unit, "%s: unit %d", g->name, (int)m.unit);
		CHECK_MSG(m.needs == g->needs, "%s: needs %#x", g->name, m.needs);
		CHECK_MSG(m.is_event == g->is_event, "%s", g->name);
		CHECK(m.scale == 1.0);
		CHECK(m.provider[0] == '\0' && m.counter[0] == '\0');
		CHECK_STR(catalog_id_name(g->id), g->name);
	}
	CHECK_STR(catalog_id_name(M_COUNTER), "counter");
	CHECK_STR(catalog_id_name(M__COUNT), "counter");
}

static void check_counter(const char *written, const char *provider, const char *counter, enum unit_kind unit,
                          double scale)
{
	struct metric_ref m;
	char err[256], want[256];

	err[0] = '\0';
	int r = catalog_resolve(written, &m, err, sizeof(err));
	CHECK_MSG(r == 0, "%s: r=%d %s", written, r, err);
	CHECK(m.id == M_COUNTER);
	CHECK_STR(m.provider, provider);
	CHECK_STR(m.counter, counter);
	snprintf(want, sizeof(want), "%s/%s", provider, counter);
	CHECK_STR(m.name, want);
	CHECK_MSG(m.unit == unit, "%s: unit %d want %d", written, (int)m.unit, (int)unit);
	CHECK_MSG(m.scale == scale, "%s: scale %g want %g", written, m.scale, scale);
	CHECK(m.needs == NEED_COUNTERS);
	CHECK(m.is_event == 0);
}

static void test_runtime_counters(void)
{
	char name[160];
	size_t n = 0;

	/* The exported list is exactly the known set, in order. */
	for (; catalog_runtime_counters[n]; n++) {
		CHECK(n < N_COUNTERS);
		if (n < N_COUNTERS)
			CHECK_STR(catalog_runtime_counters[n], counter_cases[n].name);
	}
	CHECK(n == N_COUNTERS);

	for (size_t i = 0; i < N_COUNTERS; i++) {
		const struct counter_case *c = &counter_cases[i];
		snprintf(name, sizeof(name), "System.Runtime/%s", c->name);
		check_counter(name, "System.Runtime", c->name, c->unit, c->scale);
		/* Bare names reach the counter unless a GC metric owns the name. */
		if (strcmp(c->name, "loh-size") && strcmp(c->name, "poh-size") && strcmp(c->name, "alloc-rate") &&
		    strcmp(c->name, "time-in-gc"))
			check_counter(c->name, "System.Runtime", c->name, c->unit, c->scale);
	}
	/* GC-derived names win over the counters of the same name. */
	struct metric_ref m;
	char err[256];
	CHECK(catalog_resolve("alloc-rate", &m, err, sizeof(err)) == 0 && m.id == M_ALLOC_RATE);
	CHECK(catalog_resolve("loh-size", &m, err, sizeof(err)) == 0 && m.id == M_LOH_SIZE);
	CHECK(catalog_resolve("time-in-gc", &m, err, sizeof(err)) == 0 && m.id == M_TIME_IN_GC);
	/* The provider's case is normalised to the runtime's spelling. */
	check_counter("system.runtime/cpu-usage", "System.Runtime", "cpu-usage", UNIT_PERCENT, 1);
	/* A System.Runtime counter this catalog does not know (a newer
	 * runtime's) has no unit. */
	check_counter("System.Runtime/gc-brand-new-thing", "System.Runtime", "gc-brand-new-thing", UNIT_NONE, 1);
}

static void test_other_providers(void)
{
	check_counter("Microsoft.AspNetCore.Hosting/requests-per-second", "Microsoft.AspNetCore.Hosting",
	              "requests-per-second", UNIT_NONE, 1);
	check_counter("System.Net.Http/requests-started", "System.Net.Http", "requests-started", UNIT_NONE, 1);
	check_counter("My-Company.Orders_v2/queue-depth", "My-Company.Orders_v2", "queue-depth", UNIT_NONE, 1);
	/* Another provider's counter with a System.Runtime name has no unit. */
	check_counter("Other/cpu-usage", "Other", "cpu-usage", UNIT_NONE, 1);
}

struct bad_case {
	const char *name;
	int want_r;
	const char *want; /* exact error text */
};

static const struct bad_case bad_cases[] = {
    {"loh-szie", -ENOENT, "unknown metric \"loh-szie\"; did you mean \"loh-size\"?"},
    {"LOH-SIZE", -ENOENT, "unknown metric \"LOH-SIZE\"; did you mean \"loh-size\"?"},
    {"gen0size", -ENOENT, "unknown metric \"gen0size\"; did you mean \"gen0-size\"?"},
    {"gc-pasue", -ENOENT, "unknown metric \"gc-pasue\"; did you mean \"gc-pause\"?"},
    {"cpu-usgae", -ENOENT, "unknown metric \"cpu-usgae\"; did you mean \"cpu-usage\"?"},
    {"gen-0-gc-cnt", -ENOENT, "unknown metric \"gen-0-gc-cnt\"; did you mean \"gen-0-gc-count\"?"},
    {"threadpool-queue-lenght", -ENOENT,
     "unknown metric \"threadpool-queue-lenght\"; did you mean \"threadpool-queue-length\"?"},
    {"banana", -ENOENT,
     "unknown metric \"banana\": use a GC metric such as loh-size, a System.Runtime counter such as cpu-usage, or "
     "any EventCounter as Provider.Name/counter-name"},
    {"heap", -ENOENT, NULL},
    {"System.Runtime/cpu-usgae", -ENOENT,
     "unknown System.Runtime counter \"cpu-usgae\"; did you mean \"System.Runtime/cpu-usage\"?"},
    {"System.Runtime/CPU-USAGE", -ENOENT,
     "unknown System.Runtime counter \"CPU-USAGE\"; did you mean \"System.Runtime/cpu-usage\"?"},
    {"", -EINVAL, "missing metric name: write one such as loh-size or System.Runtime/cpu-usage"},
    {"/cpu-usage", -EINVAL,
     "\"/cpu-usage\": write an EventCounter as Provider.Name/counter-name, such as System.Runtime/cpu-usage"},
    {"System.Runtime/", -EINVAL, NULL},
    {"a/b/c", -EINVAL, NULL},
    {"loh size", -EINVAL, "metric name \"loh size\" may contain only letters, digits, '.', '-', '_' and one '/'"},
    {"loh\x01size", -EINVAL, "metric name \"loh?size\" may contain only letters, digits, '.', '-', '_' and one '/'"},
};

static void test_bad_names(void)
{
	struct metric_ref m;
	char err[256];

	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *b = &bad_cases[i];
		err[0] = '\0';
		int r = catalog_resolve(b->name, &m, err, sizeof(err));
		CHECK_MSG(r == b->want_r, "\"%s\": r=%d want %d", b->name, r, b->want_r);
		CHECK_MSG(err[0] != '\0', "\"%s\": no error text", b->name);
		if (b->want)
			CHECK_STR(err, b->want);
	}
	/* "heap" is five edits from "heap-size": too far to suggest. */
	CHECK(catalog_resolve("heap", &m, err, sizeof(err)) == -ENOENT);
	CHECK(strstr(err, "did you mean") == NULL);
	CHECK(catalog_resolve(NULL, &m, err, sizeof(err)) == -EINVAL);

	/* Length bounds: 127 characters resolve, 128 do not. */
	char name[300];
	memset(name, 'a', sizeof(name));
	memcpy(name, "P/", 2);
	name[127] = '\0';
	CHECK(catalog_resolve(name, &m, err, sizeof(err)) == 0);
	CHECK(strlen(m.name) == 127 && m.unit == UNIT_NONE);
	name[127] = 'a';
	name[128] = '\0';
	CHECK(catalog_resolve(name, &m, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "is too long (at most 127 characters)") != NULL);
	name[299] = '\0';
	CHECK(catalog_resolve(name, &m, err, sizeof(err)) == -EINVAL);
	/* A long unknown bare name gets an error, not a suggestion or overrun. */
	memset(name, 'z', 127);
	name[127] = '\0';
	CHECK(catalog_resolve(name, &m, err, sizeof(err)) == -ENOENT);
	CHECK(strstr(err, "...") != NULL);
}

int main(void)
{
	test_gc_metrics();
	test_runtime_counters();
	test_other_providers();
	test_bad_names();
	return check_done();
}
