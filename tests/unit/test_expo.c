/* The Prometheus text builder: hostile process names escaped (quote,
 * backslash, newline, a forged "# " line, bytes that are not UTF-8, a name
 * past the bound), metric and label names sanitized, families grouped, values
 * as Prometheus spells them, the metrics of a process from its state, and
 * the --metrics-listen forms. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dumpwatch/expo.h"
#include "dumpwatch/exposrv.h"
#include "dumpwatch/metrics.h"

#define SEC 1000000000LL

static void test_names(void)
{
	char n[EXPO_NAME_MAX + 1];

	expo_sanitize_name("dotnet_gc_loh_size_bytes", n, sizeof(n));
	CHECK_STR(n, "dotnet_gc_loh_size_bytes");
	expo_sanitize_name("System.Runtime/cpu-usage", n, sizeof(n));
	CHECK_STR(n, "System_Runtime_cpu_usage");
	expo_sanitize_name("9lives:x", n, sizeof(n));
	CHECK_STR(n, "_9lives:x");
	expo_sanitize_name("", n, sizeof(n));
	CHECK_STR(n, "_");
	expo_sanitize_name("a\"b{c} d\n", n, sizeof(n));
	CHECK_STR(n, "a_b_c__d_");
	expo_sanitize_name("abcdef", n, 4);
	CHECK_STR(n, "abc");
}

static void test_escaping(void)
{
	struct strbuf b = EXPO_BUF;
	struct expo_label l[] = {
	    {"pid", "42"}, {"process", "evil\"} 1\n# TYPE x counter\nx\\y"}, {"container", ""}, {"bad label!", "v"}};

	expo_family(&b, "dotnet_x_bytes", "gauge", "Help with a \\ and a\nnewline.");
	expo_sample(&b, "dotnet_x_bytes", l, 4, 1.5e9);
	CHECK_STR(b.p, "# HELP dotnet_x_bytes Help with a \\\\ and a\\nnewline.\n"
	               "# TYPE dotnet_x_bytes gauge\n"
	               "dotnet_x_bytes{pid=\"42\",process=\"evil\\\"} 1\\n# TYPE x counter\\nx\\\\y\","
	               "bad_label_=\"v\"} 1500000000\n");
	/* Every line that does not start with '#' is a sample: the forged
	 * line stayed inside its quotes. */
	int lines = 0;
	for (const char *p = b.p; *p; p++)
		lines += *p == '\n';
	CHECK(lines == 3);
	strbuf_free(&b);

	/* Control characters and bytes of no UTF-8 sequence become '?'; valid
	 * UTF-8 stays; a value is cut at EXPO_LABEL_MAX bytes. */
	struct expo_label u[] = {{"process", "caf\xc3\xa9\x01\xff\xc3(\x7f"}};
	expo_sample(&b, "m", u, 1, 0);
	CHECK_STR(b.p, "m{process=\"caf\xc3\xa9??\?(?\"} 0\n");
	strbuf_free(&b);

	char longname[400];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	struct expo_label lo[] = {{"process", longname}};
	expo_sample(&b, "m", lo, 1, 0);
	CHECK(b.p && strlen(b.p) == strlen("m{process=\"\"} 0\n") + EXPO_LABEL_MAX);
	strbuf_free(&b);

	/* No labels, special values, no empty braces. */
	expo_sample(&b, "m", NULL, 0, NAN);
	expo_sample(&b, "m", u + 0, 0, INFINITY);
	expo_sample(&b, "m", NULL, 0, -INFINITY);
	expo_sample(&b, "m", NULL, 0, 0.25);
	struct expo_label empty[] = {{"pod", ""}, {"container", NULL}};
	expo_sample(&b, "m", empty, 2, 3);
	CHECK_STR(b.p, "m NaN\nm +Inf\nm -Inf\nm 0.25\nm 3\n");
	strbuf_free(&b);
	strbuf_free(NULL);
}

