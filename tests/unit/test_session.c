/* Unit tests of what a session subscribes to: only what its rules need. */
#include <string.h>

#include "check.h"
#include "dumpwatch/catalog.h"
#include "dumpwatch/events.h"
#include "dumpwatch/session.h"

int main(void)
{
	struct session_subscription sub;
	struct ipc_provider p[SESSION_MAX_PROVIDERS];
	char args[64];

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

	/* Nothing needed, nothing subscribed. */
	memset(&sub, 0, sizeof(sub));
	CHECK(session_providers(&sub, p, args, sizeof(args)) == 0);
	return check_done();
}
