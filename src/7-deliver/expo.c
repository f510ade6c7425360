/* The Prometheus text exposition (see expo.h). The format is "Exposition
 * formats", text format 0.0.4, of the Prometheus documentation: a family's
 * # HELP and # TYPE come before its samples, all its samples together; a
 * label value escapes '\\', '"' and newline; a HELP text '\\' and newline.
 * Bytes that are not valid UTF-8 or are control characters become '?', so
 * that a process name cannot make the whole page unparsable. */
#include "dumpwatch/expo.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/catalog.h"

static int name_char(char c, int first, int colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
	       (!first && c >= '0' && c <= '9');
}

static void sanitize(const char *name, char *out, size_t outlen, int colon)
{
	size_t j = 0, max = outlen - 1 < EXPO_NAME_MAX ? outlen - 1 : EXPO_NAME_MAX;

	if (!outlen)
		return;
	if (name && name[0] >= '0' && name[0] <= '9' && j < max)
		out[j++] = '_';
	for (size_t i = 0; name && name[i] && j < max; i++) {
		int ok = name_char(name[i], j == 0, colon);
		out[j++] = ok ? name[i] : '_';
	}
	if (j == 0 && max > 0)
		out[j++] = '_';
	out[j] = '\0';
}

void expo_sanitize_name(const char *name, char *out, size_t outlen)
{
	sanitize(name, out, outlen, 1);
}

/* The length of the valid UTF-8 sequence at s (at most n bytes), 0 when
 * there is none (RFC 3629: no overlongs, no surrogates, up to U+10FFFF). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1fu;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0fu;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07u;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3fu);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/* Appends s escaped: '\\' and newline always, '"' in a label value; a
 * control character or a byte of no valid UTF-8 sequence as '?'; at most
 * max bytes of s, never half a character. */
static void put_escaped(struct strbuf *b, const char *s, size_t max, int quote)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s);

	if (n > max)
		n = max;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_len(u + i, n - i);
		if (k == 0) {
			strbuf_add(b, "?", 1);
			i++;
			continue;
		}
		if (k > 1) {
			strbuf_add(b, s + i, k);
		} else if (u[i] == '\\') {
			strbuf_add(b, "\\\\", 2);
		} else if (u[i] == '\n') {
			strbuf_add(b, "\\n", 2);
		} else if (quote && u[i] == '"') {
			strbuf_add(b, "\\\"", 2);
		} else if (u[i] < 0x20 || u[i] == 0x7f) {
			strbuf_add(b, "?", 1);
		} else {
			strbuf_add(b, s + i, 1);
		}
		i += k;
	}
}

void expo_family(struct strbuf *b, const char *name, const char *type, const char *help)
{
	char n[EXPO_NAME_MAX + 1];

	expo_sanitize_name(name, n, sizeof(n));
	strbuf_printf(b, "# HELP %s ", n);
	put_escaped(b, help, 1024, 0);
	strbuf_printf(b, "\n# TYPE %s %s\n", n, type);
}

static void put_value(struct strbuf *b, double v)
{
	if (isnan(v))
		strbuf_str(b, "NaN");
	else if (isinf(v))
		strbuf_str(b, v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 1e15)
		strbuf_printf(b, "%.0f", v);
	else {
		/* The shortest of the two that reads back as v. */
		char s[40];
		snprintf(s, sizeof(s), "%.15g", v);
		if (strtod(s, NULL) != v)
			snprintf(s, sizeof(s), "%.17g", v);
		strbuf_str(b, s);
	}
}