static void test_processes(void)
{
	struct metrics *m = metrics_new();
	struct proc_sample p = {.rss = 500 << 20, .threads = 12, .have = PROC_HAVE_RSS | PROC_HAVE_THREADS};
	struct strbuf b = EXPO_BUF;

	if (!m)
		return;
	metrics_start(m, SEC);
	metrics_on_proc(m, &p, 2 * SEC);
	struct expo_process ps[] = {
	    {1234, "web\"api", "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899", "", m},
	    {99, "idle", "", "", NULL},
	};
	expo_processes(&b, ps, 2, 3 * SEC);
	CHECK(b.p != NULL);
	if (b.p) {
		CHECK(strstr(b.p, "# TYPE dotnet_process_resident_memory_bytes gauge\n"
		                  "dotnet_process_resident_memory_bytes{pid=\"1234\",process=\"web\\\"api\","
		                  "container=\"3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899\"} "
		                  "524288000\n") != NULL);
		CHECK(strstr(b.p, "dotnet_process_threads{pid=\"1234\"") != NULL);
		/* Unknown values and processes without metrics are left out,
		 * with their families. */
		CHECK(strstr(b.p, "pid=\"99\"") == NULL);
		CHECK(strstr(b.p, "loh_size") == NULL);
		CHECK(strstr(b.p, "dotnet_eventcounter") == NULL);
	}
	strbuf_free(&b);
	metrics_free(m);
}

static void test_listen(void)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char err[256], a[64];

	CHECK(expo_parse_listen("9464", &ss, &len, err, sizeof(err)) == 0);
	CHECK(ss.ss_family == AF_INET && len == sizeof(struct sockaddr_in));
	inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, a, sizeof(a));
	CHECK_STR(a, "127.0.0.1");
	CHECK(ntohs(((struct sockaddr_in *)&ss)->sin_port) == 9464);
	CHECK(expo_parse_listen("0.0.0.0:80", &ss, &len, err, sizeof(err)) == 0);
	CHECK(expo_parse_listen("[::1]:9464", &ss, &len, err, sizeof(err)) == 0);
	CHECK(ss.ss_family == AF_INET6 && ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) == 9464);
	const char *bad[] = {"",       "0",      "65536",        "x",   "1.2.3.4", "1.2.3.4:",   "::1:80", "[::1]80",
	                     "[::1]:", "[zz]:1", "localhost:80", "80x", "-1",      "1.2.3.4:+80"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_MSG(expo_parse_listen(bad[i], &ss, &len, err, sizeof(err)) == -EINVAL, "%s", bad[i]);
	CHECK(strstr(err, "--metrics-listen") != NULL);
}

/* --metrics-allow: users and address ranges, and who they let in. */
static void test_allow(void)
{
	struct exposrv_allow a;
	char err[256];
	uint8_t lo[16] = {127, 0, 0, 5}, ten[16] = {10, 1, 2, 3}, v6[16] = {0x20, 0x01, 0x0d, 0xb8};

	CHECK(exposrv_parse_allow("root,10.0.0.0/8,2001:db8::/32", &a, err, sizeof(err)) == 0 && a.n == 3);
	CHECK(a.e[0].is_user && a.e[0].uid == 0);
	/* Local root: in. A local user not listed: out, whatever its address. */
	CHECK(exposrv_allowed(&a, 1, 0, AF_INET, lo));
	CHECK(!exposrv_allowed(&a, 1, 1000, AF_INET, lo));
	/* Remote, by address; a user entry never matches a remote client. */
	CHECK(exposrv_allowed(&a, 0, 0, AF_INET, ten));
	CHECK(!exposrv_allowed(&a, 0, 0, AF_INET, lo));
	CHECK(exposrv_allowed(&a, 0, 0, AF_INET6, v6));
	CHECK(!exposrv_allowed(&a, 0, 0, AF_INET, v6)); /* the family counts */
	/* A prefix that is not a whole number of bytes. */
	CHECK(exposrv_parse_allow("127.0.0.0/9", &a, err, sizeof(err)) == 0);
	CHECK(exposrv_allowed(&a, 1, 1000, AF_INET, lo));
	lo[1] = 0x80;
	CHECK(!exposrv_allowed(&a, 1, 1000, AF_INET, lo));
	/* An empty list lets everyone in. */
	memset(&a, 0, sizeof(a));
	CHECK(exposrv_allowed(&a, 0, 0, AF_INET, ten));
	/* Refused, each with a sentence. */
	CHECK(exposrv_parse_allow("10.0.0.0/33", &a, err, sizeof(err)) == -EINVAL && strstr(err, "0 to 32 bits"));
	CHECK(exposrv_parse_allow("no-such-user-here", &a, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "neither a user nor an address"));
	CHECK(exposrv_parse_allow("root,,root", &a, err, sizeof(err)) == -EINVAL);
	CHECK(exposrv_parse_allow("", &a, err, sizeof(err)) == -EINVAL);
	CHECK(exposrv_parse_allow("a/b", &a, err, sizeof(err)) == -EINVAL && strstr(err, "not an address"));
	CHECK(exposrv_parse_allow("0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0", &a, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "at most 16"));
}

int main(void)
{
	test_allow();
	test_names();
	test_escaping();
	test_processes();
	test_listen();
	return check_done();
}
