/* Unit tests for dmimport.c: every trigger kind, filter kind and match type,
 * the actions and limits, TimeSpans, the ConfigMap form, and hostile settings
 * (wrong types, huge numbers, deep nesting, missing keys, too many rules).
 * Every rule text handed out is parsed again with rulefile_parse. */
#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/dmimport.h"
#include "dumpwatch/rulefile.h"

#define NS(s) ((long long)(s)*1000000000LL)

/* Converts one rule {"CollectionRules": {"R": RULE}}; returns the rule text
 * (static) or NULL, and the notes joined by '\n' in notes. */
static const char *one(const char *rule, char *notes, size_t len)
{
	static char text[8192];
	char doc[8192], err[512];
	struct dmimport_result res;
	struct file_rule *fr = NULL;
	struct rule_diag d;
	size_t nd = 0;
	int r;

	snprintf(doc, sizeof(doc), "{\"CollectionRules\": {\"R\": %s}}", rule);
	r = dmimport_convert(doc, strlen(doc), "s.json", &res, err, sizeof(err));
	CHECK_MSG(r == 0, "%s", err);
	notes[0] = '\0';
	if (r < 0)
		return NULL;
	for (size_t i = 0; i < res.n_notes; i++) {
		size_t used = strlen(notes);
		snprintf(notes + used, len - used, "%s\n", res.notes[i].text);
	}
	if (res.n_rules == 0) {
		dmimport_result_free(&res);
		return NULL;
	}
	CHECK(res.n_rules == 1);
	snprintf(text, sizeof(text), "%s", res.rules[0].text);
	CHECK_MSG(rulefile_parse(text, strlen(text), &fr, &d, 1, &nd) == 1, "%s", text);
	free(fr);
	dmimport_result_free(&res);
	return text;
}

static void has(const char *hay, const char *needle, int line)
{
	CHECK_MSG(hay && strstr(hay, needle) != NULL, "line %d: no \"%s\" in:\n%s", line, needle, hay ? hay : "(none)");
}

#define HAS(hay, needle) has((hay), (needle), __LINE__)

#define DUMP "\"Actions\": [{\"Type\": \"CollectDump\"}]"

static void test_timespan(void)
{
	long long ns;

	CHECK(dmimport_parse_timespan("00:00:10", &ns) == 0 && ns == NS(10));
	CHECK(dmimport_parse_timespan("1:00:00", &ns) == 0 && ns == NS(3600));
	CHECK(dmimport_parse_timespan("1.00:00:00", &ns) == 0 && ns == NS(86400));
	CHECK(dmimport_parse_timespan("00:01", &ns) == 0 && ns == NS(60));
	CHECK(dmimport_parse_timespan("00:00:00.5", &ns) == 0 && ns == NS(1) / 2);
	CHECK(dmimport_parse_timespan("2", &ns) == 0 && ns == NS(2 * 86400));
	CHECK(dmimport_parse_timespan("", &ns) < 0);
	CHECK(dmimport_parse_timespan("-00:00:10", &ns) < 0);
	CHECK(dmimport_parse_timespan("00:60:00", &ns) < 0);
	CHECK(dmimport_parse_timespan("24:00:00", &ns) < 0);
	CHECK(dmimport_parse_timespan("10s", &ns) < 0);
	CHECK(dmimport_parse_timespan("99999999999999999999:00", &ns) < 0);
	CHECK(dmimport_parse_timespan("1.", &ns) < 0);
	CHECK(dmimport_parse_timespan("00:00:", &ns) < 0);
}