void expo_sample(struct strbuf *b, const char *name, const struct expo_label *labels, size_t n_labels, double value)
{
	char n[EXPO_NAME_MAX + 1];
	int open = 0;

	expo_sanitize_name(name, n, sizeof(n));
	strbuf_str(b, n);
	for (size_t i = 0; i < n_labels; i++) {
		char ln[EXPO_NAME_MAX + 1];
		if (!labels[i].value || !labels[i].value[0])
			continue;
		sanitize(labels[i].name, ln, sizeof(ln), 0);
		strbuf_printf(b, "%s%s=\"", open ? "," : "{", ln);
		put_escaped(b, labels[i].value, EXPO_LABEL_MAX, 1);
		strbuf_add(b, "\"", 1);
		open = 1;
	}
	if (open)
		strbuf_add(b, "}", 1);
	strbuf_add(b, " ", 1);
	put_value(b, value);
	strbuf_add(b, "\n", 1);
}

/* ---- the processes' metrics ------------------------------------------- */

/* A built-in metric (catalog.h) as Prometheus users expect it: base units
 * (bytes, seconds, ratios), _total on counters. */
struct family {
	const char *metric; /* catalog name */
	const char *name;
	const char *type;
	double scale; /* from the catalog's base unit */
	const char *help;
};

static const struct family families[] = {
    {"heap-size", "dotnet_gc_heap_size_bytes", "gauge", 1, "GC heap size after the last GC (all generations)."},
    {"gen0-size", "dotnet_gc_gen0_size_bytes", "gauge", 1, "Generation 0 size after the last GC."},
    {"gen1-size", "dotnet_gc_gen1_size_bytes", "gauge", 1, "Generation 1 size after the last GC."},
    {"gen2-size", "dotnet_gc_gen2_size_bytes", "gauge", 1, "Generation 2 size after the last GC."},
    {"loh-size", "dotnet_gc_loh_size_bytes", "gauge", 1,
     "Large object heap size: at the last GC, raised by allocation ticks since."},
    {"poh-size", "dotnet_gc_poh_size_bytes", "gauge", 1,
     "Pinned object heap size: at the last GC, raised by allocation ticks since."},
    {"gc-pause", "dotnet_gc_last_pause_seconds", "gauge", 1e-3, "Pause of the last completed GC."},
    {"gc-count", "dotnet_gc_collections_total", "counter", 1, "GCs since dumpwatch attached."},
    {"gc-rate", "dotnet_gc_collections_per_second", "gauge", 1, "GCs per second over the last minute."},
    {"gen0-gc-rate", "dotnet_gc_gen0_collections_per_second", "gauge", 1, "Generation 0 GCs per second."},
    {"gen1-gc-rate", "dotnet_gc_gen1_collections_per_second", "gauge", 1, "Generation 1 GCs per second."},
    {"gen2-gc-rate", "dotnet_gc_gen2_collections_per_second", "gauge", 1, "Generation 2 GCs per second."},
    {"time-in-gc", "dotnet_gc_pause_time_ratio", "gauge", 1e-2,
     "Share of the last 10 s the runtime was suspended for GC."},
    {"alloc-rate", "dotnet_alloc_bytes_per_second", "gauge", 1, "Allocation rate, all heaps (allocation ticks)."},
    {"soh-alloc-rate", "dotnet_soh_alloc_bytes_per_second", "gauge", 1, "Small object heap allocation rate."},
    {"loh-alloc-rate", "dotnet_loh_alloc_bytes_per_second", "gauge", 1, "Large object heap allocation rate."},
    {"poh-alloc-rate", "dotnet_poh_alloc_bytes_per_second", "gauge", 1, "Pinned object heap allocation rate."},
    {"appdomain-allocated", "dotnet_allocated_bytes_total", "counter", 1, "Bytes allocated since dumpwatch attached."},
    {"appdomain-survived", "dotnet_gc_survived_bytes", "gauge", 1, "Bytes on the heap after the last GC."},
    {"exception-rate", "dotnet_exceptions_per_second", "gauge", 1, "First-chance exceptions per second."},
    {"rss", "dotnet_process_resident_memory_bytes", "gauge", 1, "Resident memory (VmRSS), polled from /proc."},
    {"private-memory", "dotnet_process_private_memory_bytes", "gauge", 1,
     "Anonymous resident memory plus swap, polled from /proc."},
    {"swap", "dotnet_process_swap_bytes", "gauge", 1, "Swapped-out memory (VmSwap), polled from /proc."},
    {"threads", "dotnet_process_threads", "gauge", 1, "Threads of the process, polled from /proc."},
    {"fds", "dotnet_process_open_fds", "gauge", 1, "Open file descriptors, polled from /proc."},
};

