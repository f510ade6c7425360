/* dumpwatch heap: a live heap snapshot of a process (heapsnap.h), printed
 * as `dotnet-gcdump report` prints a .gcdump (the totals, then bytes, count
 * and type, most bytes first), then the split by generation, the retention
 * paths of the types that take the most (heapsum.h) and the types that
 * retain the most (heapdom.h); or all of it as one JSON object. Type and field names come from the target: they are
 * escaped (text_escape) before they are printed. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dumpwatch/cli.h"
#include "dumpwatch/cmd.h"
#include "dumpwatch/discovery.h"
#include "dumpwatch/exitcodes.h"
#include "dumpwatch/gcdump.h"
#include "dumpwatch/heapdump.h"
#include "dumpwatch/heapsnap.h"
#include "dumpwatch/heapstatics.h"
#include "dumpwatch/heapsum.h"
#include "dumpwatch/jsonl.h"
#include "dumpwatch/log.h"
#include "dumpwatch/text.h"

#define DEFAULT_PATHS 10
#define RETAINED_ROWS 10
#define DEFAULT_TIMEOUT_NS (120 * 1000000000LL)
#define NAME_BUF (4 * 2048 + 64)

static const char *const gen_names[HG_N_GENS] = {"gen0", "gen1", "gen2", "loh", "poh", "unknown"};

static void help(FILE *f)
{
	cli_help_usage(f, cmd_heap.synopsis);
	fputs("  induces a full blocking GC in PID, reads the runtime's walk of its heap, and prints the\n"
	      "  objects by type (as dotnet-gcdump report does), by generation, and what holds the types\n"
	      "  that take the most\n"
	      "\n"
	      "options:\n",
	      f);
	cli_help_option(f, "--pid PID", "the process (or PID as the operand)");
	cli_help_option(f, "--json", "one JSON object instead of the tables");
	cli_help_option(f, "--types", "the objects by type and generation only, counted as they come: no graph kept");
	cli_help_option(f, "--paths N", "retention paths of the N types of most bytes (default %d)", DEFAULT_PATHS);
	cli_help_option(f, "--no-retained", "leave out retained sizes (the dominator tree: seconds for 10 M objects)");
	cli_help_option(f, "--timeout D", "give up when the walk has not ended after D (default 2m)");
	cli_help_option(f, "--buffer MB", "the session buffer the runtime may fill (default %d)", HEAPSNAP_BUFFER_MB);
	cli_help_option(f, "--save-trace FILE", "also write the event stream as it came (nettrace) to FILE");
	cli_help_option(f, "--gcdump FILE", "also write the snapshot as a .gcdump (dotnet-gcdump's format) to FILE");
}

/* "1,234,567" */
static const char *grouped(uint64_t v, char *buf, size_t len)
{
	char raw[32];
	int n = snprintf(raw, sizeof(raw), "%llu", (unsigned long long)v);
	size_t o = 0;

	for (int i = 0; i < n && o + 2 < len; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = raw[i];
	}
	buf[o] = '\0';
	return buf;
}

static const char *type_name(const struct heapgraph *g, uint32_t t, char *buf, size_t len)
{
	const struct hg_type *ty = t == HG_NONE ? NULL : hg_type(g, t);
	return text_escape_str(ty ? ty->name : "<UNKNOWN>", buf, len);
}

static void print_path(FILE *f, const struct heapgraph *g, const struct hs_path *p)
{
	static char buf[NAME_BUF];

	fprintf(f, "    %s", text_escape_str(p->root, buf, sizeof(buf)));
	for (size_t i = 0; i < p->n_steps; i++) {
		if (p->cut && i + 1 == p->n_steps)
			fputs(" → …", f);
		fprintf(f, " → %s%s", type_name(g, p->steps[i], buf, sizeof(buf)), p->nested[i] ? " (nested)" : "");
	}
	fputc('\n', f);
}

static int cmp_retained(const void *a, const void *b)
{
	const struct hs_row *x = *(const struct hs_row *const *)a, *y = *(const struct hs_row *const *)b;
	if (x->retained != y->retained)
		return x->retained > y->retained ? -1 : 1;
	return x->bytes > y->bytes ? -1 : x->bytes < y->bytes;
}