static void test_triggers(void)
{
	char n[4096];
	const char *t;

	t = one("{\"Trigger\": {\"Type\": \"EventCounter\", \"Settings\": {\"ProviderName\": \"System.Runtime\", "
	        "\"CounterName\": \"cpu-usage\", \"GreaterThan\": 70, \"SlidingWindowDuration\": \"00:00:10\"}}, " DUMP
	        "}",
	        n, sizeof(n));
	HAS(t, "\"System.Runtime/cpu-usage > 70% for 10s\"");
	HAS(t, "\"cooldown\": \"10s\"");
	HAS(t, "\"max-dumps\": 5");
	HAS(t, "\"type\": \"withheap\"");
	HAS(t, "imported from dotnet-monitor rule \\\"R\\\" of s.json");

	/* MB counters carry MB; between is two conditions; default window 1m */
	t = one("{\"Trigger\": {\"Type\": \"EventCounter\", \"Settings\": {\"ProviderName\": \"System.Runtime\", "
	        "\"CounterName\": \"gc-heap-size\", \"GreaterThan\": 500.5, \"LessThan\": 900}}, " DUMP "}",
	        n, sizeof(n));
	HAS(t, "\"System.Runtime/gc-heap-size > 500.5MB for 1m\"");
	HAS(t, "\"System.Runtime/gc-heap-size < 900MB for 1m\"");
	t = one("{\"Trigger\": {\"Type\": \"EventCounter\", \"Settings\": {\"ProviderName\": \"System.Runtime\", "
	        "\"CounterName\": \"gc-heap-size\", \"GreaterThan\": 900, \"LessThan\": 500}}, " DUMP "}",
	        n, sizeof(n));
	CHECK(t == NULL);
	HAS(n, "never be between");
	/* another provider: a plain number, a string number as ConfigMaps give */
	t = one("{\"Trigger\": {\"Type\": \"EventCounter\", \"Settings\": {\"ProviderName\": \"My-Src\", "
	        "\"CounterName\": \"depth\", \"LessThan\": \"2.5\"}}, " DUMP "}",
	        n, sizeof(n));
	HAS(t, "\"My-Src/depth < 2.5 for 1m\"");
	/* a typo in a System.Runtime counter is refused, not written */
	t = one("{\"Trigger\": {\"Type\": \"EventCounter\", \"Settings\": {\"ProviderName\": \"System.Runtime\", "
	        "\"CounterName\": \"cpu-usag\", \"GreaterThan\": 1}}, " DUMP "}",
	        n, sizeof(n));
	CHECK(t == NULL);
	HAS(n, "not imported: EventCounter System.Runtime/cpu-usag");
	t = one("{\"Trigger\": {\"Type\": \"EventCounter\", \"Settings\": {\"ProviderName\": \"System.Runtime\", "
	        "\"CounterName\": \"cpu-usage\"}}, " DUMP "}",
	        n, sizeof(n));
	CHECK(t == NULL);
	HAS(n, "neither GreaterThan nor LessThan");
	t = one("{\"Trigger\": {\"Type\": \"EventCounter\", \"Settings\": {\"CounterName\": \"cpu-usage\", "
	        "\"GreaterThan\": 1}}, " DUMP "}",
	        n, sizeof(n));
	CHECK(t == NULL);
	HAS(n, "needs ProviderName and CounterName");

	t = one(
	    "{\"Trigger\": {\"Type\": \"EventMeter\", \"Settings\": {\"MeterName\": \"M.x\", \"InstrumentName\": "
	    "\"h.d\", \"GreaterThan\": 2, \"HistogramPercentile\": 99, \"SlidingWindowDuration\": \"00:00:30\"}}, " DUMP
	    "}",
	    n, sizeof(n));
	HAS(t, "\"meter M.x/h.d p99 > 2 for 30s\"");
	t = one("{\"Trigger\": {\"Type\": \"EventMeter\", \"Settings\": {\"MeterName\": \"M\", \"InstrumentName\": "
	        "\"g\", \"LessThan\": 20, \"HistogramPercentile\": \"50\"}}, " DUMP "}",
	        n, sizeof(n));
	HAS(t, "\"meter M/g p50 < 20 for 1m\"");
	t = one("{\"Trigger\": {\"Type\": \"EventMeter\", \"Settings\": {\"MeterName\": \"M\", \"InstrumentName\": "
	        "\"g\", \"GreaterThan\": 20}}, " DUMP "}",
	        n, sizeof(n));
	HAS(t, "\"meter M/g > 20 for 1m\"");
	t = one("{\"Trigger\": {\"Type\": \"EventMeter\", \"Settings\": {\"MeterName\": \"M\", \"InstrumentName\": "
	        "\"g\", \"GreaterThan\": 20, \"HistogramPercentile\": 90}}, " DUMP "}",
	        n, sizeof(n));
	CHECK(t == NULL);
	HAS(n, "HistogramPercentile 90");

	t = one("{\"Trigger\": {\"Type\": \"CPUUsage\"}, " DUMP "}", n, sizeof(n));
	HAS(t, "\"System.Runtime/cpu-usage > 50% for 1m\"");
	t = one("{\"Trigger\": {\"Type\": \"cpuusage\", \"Settings\": {\"LessThan\": 5}}, " DUMP "}", n, sizeof(n));
	HAS(t, "\"System.Runtime/cpu-usage < 5% for 1m\"");
	CHECK(t && !strstr(t, ">"));
	t = one("{\"Trigger\": {\"Type\": \"GCHeapSize\"}, " DUMP "}", n, sizeof(n));
	HAS(t, "\"System.Runtime/gc-heap-size > 10MB for 1m\"");
	t = one("{\"Trigger\": {\"Type\": \"ThreadpoolQueueLength\", \"Settings\": {\"SlidingWindowDuration\": "
	        "\"00:02:00\"}}, " DUMP "}",
	        n, sizeof(n));
	HAS(t, "\"System.Runtime/threadpool-queue-length > 200 for 2m\"");
	HAS(t, "\"cooldown\": \"2m\"");
	/* a percentage over 100 cannot be written */
	t = one("{\"Trigger\": {\"Type\": \"CPUUsage\", \"Settings\": {\"GreaterThan\": 150}}, " DUMP "}", n,
	        sizeof(n));
	CHECK(t == NULL);
	HAS(n, "not imported");

	static const char *const asp[] = {"AspNetRequestCount", "AspNetRequestDuration", "AspNetResponseStatus"};
	for (int i = 0; i < 3; i++) {
		char rule[256];
		snprintf(rule, sizeof(rule),
		         "{\"Trigger\": {\"Type\": \"%s\", \"Settings\": {\"RequestCount\": 5}}, " DUMP "}", asp[i]);
		t = one(rule, n, sizeof(n));
		CHECK(t == NULL);
		HAS(n, asp[i]);
		HAS(n, "Microsoft.AspNetCore.Hosting");
	}
	t = one("{\"Trigger\": {\"Type\": \"Nope\"}, " DUMP "}", n, sizeof(n));
	CHECK(t == NULL);
	HAS(n, "\"Nope\" is not one dotnet-monitor documents");
	t = one("{" DUMP "}", n, sizeof(n));
	CHECK(t == NULL);
	HAS(n, "no Trigger");
	t = one(
	    "{\"Trigger\": {\"Type\": \"CPUUsage\", \"Settings\": {\"SlidingWindowDuration\": \"2.00:00:00\"}}, " DUMP
	    "}",
	    n, sizeof(n));
	CHECK(t == NULL);
	HAS(n, "00:00:01 to 1.00:00:00");
	t = one("{\"Trigger\": {\"Type\": \"CPUUsage\", \"Settings\": {\"SlidingWindowDuration\": 10}}, " DUMP "}", n,
	        sizeof(n));
	CHECK(t == NULL);
}