void expo_process_labels(const struct expo_process *p, char *pid, size_t pidlen, struct expo_label *l)
{
	snprintf(pid, pidlen, "%d", (int)p->pid);
	l[0] = (struct expo_label){"pid", pid};
	l[1] = (struct expo_label){"process", p->process};
	l[2] = (struct expo_label){"container", p->container};
	l[3] = (struct expo_label){"pod", p->pod};
}

void expo_processes(struct strbuf *b, const struct expo_process *procs, size_t n, int64_t now_ns)
{
	char err[256], pid[16];
	struct expo_label l[6];

	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		struct metric_ref ref;
		int header = 0;
		if (catalog_resolve(families[f].metric, &ref, err, sizeof(err)) < 0)
			continue;
		for (size_t i = 0; i < n; i++) {
			double v;
			int64_t at;
			if (!procs[i].m || !metrics_read(procs[i].m, &ref, now_ns, &v, &at))
				continue;
			if (!header) {
				expo_family(b, families[f].name, families[f].type, families[f].help);
				header = 1;
			}
			expo_process_labels(&procs[i], pid, sizeof(pid), l);
			expo_sample(b, families[f].name, l, 4, v * families[f].scale);
		}
	}
	int header = 0;
	for (size_t i = 0; i < n; i++) {
		struct metrics_counter c;
		if (!procs[i].m)
			continue;
		for (size_t k = 0; metrics_counter_at(procs[i].m, k, &c); k++) {
			if (!header) {
				expo_family(b, "dotnet_eventcounter", "gauge",
				            "The last value of an EventCounter, as the runtime reported it (mean, or "
				            "increment over the interval), in its own display units.");
				header = 1;
			}
			expo_process_labels(&procs[i], pid, sizeof(pid), l);
			l[4] = (struct expo_label){"provider", c.provider};
			l[5] = (struct expo_label){"counter", c.name};
			expo_sample(b, "dotnet_eventcounter", l, 6, c.value);
		}
	}
}

int expo_parse_listen(const char *s, struct sockaddr_storage *out, socklen_t *ret_len, char *err, size_t errlen)
{
	char host[64];
	const char *port;
	unsigned long p;
	char *end;

	memset(out, 0, sizeof(*out));
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':' || (size_t)(close - s - 1) >= sizeof(host))
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(close - s - 1), s + 1);
		port = close + 2;
	} else if (strchr(s, ':')) {
		const char *colon = strrchr(s, ':');
		if ((size_t)(colon - s) >= sizeof(host) || memchr(s, ':', (size_t)(colon - s)))
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - s), s);
		port = colon + 1;
	} else {
		snprintf(host, sizeof(host), "127.0.0.1");
		port = s;
	}
	if (port[0] < '0' || port[0] > '9')
		goto bad;
	errno = 0;
	p = strtoul(port, &end, 10);
	if (errno || *end || p == 0 || p > 65535)
		goto bad;
	if (s[0] == '[') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)out;
		if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1)
			goto bad;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)p);
		*ret_len = sizeof(*a6);
		return 0;
	}
	struct sockaddr_in *a4 = (struct sockaddr_in *)out;
	if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
		goto bad;
	a4->sin_family = AF_INET;
	a4->sin_port = htons((uint16_t)p);
	*ret_len = sizeof(*a4);
	return 0;
bad:
	snprintf(
	    err, errlen,
	    "--metrics-listen \"%.64s\": write PORT (on 127.0.0.1), ADDR:PORT or [ADDR6]:PORT, with PORT 1 to 65535",
	    s);
	return -EINVAL;
}
