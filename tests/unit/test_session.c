/* Unit tests of what a session subscribes to: only what its rules need. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "dumpwatch/catalog.h"
#include "dumpwatch/events.h"
#include "dumpwatch/rules.h"
#include "dumpwatch/session.h"

int main(void)
{
	struct session_subscription sub;
	struct ipc_provider p[SESSION_MAX_PROVIDERS];
	char args[SESSION_ARGS_MAX];

	memset(&sub, 0, sizeof(sub));
	sub.needs = NEED_GC;
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 1);
	CHECK_STR(p[0].name, EV_RUNTIME_PROVIDER);
	CHECK(p[0].keywords == (EV_KW_GC | EV_KW_APPDOMAIN_RM) && p[0].level == 4 && p[0].args == NULL);

	/* Allocation ticks are verbose events: level 5, same keyword. */
	sub.needs = NEED_GC | NEED_ALLOC_TICKS;
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 1);
	CHECK(p[0].keywords == (EV_KW_GC | EV_KW_APPDOMAIN_RM) && p[0].level == 5);

	/* Exceptions alone: their keyword at level 2 (ExceptionThrown_V1 is an
	 * Error event), so the catch and finally events (level 4) stay out. */
	sub.needs = NEED_EXCEPTIONS;
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 1);
	CHECK(p[0].keywords == EV_KW_EXCEPTION && p[0].level == 2);
	/* Beside the GC: one provider, both keywords, the GC's level. */
	sub.needs = NEED_EXCEPTIONS | NEED_GC;
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 1);
	CHECK(p[0].keywords == (EV_KW_GC | EV_KW_APPDOMAIN_RM | EV_KW_EXCEPTION) && p[0].level == 4);

	/* Counters only: no runtime provider at all. */
	sub.needs = NEED_COUNTERS;
	sub.counter_interval_ms = 5000;
	sub.n_counter_providers = 2;
	snprintf(sub.counter_providers[0], CATALOG_NAME_MAX, "System.Runtime");
	snprintf(sub.counter_providers[1], CATALOG_NAME_MAX, "Microsoft.AspNetCore.Hosting");
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 2);
	CHECK_STR(p[0].name, "System.Runtime");
	CHECK_STR(p[1].name, "Microsoft.AspNetCore.Hosting");
	CHECK(p[0].level == 4 && p[0].keywords == 0);
	CHECK_STR(p[0].args, "EventCounterIntervalSec=5");

	/* Both, with the default interval. */
	sub.needs = NEED_ALLOC_TICKS | NEED_COUNTERS;
	sub.counter_interval_ms = 0;
	sub.n_counter_providers = 1;
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 2);
	CHECK(p[0].level == 5);
	CHECK_STR(p[1].args, "EventCounterIntervalSec=1");

	/* A fraction of a second goes as milliseconds with an exponent, which
	 * no culture's separators can misread. */
	sub.counter_interval_ms = 50;
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 2);
	CHECK_STR(p[1].args, "EventCounterIntervalSec=50E-3");
	sub.counter_interval_ms = 1500;
	session_providers(&sub, p, args, sizeof(args));
	CHECK_STR(p[1].args, "EventCounterIntervalSec=1500E-3");

	/* Allocation ticks near a threshold: System.Runtime's counters come
	 * faster than the others', which keep their interval; a shorter
	 * interval of their own is not lengthened. */
	sub.counter_interval_ms = 0;
	sub.runtime_interval_ms = 100;
	sub.n_counter_providers = 2;
	snprintf(sub.counter_providers[1], CATALOG_NAME_MAX, "Microsoft.AspNetCore.Hosting");
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 3);
	CHECK_STR(p[1].name, "System.Runtime");
	CHECK_STR(p[1].args, "EventCounterIntervalSec=100E-3");
	CHECK_STR(p[2].args, "EventCounterIntervalSec=1");
	/* A tenth of a 5 s sustain (target_bound_interval_ms). */
	sub.runtime_interval_ms = 500;
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 3);
	CHECK_STR(p[1].args, "EventCounterIntervalSec=500E-3");
	CHECK_STR(p[2].args, "EventCounterIntervalSec=1");
	sub.runtime_interval_ms = 100;
	sub.counter_interval_ms = 50;
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 3);
	CHECK_STR(p[1].args, "EventCounterIntervalSec=50E-3");
	CHECK_STR(p[2].args, "EventCounterIntervalSec=50E-3");
	struct session_subscription slower = sub;
	slower.runtime_interval_ms = 0;
	CHECK(!session_subscription_equal(&sub, &slower));

	/* The ticks alone: GC keyword, level 5, the tick and GCJoin_V2 (which
	 * keeps the GC raising ticks); every event of them with all_events. */
	memset(&sub, 0, sizeof(sub));
	sub.needs = NEED_ALLOC_TICKS;
	sub.ticks_only = 1;
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 1);
	CHECK(p[0].keywords == EV_KW_GC && p[0].level == 5 && p[0].n_event_ids == 2 &&
	      p[0].event_ids[0] == EV_ID_GC_ALLOC_TICK && p[0].event_ids[1] == EV_ID_GC_JOIN_V2);
	sub.all_events = 1;
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 1);
	CHECK(p[0].n_event_ids == 0 && p[0].event_ids == NULL);

	/* The runtime provider asks for the decoded events only (CollectTracing5
	 * sends the list; older commands cannot), unless every event is wanted. */
	memset(&sub, 0, sizeof(sub));
	sub.needs = NEED_GC | NEED_EXCEPTIONS;
	size_t n_ids;
	const uint32_t *ids = events_runtime_ids(&n_ids);
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 1);
	CHECK(p[0].n_event_ids == n_ids && n_ids >= 10 && memcmp(p[0].event_ids, ids, n_ids * sizeof(*ids)) == 0);
	int have1 = 0, have80 = 0, have10 = 0, unread = 0;
	for (size_t i = 0; i < n_ids; i++) {
		have1 |= ids[i] == 1;
		have10 |= ids[i] == 10;
		have80 |= ids[i] == 80;
		unread |= ids[i] == 35 || ids[i] == 7; /* GCTriggered, GCRestartEEBegin: read by nothing */
	}
	CHECK(have1 && have10 && have80 && !unread);
	/* With allocation ticks, GCJoin_V2 too: the GC's probe for its verbose level. */
	sub.needs |= NEED_ALLOC_TICKS;
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 1 && p[0].n_event_ids == n_ids + 1 &&
	      p[0].event_ids[n_ids] == EV_ID_GC_JOIN_V2);
	sub.all_events = 1;
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 1 && p[0].n_event_ids == 0 && p[0].event_ids == NULL);

	/* Nothing needed, nothing subscribed. */
	memset(&sub, 0, sizeof(sub));
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 0);

	/* Meters: System.Diagnostics.Metrics in the shared session, each call
	 * with an identifier of its own, beside the counters' arguments. */
	memset(&sub, 0, sizeof(sub));
	sub.counter_interval_ms = 1000;
	snprintf(sub.counter_providers[sub.n_counter_providers++], CATALOG_NAME_MAX, "System.Runtime");
	CHECK(session_subscription_add_meter(&sub, "Shop") == 0);
	CHECK(session_subscription_add_meter(&sub, "Microsoft.AspNetCore.Hosting") == 0);
	CHECK(session_subscription_add_meter(&sub, "Shop") == 0 && sub.n_meters == 2);
	CHECK(session_subscription_add_meter(&sub, "Bad;Name") == -EINVAL);
	CHECK(session_subscription_add_meter(&sub, "Bad=Name") == -EINVAL);
	CHECK(session_subscription_add_meter(&sub, "") == -EINVAL);
	CHECK(sub.needs == NEED_METERS);
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 2);
	CHECK_STR(p[0].args, "EventCounterIntervalSec=1");
	CHECK_STR(p[1].name, "System.Diagnostics.Metrics");
	CHECK(p[1].keywords == 0x2 && p[1].level == 4);
	char want[256], first[256];
	snprintf(first, sizeof(first), "%s", p[1].args);
	CHECK_MSG(sscanf(first, "SessionId=SHARED;ClientId=dumpwatch-%*d-%*u;SharedIdentifier=dumpwatch-%*d-%*u;%255s",
	                 want) == 1 &&
	              strcmp(want, "Metrics=Shop,Microsoft.AspNetCore.Hosting;RefreshInterval=1;MaxTimeSeries=1000;"
	                           "MaxHistograms=10") == 0,
	          "%s", first);
	snprintf(want, sizeof(want), "ClientId=dumpwatch-%d-", (int)getpid());
	CHECK(strstr(first, want) != NULL);
	session_providers(&sub, p, args, sizeof(args));
	CHECK(strcmp(first, p[1].args) != 0); /* a new identifier */
	/* The interval: the counters', at least 100 ms; fractions with an exponent. */
	sub.counter_interval_ms = 250;
	session_providers(&sub, p, args, sizeof(args));
	CHECK(strstr(p[1].args, ";RefreshInterval=250E-3;") != NULL && session_meter_interval_ns(&sub) == 250000000);
	sub.counter_interval_ms = 50;
	session_providers(&sub, p, args, sizeof(args));
	CHECK(strstr(p[1].args, ";RefreshInterval=100E-3;") != NULL && session_meter_interval_ns(&sub) == 100000000);
	sub.counter_interval_ms = 5000;
	session_providers(&sub, p, args, sizeof(args));
	CHECK(strstr(p[1].args, ";RefreshInterval=5;") != NULL);
	/* Without counters, the meters alone. */
	sub.n_counter_providers = 0;
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 1 &&
	      strcmp(p[0].name, "System.Diagnostics.Metrics") == 0);
	/* Too little room: not subscribed rather than cut. */
	CHECK(session_providers(&sub, p, args, 40) == 0);
	/* A --meters list: ',' or ';' between names, empty items skipped;
	 * Meter\instrument only where instruments are allowed (record). */
	memset(&sub, 0, sizeof(sub));
	char e[256];
	CHECK(session_subscription_add_meters(&sub, "A,B;;A,", 0, e, sizeof(e)) == 0 && sub.n_meters == 2);
	CHECK(session_subscription_add_meters(&sub, "C\\x", 0, e, sizeof(e)) == -EINVAL && strstr(e, "meter names"));
	CHECK(session_subscription_add_meters(&sub, "C\\x", 1, e, sizeof(e)) == 0 && sub.n_meters == 3);
	CHECK(session_subscription_add_meters(&sub, "D$", 1, e, sizeof(e)) == -EINVAL &&
	      strstr(e, "Meter\\instrument"));
	CHECK(session_subscription_add_meters(&sub, "m3,m4,m5,m6,m7,m8,m9,m10,m11,m12,m13,m14,m15,m16", 0, e,
	                                      sizeof(e)) == -ENOSPC &&
	      strcmp(e, "--meters: at most 16 meters") == 0);

	/* A rule's meters come with its conditions, once each. */
	struct rule r;
	char err[256];
	memset(&r, 0, sizeof(r));
	memset(&sub, 0, sizeof(sub));
	CHECK(rule_cond_parse("meter Shop/latency p99 > 2s", &r.conds[0], err, sizeof(err)) == 0);
	CHECK(rule_cond_parse("meter Shop/orders rate > 5", &r.conds[1], err, sizeof(err)) == 0);
	CHECK(rule_cond_parse("loh-size > 1MB", &r.conds[2], err, sizeof(err)) == 0);
	r.n_conds = 3;
	for (uint32_t c = 0; c < r.n_conds; c++)
		session_subscription_add_metric(&sub, &r.conds[c].metric);
	/* Each as Meter\instrument: the process aggregates only those. */
	CHECK(sub.n_meters == 2 && strcmp(sub.meters[0], "Shop\\latency") == 0 &&
	      strcmp(sub.meters[1], "Shop\\orders") == 0 && (sub.needs & NEED_METERS) && (sub.needs & NEED_GC));
	CHECK(rule_cond_parse("meter Shop/latency p95 > 1s", &r.conds[0], err, sizeof(err)) == 0);
	session_subscription_add_metric(&sub, &r.conds[0].metric);
	CHECK(sub.n_meters == 2);
	size_t np = session_providers(&sub, p, args, sizeof(args));
	CHECK(np >= 2 && strcmp(p[np - 1].name, "System.Diagnostics.Metrics") == 0 &&
	      strstr(p[np - 1].args, ";Metrics=Shop\\latency,Shop\\orders;") != NULL);
	/* Before .NET 9 the runtime matches instruments case-sensitively:
	 * whole meters, each once. */
	session_subscription_set_runtime(&sub, "8.0.31");
	np = session_providers(&sub, p, args, sizeof(args));
	CHECK(np >= 2 && strstr(p[np - 1].args, ";Metrics=Shop;") != NULL);
	CHECK(session_subscription_add_meter(&sub, "Other") == 0);
	np = session_providers(&sub, p, args, sizeof(args));
	CHECK(np >= 2 && strstr(p[np - 1].args, ";Metrics=Shop,Other;") != NULL);
	session_subscription_set_runtime(&sub, "");
	CHECK(sub.whole_meters);
	session_subscription_set_runtime(&sub, "9.0.20");
	np = session_providers(&sub, p, args, sizeof(args));
	CHECK(np >= 2 && strstr(p[np - 1].args, ";Metrics=Shop\\latency,Shop\\orders,Other;") != NULL);
	struct session_subscription other = sub;
	CHECK(session_subscription_equal(&sub, &other));
	snprintf(other.meters[0], CATALOG_NAME_MAX, "Shop2");
	CHECK(!session_subscription_equal(&sub, &other));
	return check_done();
}