#define CPU "\"Trigger\": {\"Type\": \"CPUUsage\"}, " DUMP

static void test_filters(void)
{
	char n[4096];
	const char *t;

	t = one("{\"Filters\": [{\"Key\": \"ProcessName\", \"Value\": \"web*[1]?\", \"MatchType\": \"Exact\"}], " CPU
	        "}",
	        n, sizeof(n));
	HAS(t, "\"name\": \"web\\\\*\\\\[1\\\\]\\\\?\"");
	HAS(n, "ignores case");
	t = one("{\"Filters\": [{\"ProcessName\": \"web\", \"MatchType\": \"contains\"}], " CPU "}", n, sizeof(n));
	HAS(t, "\"name\": \"*web*\"");
	t = one("{\"Filters\": [{\"CommandLine\": \"app.dll\", \"MatchType\": \"Contains\"}], " CPU "}", n, sizeof(n));
	HAS(t, "\"cmdline\": \"*app.dll*\"");
	t = one("{\"Filters\": [{\"Key\": \"CommandLine\", \"Value\": \"dotnet app.dll\"}], " CPU "}", n, sizeof(n));
	HAS(t, "\"cmdline\": \"dotnet app.dll\"");
	t = one("{\"Filters\": [{\"Key\": \"ProcessId\", \"Value\": \"42\"}], " CPU "}", n, sizeof(n));
	HAS(t, "\"pid\": 42");
	t = one("{\"Filters\": [{\"ProcessId\": 43}], " CPU "}", n, sizeof(n));
	HAS(t, "\"pid\": 43");
	t = one("{\"Filters\": [{\"Value\": \"44\"}], " CPU "}", n, sizeof(n)); /* Key defaults to ProcessId */
	HAS(t, "\"pid\": 44");
	t = one("{\"Filters\": [{\"ManagedEntryPointAssemblyName\": \"Orders\"}], " CPU "}", n, sizeof(n));
	HAS(t, "\"name\": \"Orders\"");
	/* the host name beside the entry assembly: the assembly wins */
	t = one("{\"Filters\": [{\"ProcessName\": \"dotnet\"}, {\"ManagedEntryPointAssemblyName\": \"Orders\"}], " CPU
	        "}",
	        n, sizeof(n));
	HAS(t, "\"name\": \"Orders\"");
	HAS(n, "ProcessName \"dotnet\" dropped");
	t = one("{\"Filters\": [{\"ProcessName\": \"a\"}, {\"ProcessName\": \"a\"}], " CPU "}", n, sizeof(n));
	HAS(t, "\"name\": \"a\"");
	/* what cannot be expressed refuses the rule rather than widening it */
	t = one("{\"Filters\": [{\"ProcessName\": \"a\"}, {\"ManagedEntryPointAssemblyName\": \"b\"}], " CPU "}", n,
	        sizeof(n));
	CHECK(t == NULL);
	HAS(n, "one glob cannot say both");
	t = one("{\"Filters\": [{\"CommandLine\": \"a\"}, {\"CommandLine\": \"b\"}], " CPU "}", n, sizeof(n));
	CHECK(t == NULL);
	t = one("{\"Filters\": [{\"ProcessId\": \"1\"}, {\"ProcessId\": \"2\"}], " CPU "}", n, sizeof(n));
	CHECK(t == NULL);
	t = one("{\"Filters\": [{\"ProcessId\": \"1\", \"MatchType\": \"Contains\"}], " CPU "}", n, sizeof(n));
	CHECK(t == NULL);
	HAS(n, "ProcessId with MatchType Contains");
	t = one("{\"Filters\": [{\"ProcessId\": \"x\"}], " CPU "}", n, sizeof(n));
	CHECK(t == NULL);
	t = one("{\"Filters\": [{\"ProcessId\": \"99999999999999999999999\"}], " CPU "}", n, sizeof(n));
	CHECK(t == NULL);
	t = one("{\"Filters\": [{\"ProcessName\": \"a\", \"MatchType\": \"Regex\"}], " CPU "}", n, sizeof(n));
	CHECK(t == NULL);
	HAS(n, "Exact or Contains");
	t = one("{\"Filters\": [{\"Key\": \"User\", \"Value\": \"a\"}], " CPU "}", n, sizeof(n));
	CHECK(t == NULL);
	HAS(n, "unknown key \"User\"");
	t = one("{\"Filters\": [{\"ProcessName\": 5}], " CPU "}", n, sizeof(n)); /* bound as text, as .NET does */
	HAS(t, "\"name\": \"5\"");
	t = one("{\"Filters\": [{\"ProcessName\": [\"a\"]}], " CPU "}", n, sizeof(n));
	CHECK(t == NULL);
	t = one("{\"Filters\": [{\"ProcessName\": \"a\", \"CommandLine\": \"b\"}], " CPU "}", n, sizeof(n));
	CHECK(t == NULL);
	t = one("{\"Filters\": [{}], " CPU "}", n, sizeof(n));
	CHECK(t == NULL);
	t = one("{\"Filters\": [7], " CPU "}", n, sizeof(n));
	CHECK(t == NULL);
	t = one("{\"Filters\": {\"a\": 1}, " CPU "}", n, sizeof(n));
	CHECK(t == NULL);
	t = one("{\"Filters\": [{\"ProcessName\": \"\"}], " CPU "}", n, sizeof(n));
	CHECK(t == NULL);
	{
		char rule[1200], big[600];
		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		snprintf(rule, sizeof(rule), "{\"Filters\": [{\"ProcessName\": \"%s\"}], " CPU "}", big);
		t = one(rule, n, sizeof(n));
		CHECK(t == NULL);
		HAS(n, "too long");
	}
}

