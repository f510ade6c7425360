/* The Prometheus text exposition format 0.0.4: a growing text buffer,
 * metric families (# HELP, # TYPE, then their samples), label values escaped
 * and bounded, metric and label names sanitized; and the metrics of guarded
 * processes written from their metric state (docs/metrics.md names them).
 * Pure: structs in, text out; no sockets, no clocks. Process names, command
 * lines and counter names come from hostile users: every one that reaches
 * the text is escaped ('\\', '"', newline) and cut to EXPO_LABEL_MAX bytes. */
#ifndef DUMPWATCH_EXPO_H
#define DUMPWATCH_EXPO_H

#include <stddef.h>
#include <stdint.h>

#include <sys/types.h>

#include <sys/socket.h>

#include "dumpwatch/metrics.h"
#include "dumpwatch/strbuf.h"

#define EXPO_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define EXPO_LABEL_MAX 128                /* bytes of a label value kept (before escaping) */
#define EXPO_NAME_MAX 200                 /* bytes of a metric name */
#define EXPO_TEXT_MAX (64u * 1024 * 1024) /* the buffer grows no further */

/* The text is built in a strbuf bounded by EXPO_TEXT_MAX: start one with
 * EXPO_BUF; failed set says the text is incomplete (out of memory, or past
 * the bound). */
#define EXPO_BUF                                                                                                       \
	{                                                                                                              \
		.max = EXPO_TEXT_MAX                                                                                   \
	}

struct expo_label {
	const char *name;  /* a label name; sanitized like a metric name, without ':' */
	const char *value; /* NULL or "": the label is left out */
};

/* Writes name with every character outside [a-zA-Z0-9_:] as '_' and a '_'
 * before a leading digit, cut to outlen - 1 (at most EXPO_NAME_MAX); "_"
 * for "". */
void expo_sanitize_name(const char *name, char *out, size_t outlen);

/* Appends the # HELP and # TYPE lines of a family (type: "gauge",
 * "counter", "untyped"); name is sanitized, help escaped ('\\', newline). */
void expo_family(struct strbuf *b, const char *name, const char *type, const char *help);

/* Appends one sample line: name{labels} value. Labels with an empty value
 * are left out; values are escaped and cut to EXPO_LABEL_MAX. NaN and the
 * infinities are written as Prometheus spells them. */
void expo_sample(struct strbuf *b, const char *name, const struct expo_label *labels, size_t n_labels, double value);

/* One guarded process as the exposition shows it. */
struct expo_process {
	pid_t pid;
	const char *process;     /* the name users know it by */
	const char *container;   /* 64 hex or "" */
	const char *pod;         /* pod uid or "" */
	const struct metrics *m; /* NULL: not attached, no values */
};

/* The labels of p's samples, pid, process, container and pod, into l[0..3]
 * (EXPO_PROCESS_LABELS of them); pid is written into pidbuf, which l
 * points to. */
#define EXPO_PROCESS_LABELS 4
void expo_process_labels(const struct expo_process *p, char *pidbuf, size_t pidlen, struct expo_label *l);

/* Appends the families of the processes' metrics as of now_ns: the
 * built-in metrics each process's session knows (GC sizes, pauses, rates,
 * allocation rates, /proc figures; a value not known is left out) and every
 * EventCounter received, as dotnet_eventcounter{provider,counter}. Each
 * family's samples stand together, processes in the order given. */
void expo_processes(struct strbuf *b, const struct expo_process *procs, size_t n, int64_t now_ns);

/* Reads a --metrics-listen address: "PORT" (loopback, 127.0.0.1),
 * "ADDR:PORT" (IPv4 dotted quad) or "[ADDR6]:PORT", PORT 1..65535. Fills
 * out and its length. 0, or -EINVAL with a sentence in err. */
int expo_parse_listen(const char *s, struct sockaddr_storage *out, socklen_t *ret_len, char *err, size_t errlen);

#endif