/* The types that retain the most (heapsum_retained), or why not. */
static void print_retained(FILE *f, const struct heapgraph *g, const struct heapsum *s)
{
	static char name[NAME_BUF];
	char a[32], b[32], c[32];

	if (!s->retained_done) {
		if (s->retained_why[0])
			fprintf(f, "\nRetained sizes were not computed: %s\n", s->retained_why);
		return;
	}
	const struct hs_row **by = malloc((s->n_rows ? s->n_rows : 1) * sizeof(*by));
	if (!by)
		return;
	for (size_t i = 0; i < s->n_rows; i++)
		by[i] = &s->rows[i];
	qsort(by, s->n_rows, sizeof(*by), cmp_retained);
	fputs("\nRetained by type (what the objects of a type keep alive; nested ones once):\n", f);
	fprintf(f, "%15s  %15s  %10s  Type\n", "Retained Bytes", "Object Bytes", "Count");
	for (size_t i = 0; i < s->n_rows && i < RETAINED_ROWS; i++)
		fprintf(f, "%15s  %15s  %10s  %s\n", grouped(by[i]->retained, a, sizeof(a)),
		        grouped(by[i]->bytes, b, sizeof(b)), grouped(by[i]->count, c, sizeof(c)),
		        type_name(g, by[i]->type, name, sizeof(name)));
	free(by);
}

static void print_text(FILE *f, const struct heapsnap *snap, const struct heapsum *s)
{
	const struct heapgraph *g = snap->graph;
	const struct hg_cut *cut = hg_cut(g);
	static char name[NAME_BUF];
	char a[32], b[32];

	fprintf(f, "%15s  GC Heap bytes\n", grouped(s->total_bytes, a, sizeof(a)));
	fprintf(f, "%15s  GC Heap objects\n", grouped(s->total_count, a, sizeof(a)));
	if (hg_n_edges(g))
		fprintf(f, "%15s  Total references\n", grouped(hg_n_edges(g), a, sizeof(a)));
	fputc('\n', f);
	fprintf(f, "%15s  %8s  Type\n", "Object Bytes", "Count");
	for (size_t i = 0; i < s->n_rows; i++) {
		const struct hs_row *r = &s->rows[i];
		fprintf(f, "%15s  %8s  %s\n", grouped(r->bytes, a, sizeof(a)), grouped(r->count, b, sizeof(b)),
		        type_name(g, r->type, name, sizeof(name)));
	}

	fputs("\nBy generation:\n", f);
	fprintf(f, "%15s  %10s  Generation\n", "Object Bytes", "Count");
	for (int k = 0; k < HG_N_GENS; k++) {
		if (k == HG_GEN_UNKNOWN && !s->gen_count[k])
			continue;
		fprintf(f, "%15s  %10s  %s\n", grouped(s->gen_bytes[k], a, sizeof(a)),
		        grouped(s->gen_count[k], b, sizeof(b)), gen_names[k]);
	}

	if (s->n_paths) {
		fputs("\nWhat holds them (the path that holds most of each type's bytes, from a root):\n", f);
		for (size_t i = 0; i < s->n_paths; i++) {
			const struct hs_path *p = &s->paths[i];
			const struct hs_row *r = &s->rows[p->row];
			fprintf(f, "  %s: %s of %s bytes", type_name(g, r->type, name, sizeof(name)),
			        grouped(p->bytes, a, sizeof(a)), grouped(r->bytes, b, sizeof(b)));
			fprintf(f, ", %s of %s objects;", grouped(p->count, a, sizeof(a)),
			        grouped(r->count, b, sizeof(b)));
			for (int k = 0; k < HG_N_GENS; k++)
				if (r->gen_bytes[k])
					fprintf(f, " %s %s", gen_names[k], grouped(r->gen_bytes[k], a, sizeof(a)));
			fputc('\n', f);
			print_path(f, g, p);
		}
	}
	print_retained(f, g, s);
	if (s->unreachable_count)
		fprintf(f, "\n%s bytes in %s objects were reached from no root the runtime reported\n",
		        grouped(s->unreachable_bytes, a, sizeof(a)), grouped(s->unreachable_count, b, sizeof(b)));
	if (cut->unplaced)
		fprintf(f, "\n%s objects were counted in no generation: a generation boundary lies among them\n",
		        grouped(cut->unplaced, a, sizeof(a)));
	if (cut->nodes || cut->edges || cut->types || cut->roots || cut->names)
		fprintf(f,
		        "\ncut: %llu objects, %llu references, %llu types, %llu roots past the limits, %llu types "
		        "unnamed\n",
		        (unsigned long long)cut->nodes, (unsigned long long)cut->edges, (unsigned long long)cut->types,
		        (unsigned long long)cut->roots, (unsigned long long)cut->names);
	if (cut->lost_events || cut->lost_batches)
		fprintf(f,
		        "\nincomplete: the runtime dropped %llu events (%llu batches of objects or references) when "
		        "its session buffer filled\n",
		        (unsigned long long)cut->lost_events, (unsigned long long)cut->lost_batches);
	if (snap->pause_ns >= 0)
		fprintf(f, "\nthe target was paused %.1f ms for the walk\n", (double)snap->pause_ns / 1e6);
}