static void test_actions_limits(void)
{
	char n[4096];
	const char *t;
	static const char *const types[][2] = {
	    {"Mini", "normal"}, {"Triage", "triage"}, {"WithHeap", "withheap"}, {"Full", "full"}, {"full", "full"}};

	for (int i = 0; i < 5; i++) {
		char rule[512], want[64];
		snprintf(
		    rule, sizeof(rule),
		    "{\"Trigger\": {\"Type\": \"CPUUsage\"}, \"Actions\": [{\"Type\": \"CollectDump\", \"Settings\": "
		    "{\"Type\": \"%s\", \"Egress\": \"blob\"}}]}",
		    types[i][0]);
		t = one(rule, n, sizeof(n));
		snprintf(want, sizeof(want), "\"type\": \"%s\"", types[i][1]);
		HAS(t, want);
		HAS(n, "egress provider \"blob\"");
	}
	t = one("{\"Trigger\": {\"Type\": \"CPUUsage\"}, \"Actions\": [{\"Type\": \"CollectDump\", \"Settings\": "
	        "{\"Type\": \"Huge\"}}]}",
	        n, sizeof(n));
	CHECK(t == NULL);
	t = one("{\"Trigger\": {\"Type\": \"CPUUsage\"}, \"Actions\": [{\"Type\": \"CollectTrace\"}, {\"Type\": "
	        "\"Execute\"}, {\"Type\": \"CollectDump\", \"Settings\": {\"Type\": \"Triage\"}}, {\"Type\": "
	        "\"CollectDump\", \"Settings\": {\"Type\": \"Full\"}}, {\"Type\": \"CollectGCDump\"}, {}]}",
	        n, sizeof(n));
	HAS(t, "\"type\": \"full\"");
	HAS(n, "action 0 (CollectTrace) not carried over");
	HAS(n, "action 1 (Execute) not carried over");
	HAS(n, "action 4 (CollectGCDump) not carried over");
	HAS(n, "action 5 has no Type");
	HAS(n, "2 CollectDump actions");
	t = one("{\"Trigger\": {\"Type\": \"CPUUsage\"}, \"Actions\": [{\"Type\": \"CollectLogs\"}]}", n, sizeof(n));
	CHECK(t == NULL);
	HAS(n, "hold no CollectDump");
	t = one("{\"Trigger\": {\"Type\": \"CPUUsage\"}, \"Actions\": 3}", n, sizeof(n));
	CHECK(t == NULL);

	t = one("{" CPU ", \"Limits\": {\"ActionCount\": 2, \"ActionCountSlidingWindowDuration\": \"1:00:00\", "
	        "\"RuleDuration\": \"00:10:00\"}}",
	        n, sizeof(n));
	HAS(t, "\"max-dumps\": 2");
	HAS(t, "\"window\": \"1h\"");
	HAS(n, "RuleDuration not carried over");
	t = one("{" CPU ", \"Limits\": {\"ActionCount\": 0}}", n, sizeof(n));
	CHECK(t == NULL);
	t = one("{" CPU ", \"Limits\": {\"ActionCount\": 1e300}}", n, sizeof(n));
	CHECK(t == NULL);
	t = one("{" CPU ", \"Limits\": {\"ActionCount\": 2.5}}", n, sizeof(n));
	CHECK(t == NULL);
	t = one("{" CPU ", \"Limits\": {\"ActionCount\": \"x\"}}", n, sizeof(n));
	CHECK(t == NULL);
	t = one("{" CPU ", \"Limits\": {\"ActionCountSlidingWindowDuration\": \"00:00:00\"}}", n, sizeof(n));
	CHECK(t == NULL);
	t = one("{" CPU ", \"Limits\": [1]}", n, sizeof(n));
	CHECK(t == NULL);
	t = one("{" CPU ", \"Limits\": {\"Foo\": 1}, \"Extra\": 1}", n, sizeof(n));
	HAS(n, "limit \"Foo\" is not a setting");
	HAS(n, "rule key \"Extra\" is not a setting");
}

static int convert(const char *doc, struct dmimport_result *res, char *err, size_t len)
{
	return dmimport_convert(doc, strlen(doc), "s.json", res, err, len);
}

static void test_settings(void)
{
	struct dmimport_result res;
	char err[512];

	/* defaults, case-insensitive keys, egress section */
	CHECK(convert("{\"egress\": {}, \"collectionRuleDefaults\": {\"Triggers\": {\"SlidingWindowDuration\": "
	              "\"00:00:05\"}, \"Limits\": {\"ActionCount\": 3}}, \"collectionrules\": {\"a b\": {\"trigger\": "
	              "{\"type\": \"CPUUsage\"}, \"actions\": [{\"type\": \"collectdump\"}]}, \"a_b\": {\"Trigger\": "
	              "{\"Type\": \"CPUUsage\"}, \"Actions\": [{\"Type\": \"CollectDump\"}]}, \".hidden.schema\": "
	              "{\"Trigger\": {\"Type\": \"CPUUsage\"}, \"Actions\": [{\"Type\": \"CollectDump\"}]}}}",
	              &res, err, sizeof(err)) == 0);
	CHECK(res.n_rules == 3 && res.n_source_rules == 3);
	if (res.n_rules == 3) {
		CHECK_STR(res.rules[0].name, "a_b");
		CHECK_STR(res.rules[1].name, "a_b-2");
		CHECK_STR(res.rules[2].name, "_hidden_schema");
		CHECK(strstr(res.rules[0].text, "for 5s") && strstr(res.rules[0].text, "\"max-dumps\": 3"));
	}
	CHECK(res.n_notes >= 1 && strstr(res.notes[0].text, "Egress providers") && res.notes[0].rule[0] == '\0');
	dmimport_result_free(&res);
	dmimport_result_free(&res);
	dmimport_result_free(NULL);

	/* the ConfigMap form, at the top and under "data", with the env prefix */
	static const char *const flat[] = {
	    "{\"CollectionRules__R__Filters__0__Key\": \"ProcessName\", \"CollectionRules__R__Filters__0__Value\": "
	    "\"app\", \"CollectionRules__R__Trigger__Type\": \"EventCounter\", "
	    "\"CollectionRules__R__Trigger__Settings__ProviderName\": \"System.Runtime\", "
	    "\"CollectionRules__R__Trigger__Settings__CounterName\": \"working-set\", "
	    "\"CollectionRules__R__Trigger__Settings__GreaterThan\": \"700\", "
	    "\"CollectionRules__R__Actions__0__Type\": "
	    "\"CollectDump\", \"CollectionRules__R__Limits__ActionCount\": \"2\", \"Other__Key\": \"x\"}",
	    "{\"kind\": \"ConfigMap\", \"data\": {\"DotnetMonitor_CollectionRules__R__Trigger__Type\": \"GCHeapSize\", "
	    "\"DotnetMonitor_CollectionRules__R__Actions__0__Type\": \"CollectDump\"}}"};
	CHECK(convert(flat[0], &res, err, sizeof(err)) == 0);
	CHECK(res.n_rules == 1 && strstr(res.rules[0].text, "System.Runtime/working-set > 700MB for 1m") &&
	      strstr(res.rules[0].text, "\"name\": \"app\"") && strstr(res.rules[0].text, "\"max-dumps\": 2"));
	dmimport_result_free(&res);
	CHECK(convert(flat[1], &res, err, sizeof(err)) == 0);
	CHECK(res.n_rules == 1 && strstr(res.rules[0].text, "gc-heap-size > 10MB"));
	dmimport_result_free(&res);
	/* a list with a gap is not a list */
	CHECK(convert("{\"CollectionRules__R__Trigger__Type\": \"CPUUsage\", \"CollectionRules__R__Actions__1__Type\": "
	              "\"CollectDump\"}",
	              &res, err, sizeof(err)) == 0);
	CHECK(res.n_rules == 0 && res.n_notes == 1 && strstr(res.notes[0].text, "not a list"));
	dmimport_result_free(&res);
}