/* The snapshot as a .gcdump at path; 0, or -1 with the error logged. */
static int write_gcdump(const char *path, pid_t pid, const struct dn_target *t, const struct heapsnap *snap)
{
	char q[128], err[256];
	struct timespec now;
	text_quote(q, sizeof(q), path, strlen(path), 80);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		log_error("cannot create %s: %m", q);
		return -1;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	struct gcdump_meta m = {.process_name = t->comm[0] ? t->comm : NULL,
	                        .pid = (int32_t)pid,
	                        .time_unix_ns = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec,
	                        .pointer_size = snap->pointer_size ? snap->pointer_size : 8};
	int r = gcdump_write(fd, snap->graph, &m, err, sizeof(err));
	if (close(fd) < 0 && r == 0) {
		r = -errno;
		snprintf(err, sizeof(err), "closing it failed: %s", strerror(errno));
	}
	if (r < 0) {
		log_error("gcdump %s: %s", q, err);
		unlink(path);
		return -1;
	}
	return 0;
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {{"pid", required_argument, NULL, 'p'},
	                                     {"json", no_argument, NULL, 'j'},
	                                     {"types", no_argument, NULL, 'T'},
	                                     {"paths", required_argument, NULL, 'n'},
	                                     {"no-retained", no_argument, NULL, 'R'},
	                                     {"timeout", required_argument, NULL, 't'},
	                                     {"save-trace", required_argument, NULL, 's'},
	                                     {"gcdump", required_argument, NULL, 'g'},
	                                     {"buffer", required_argument, NULL, 'b'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {NULL, 0, NULL, 0}};
	pid_t pid = 0;
	int json = 0, retained = 1, types_only = 0, c;
	long n_paths = DEFAULT_PATHS, buffer_mb = HEAPSNAP_BUFFER_MB;
	int64_t timeout = DEFAULT_TIMEOUT_NS;
	const char *save = NULL, *gcdump = NULL;
	char err[512];

	optind = 0;
	while ((c = getopt_long(argc, argv, "p:jn:t:s:g:b:h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			help(stdout);
			return DW_EXIT_OK;
		case 'p':
			if (cli_pid_option(optarg, &pid) < 0)
				return DW_EXIT_USAGE;
			break;
		case 'j':
			json = 1;
			break;
		case 'R':
			retained = 0;
			break;
		case 'T':
			types_only = 1;
			break;
		case 'n':
			if (cli_count_option("--paths", optarg, 1000, &n_paths) < 0)
				return DW_EXIT_USAGE;
			break;
		case 't':
			if (cli_duration_option("--timeout", optarg, &timeout) < 0)
				return DW_EXIT_USAGE;
			break;
		case 's':
			save = optarg;
			break;
		case 'g':
			gcdump = optarg;
			break;
		case 'b':
			if (cli_count_option("--buffer", optarg, 65536, &buffer_mb) < 0 || buffer_mb == 0) {
				if (buffer_mb == 0)
					log_error("--buffer: at least 1 (MB)");
				return DW_EXIT_USAGE;
			}
			break;
		default:
			return DW_EXIT_USAGE;
		}
	}
	if (optind < argc && !pid) {
		if (cli_pid_option(argv[optind++], &pid) < 0)
			return DW_EXIT_USAGE;
	}
	if (!pid || optind < argc) {
		log_error("heap needs one process: dumpwatch heap PID");
		return DW_EXIT_USAGE;
	}
	if (types_only && gcdump) {
		log_error("--types keeps no graph, a .gcdump needs one: use --gcdump without --types");
		return DW_EXIT_USAGE;
	}
	if (types_only)
		retained = 0;

	struct dn_target t;
	if (discovery_find(pid, &t, err, sizeof(err)) < 0) {
		log_error("%s", err);
		return DW_EXIT_TARGET;
	}
	const struct ipc_endpoint ep = discovery_endpoint(&t);
	struct heapsnap_opts o = {
	    .timeout_ns = timeout, .buffer_mb = (uint32_t)buffer_mb, .save_fd = -1, .histogram = types_only};
	if (save) {
		o.save_fd = open(save, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (o.save_fd < 0) {
			char q[128];
			text_quote(q, sizeof(q), save, strlen(save), 80);
			log_error("cannot create %s: %m", q);
			return DW_EXIT_USAGE;
		}
	}
	struct heapsnap snap;
	int r = heapsnap_take(&ep, &o, &snap, err, sizeof(err));
	if (o.save_fd >= 0)
		close(o.save_fd);
	if (r < 0) {
		log_error("heap snapshot of %d: %s", (int)pid, err);
		return r == -ENOENT || r == -EACCES || r == -EPERM || r == -ECONNREFUSED ? DW_EXIT_TARGET
		                                                                         : DW_EXIT_RUNTIME;
	}
	if (!types_only) {
		struct heapstatics_result named;
		int e = heapstatics_name(ep.pid, snap.graph, &named);
		if (e < 0)
			log_debug("heap snapshot of %d: the classes of its statics: %s", (int)pid, strerror(-e));
		else
			log_debug(
			    "heap snapshot of %d: statics named %zu, ambiguous %zu, unknown %zu, from %zu assemblies "
			    "(%zu files unread)",
			    (int)pid, named.named, named.ambiguous, named.unknown, named.files, named.unread);
	}
	if (gcdump && write_gcdump(gcdump, pid, &t, &snap) < 0) {
		hg_free(snap.graph);
		return DW_EXIT_RUNTIME;
	}
	struct heapsum *s;
	if (heapsum_build(snap.graph, (size_t)n_paths, &s) < 0) {
		log_error("heap snapshot of %d: out of memory", (int)pid);
		hg_free(snap.graph);
		return DW_EXIT_RUNTIME;
	}
	const struct hd_limits lim = {.max_nodes = HEAPDUMP_RETAINED_MAX_OBJECTS};
	if (retained && heapsum_retained(snap.graph, s, &lim) < 0)
		log_warn("heap snapshot of %d: out of memory for the retained sizes", (int)pid);
	if (json) {
		json_object *o2 = heapdump_json(pid, &snap, s, SIZE_MAX);
		jsonl_print(stdout, o2);
		json_object_put(o2);
	} else {
		print_text(stdout, &snap, s);
	}
	heapsum_free(s);
	int flushed = fflush(stdout) == 0;
	if (!snap.complete) {
		char a[32], b[32];
		snprintf(a, sizeof(a), "%llu", (unsigned long long)snap.walk_bytes);
		snprintf(b, sizeof(b), "%llu", (unsigned long long)hg_reported_bytes(snap.graph));
		log_error("heap snapshot of %d is incomplete: the runtime dropped events (its session buffer of %ld MB "
		          "filled): the walk gave %s bytes of the %s in its heap; try a larger --buffer",
		          (int)pid, buffer_mb, a, b);
	}
	hg_free(snap.graph);
	return flushed && snap.complete ? DW_EXIT_OK : DW_EXIT_RUNTIME;
}

const struct cmd cmd_heap = {
    .name = "heap",
    .run = run,
    .synopsis = "heap [--json] [--types] [--paths N] [--no-retained] [--timeout D] [--buffer MB] [--save-trace FILE] "
                "[--gcdump FILE] PID",
    .summary = "a heap snapshot of PID: objects by type and generation, and what holds them",
};