static void test_hostile(void)
{
	struct dmimport_result res;
	char err[512], *big;
	size_t n;

	CHECK(convert("{\"CollectionRules\": {", &res, err, sizeof(err)) == -EBADMSG);
	CHECK(strstr(err, "line 1, column") != NULL);
	CHECK(res.n_rules == 0 && res.rules == NULL);
	CHECK(convert("{\n\"CollectionRules\": x}", &res, err, sizeof(err)) == -EBADMSG);
	CHECK_MSG(strncmp(err, "line 2, column", 14) == 0, "%s", err);
	CHECK(convert("{} {}", &res, err, sizeof(err)) == -EBADMSG);
	CHECK(convert("", &res, err, sizeof(err)) == -EBADMSG);
	CHECK(convert("[]", &res, err, sizeof(err)) == -EINVAL);
	CHECK(convert("{}", &res, err, sizeof(err)) == -EINVAL);
	CHECK(convert("{\"CollectionRules\": []}", &res, err, sizeof(err)) == -EINVAL);
	CHECK(convert("{\"CollectionRules\": {}}", &res, err, sizeof(err)) == 0 && res.n_source_rules == 0);
	dmimport_result_free(&res);
	CHECK(convert("{\"CollectionRules\": {\"R\": 5, \"S\": null, \"T\": {\"Trigger\": 1, \"Actions\": null}}}",
	              &res, err, sizeof(err)) == 0);
	CHECK(res.n_rules == 0 && res.n_notes == 3);
	dmimport_result_free(&res);
	CHECK(convert("{\"CollectionRules\": {\"R\": {\"Trigger\": {\"Type\": \"CPUUsage\", \"Settings\": "
	              "{\"GreaterThan\": 1e999}}, " DUMP "}}}",
	              &res, err, sizeof(err)) <= 0);
	CHECK(res.n_rules == 0);
	dmimport_result_free(&res);
	CHECK(convert("{\"CollectionRules\": {\"R\": {\"Trigger\": {\"Type\": \"EventCounter\", \"Settings\": "
	              "{\"ProviderName\": \"P\", \"CounterName\": \"c\", \"GreaterThan\": 1e300}}, " DUMP "}}}",
	              &res, err, sizeof(err)) == 0);
	CHECK(res.n_rules == 0 && res.n_notes == 1 && strstr(res.notes[0].text, "out of range"));
	dmimport_result_free(&res);
	CHECK(convert("{\"CollectionRules\": {\"R\": {\"Trigger\": {\"Type\": \"EventCounter\", \"Settings\": "
	              "{\"ProviderName\": \"P\\u0001\", \"CounterName\": \"c\", \"GreaterThan\": 1}}, " DUMP "}}}",
	              &res, err, sizeof(err)) == 0);
	CHECK(res.n_rules == 0 && res.n_notes == 1);
	for (const char *p = res.n_notes ? res.notes[0].text : ""; *p; p++)
		CHECK(*p >= 0x20 && *p < 0x7f);
	dmimport_result_free(&res);

	/* deep nesting */
	big = malloc(100000);
	n = 0;
	n += (size_t)sprintf(big, "{\"CollectionRules\": {\"R\": ");
	for (int i = 0; i < 5000; i++)
		big[n++] = '[';
	for (int i = 0; i < 5000; i++)
		big[n++] = ']';
	n += (size_t)sprintf(big + n, "}}");
	CHECK(dmimport_convert(big, n, "s", &res, err, sizeof(err)) == -EBADMSG);
	CHECK(strstr(err, "line 1") != NULL);
	free(big);

	/* too large, too many rules */
	big = malloc(DMIMPORT_SIZE_MAX + 2);
	memset(big, ' ', DMIMPORT_SIZE_MAX + 1);
	CHECK(dmimport_convert(big, DMIMPORT_SIZE_MAX + 1, "s", &res, err, sizeof(err)) == -EFBIG);
	n = (size_t)sprintf(big, "{\"CollectionRules\": {");
	for (int i = 0; i <= DMIMPORT_RULES_MAX; i++)
		n += (size_t)sprintf(big + n, "%s\"r%d\": {}", i ? "," : "", i);
	n += (size_t)sprintf(big + n, "}}");
	CHECK(dmimport_convert(big, n, "s", &res, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "at most 1000") != NULL);
	/* 1000 rules, each with many notes: bounded */
	n = (size_t)sprintf(big, "{\"CollectionRules\": {");
	for (int i = 0; i < DMIMPORT_RULES_MAX; i++) {
		n += (size_t)sprintf(big + n, "%s\"r%d\": {\"Trigger\": {\"Type\": \"CPUUsage\"}, \"Actions\": [",
		                     i ? "," : "", i);
		for (int j = 0; j < 30; j++)
			n += (size_t)sprintf(big + n, "%s{\"Type\": \"CollectTrace\"}", j ? "," : "");
		n += (size_t)sprintf(big + n, ",{\"Type\": \"CollectDump\"}]}");
	}
	n += (size_t)sprintf(big + n, "}}");
	CHECK(n < DMIMPORT_SIZE_MAX);
	CHECK(dmimport_convert(big, n, "s", &res, err, sizeof(err)) == 0);
	CHECK(res.n_rules == DMIMPORT_RULES_MAX);
	CHECK(res.n_notes == (size_t)DMIMPORT_RULES_MAX * 25);
	dmimport_result_free(&res);
	free(big);
}

int main(void)
{
	test_timespan();
	test_triggers();
	test_filters();
	test_actions_limits();
	test_settings();
	test_hostile();
	return check_done();
}
