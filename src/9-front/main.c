/* dumpwatch: command line. main() only dispatches on the mode; each mode has
 * its own option parser, which fills that mode's options and hands over to
 * the watcher, the guard (--rules-dir), `ps`, `record`, `check`, the views
 * (`counters`, `gc`), the dump-context readers (`show`, `report`) or the
 * importer (`import`); it holds no logic of its own. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpwatch/catalog.h"
#include "dumpwatch/context.h"
#include "dumpwatch/defaults.h"
#include "dumpwatch/discovery.h"
#include "dumpwatch/dmimport.h"
#include "dumpwatch/exitcodes.h"
#include "dumpwatch/fds.h"
#include "dumpwatch/guard.h"
#include "dumpwatch/launcher.h"
#include "dumpwatch/log.h"
#include "dumpwatch/record.h"
#include "dumpwatch/rulecheck.h"
#include "dumpwatch/rulefile_io.h"
#include "dumpwatch/rules.h"
#include "dumpwatch/status.h"
#include "dumpwatch/trust.h"
#include "dumpwatch/units.h"
#include "dumpwatch/upload.h"
#include "dumpwatch/views.h"
#include "dumpwatch/watch.h"

/* ---- help and the parsers every mode shares ----------------------------- */

/* The exit-status table (exitcodes.h), as --help shows it. */
static void exit_codes_print(FILE *f)
{
	fputs("exit status (every mode):\n", f);
	for (size_t i = 0; i < dw_n_exit_codes; i++)
		fprintf(f, "  %3d %-8s %s\n", dw_exit_codes[i].code, dw_exit_codes[i].name, dw_exit_codes[i].meaning);
}

/* The values --dump-via takes. */
static const struct {
	const char *name;
	enum dump_via via;
} dump_vias[] = {{"runtime", DUMP_VIA_RUNTIME}, {"exec", DUMP_VIA_EXEC}, {"auto", DUMP_VIA_AUTO}};

static const char *dump_via_name(enum dump_via via)
{
	for (size_t i = 0; i < sizeof(dump_vias) / sizeof(dump_vias[0]); i++)
		if (dump_vias[i].via == via)
			return dump_vias[i].name;
	return "?";
}

/* --dump-via: 0, or -EINVAL for a name not in dump_vias. */
static int dump_via_parse(const char *text, enum dump_via *out)
{
	for (size_t i = 0; i < sizeof(dump_vias) / sizeof(dump_vias[0]); i++)
		if (strcmp(text, dump_vias[i].name) == 0) {
			*out = dump_vias[i].via;
			return 0;
		}
	return -EINVAL;
}

/* The help text; every default in it comes from defaults.h. */
static void usage(FILE *f)
{
	char record_duration[32], view_interval[32], cooldown[32], counter_interval[32], dump_timeout[32], min_free[32],
	    stop_timeout[32], rule_cooldown[32], history[32], proc_interval[32], metrics_interval[32];
	char helper[PATH_MAX], why[PATH_MAX + 256];

	units_format_duration(DW_DEFAULT_RECORD_DURATION_NS, record_duration, sizeof(record_duration));
	units_format_duration(DW_DEFAULT_VIEW_INTERVAL_NS, view_interval, sizeof(view_interval));
	units_format_duration(DW_DEFAULT_WATCH_COOLDOWN_NS, cooldown, sizeof(cooldown));
	units_format_duration(DW_DEFAULT_COUNTER_INTERVAL_NS, counter_interval, sizeof(counter_interval));
	units_format_duration(DW_DEFAULT_DUMP_TIMEOUT_NS, dump_timeout, sizeof(dump_timeout));
	units_format(DW_DEFAULT_MIN_FREE_PCT, UNIT_PERCENT, min_free, sizeof(min_free));
	units_format_duration(DW_DEFAULT_STOP_TIMEOUT_NS, stop_timeout, sizeof(stop_timeout));
	units_format_duration(DW_DEFAULT_RULE_COOLDOWN_NS, rule_cooldown, sizeof(rule_cooldown));
	units_format_duration(DW_DEFAULT_HISTORY_NS, history, sizeof(history));
	units_format_duration(DW_DEFAULT_PROC_INTERVAL_NS, proc_interval, sizeof(proc_interval));
	units_format_duration(DW_DEFAULT_METRICS_INTERVAL_NS, metrics_interval, sizeof(metrics_interval));
	fprintf(
	    f,
	    "usage: dumpwatch PID MB                      dump PID when its GC heap passes MB megabytes, then exit\n"
	    "       dumpwatch --pid PID --when EXPR [--when EXPR ...] [options]\n"
	    "       dumpwatch --rules-dir DIR [options]   guard every .NET process the rule files in DIR match\n"
	    "       dumpwatch ps [--json]                 list .NET processes\n"
	    "       dumpwatch record --pid PID --out FILE [--duration %s] [--meters METER[,...]]\n"
	    "       dumpwatch check [--dump-dir DIR] [--allow-dump-dir DIR] PATH...\n"
	    "                                             validate rule files (a directory: its *.json)\n"
	    "       dumpwatch counters --pid PID|--name NAME [--interval %s] [--format table|json] [--counters "
	    "PROVIDER]\n"
	    "                          [--meters METER[,...]]\n"
	    "                                             live GC, allocation, AppDomain and EventCounters figures,\n"
	    "                                             and the instruments of System.Diagnostics.Metrics meters\n"
	    "                                             (\"unknown\", null in JSON, until known after the attach)\n"
	    "       dumpwatch gc --pid PID|--name NAME [--format table|json]\n"
	    "                                             one line per completed GC (index, type, pause, sizes)\n"
	    "         (counters and gc: a table on a terminal, JSON lines otherwise, unless --format says)\n"
	    "         (--name: every process of that name, present and future; --duration D stops after D)\n"
	    "       dumpwatch status [--json] [--state-dir DIR]\n"
	    "                                             what the running guard is doing: processes, rules,\n"
	    "                                             sustain windows, limits used, dumps taken\n"
	    "       dumpwatch show FILE                   why a dump was taken: its context (FILE: NAME.core,\n"
	    "                                             NAME.json or NAME) as text, with sparklines and GCs\n"
	    "       dumpwatch report [-o FILE] DIR        one HTML page of every dump context in DIR, newest\n"
	    "                                             first, with plots (default DIR/index.html)\n"
	    "       dumpwatch metrics                     the metric names a condition may use\n"
	    "       dumpwatch import dotnet-monitor FILE --out DIR [--force]\n"
	    "                                             write a rule file in DIR for each collection rule of\n"
	    "                                             dotnet-monitor settings FILE; say what is not carried\n"
	    "\n"
	    "EXPR is METRIC OP VALUE [for DURATION], e.g. 'loh-size > 200MB', 'loh-alloc-rate > 50MB/s for 2s',\n"
	    "'gc-pause > 500ms', 'private-memory > 2GB', 'System.Runtime/cpu-usage > 90%% for 10s'. All --when\n"
	    "must hold at once. rss, private-memory, swap, threads and fds are polled from /proc.\n"
	    "Exceptions: exception [TYPE] [message 'PATTERN'] [>= N] [in DURATION], e.g.\n"
	    "\"exception TimeoutException* message '*pool*' >= 3 in 1m\" (globs; by default any, 1, 1m).\n"
	    "Meters: meter METER/INSTRUMENT[KEY=GLOB,...] [value|rate|p50|p95|p99|count|sum] OP VALUE [for D],\n"
	    "e.g. 'meter Microsoft.AspNetCore.Hosting/http.server.request.duration p99 > 2s for 30s'.\n"
	    "MB = 1,000,000 bytes, MiB = 1,048,576.\n"
	    "\n"
	    "options:\n"
	    "  -p, --pid PID            the process to watch\n"
	    "  -w, --when EXPR          a condition (repeatable; all must hold)\n"
	    "  -d, --dump-dir DIR       where dumps go (default %s, the current directory)\n"
	    "  -t, --dump-type TYPE     normal | withheap | triage | full (default %s)\n"
	    "      --dump-via HOW       runtime | exec | auto (default %s: the runtime's dump command)\n"
	    "      --createdump PATH    the createdump that --dump-via exec runs (default: the host's runtime\n"
	    "                           of the target's version); implies --dump-via exec\n"
	    "  -n, --max-dumps N        exit after the N-th dump (default %d; 0 = no limit)\n"
	    "  -c, --cooldown DURATION  least time between two dumps (default %s)\n"
	    "  -j, --journal FILE       append a JSON line for every attach, fire, dump and failure\n"
	    "      --counter-interval DURATION  EventCounters interval (default %s; 50ms to 1h)\n"
	    "      --dump-timeout D     kill a createdump still running after D (default %s; 0 = no limit)\n"
	    "      --min-free SIZE|PCT  skip a dump that would leave less free on the dump file system\n"
	    "                           (e.g. 20GB or 10%%; default %s; 0 = no minimum)\n"
	    "      --store-max-size SIZE  at most this much in stored dumps (default no limit)\n"
	    "      --store-max-count N  at most N stored dumps (default no limit)\n"
	    "      --store-full skip|delete-oldest  when a dump would break those (default skip)\n"
	    "      --history DURATION   metric history shown in each dump's context files NAME.json and\n"
	    "                           NAME.svg beside it (default %s; 1s to 1h)\n"
	    "      --proc-interval D    how often rss, private-memory, swap, threads and fds are read from\n"
	    "                           /proc (default %s; 10ms to 1m)\n"
	    "      --all-events         subscribe to every event of the keywords the rules need, not only\n"
	    "                           those dumpwatch reads (.NET 10 filters by event id; for comparison)\n"
	    "      --launcher ID|off    show dumps on the desktop launcher entry ID (default %s; a sudo run\n"
	    "                           shows them to the user who ran sudo)%s\n"
	    "      --on-fire CMD        run CMD when a rule fires, --on-dump CMD when its dump is written:\n"
	    "                           a program (absolute path, root's) and its arguments, no shell;\n"
	    "                           DUMPWATCH_* variables say what happened (rules may set their own)\n"
	    "      --hook-user USER     whom hooks run as (default, as root: a uid of its own for each run;\n"
	    "                           never root or nobody)\n"
	    "      --hook-timeout D     kill a hook, and all it started, still running after D (default 30s)\n"
	    "  -v, --verbose            print metrics as they arrive\n"
	    "\n"
	    "guard options (with --rules-dir; limits and dump type come from the rule files, by default\n"
	    "max-dumps %d, cooldown %s, type %s):\n"
	    "  -r, --rules-dir DIR      the rule files (*.json), watched for changes; SIGHUP reloads\n"
	    "      --state-dir DIR      where limits are kept across restarts (default: beside --journal)\n"
	    "      --allow-dump-dir DIR a rule's dump.dir may also lie inside DIR (repeatable; by default\n"
	    "                           only inside --dump-dir)\n"
	    "      --socket-dir DIR     also watch DIR for new diagnostics sockets (repeatable)\n"
	    "      --stop-timeout D     on SIGTERM, how long a dump in progress may take (default %s)\n"
	    "      --log journald|stderr  priority prefixes for journald (default: when JOURNAL_STREAM is set)\n"
	    "      --upload s3://BUCKET[/PREFIX]  upload every dump and its context files (rules may opt\n"
	    "                           out or set their own prefix); a queue beside the state survives restarts\n"
	    "      --upload-endpoint URL  an S3-compatible server (default https://s3.REGION.amazonaws.com)\n"
	    "      --upload-region R    (default $AWS_REGION, else us-east-1)\n"
	    "      --upload-credentials FILE  KEY=VALUE lines AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY\n"
	    "                           [, AWS_SESSION_TOKEN], root's, mode 0600; a relative name is looked\n"
	    "                           up in $CREDENTIALS_DIRECTORY (default: those variables themselves)\n"
	    "      --upload-part-size SIZE  multipart above this (default 64MiB; 5MiB to 5GiB)\n"
	    "      --upload-keep yes|no keep the local files once uploaded (default yes)\n"
	    "      --upload-path-style  http://HOST/BUCKET/KEY even for amazonaws.com\n"
	    "      --metrics-listen [ADDR:]PORT  serve Prometheus metrics of every guarded process and of\n"
	    "                           dumpwatch at http://ADDR:PORT/metrics (PORT alone: 127.0.0.1;\n"
	    "                           [::1]:PORT for IPv6); see docs/metrics.md\n"
	    "      --metrics-allow LIST only these may read the page: users (local clients, by the uid that\n"
	    "                           owns their socket) and ADDR[/BITS] (by address), comma-separated\n"
	    "      --metrics-file PATH  write the same text to PATH for node_exporter's textfile collector,\n"
	    "                           replaced atomically (its directory writable by no one else)\n"
	    "      --metrics-interval D how often --metrics-file is rewritten (default %s)\n"
	    "  -h, --help, --version\n"
	    "\n",
	    record_duration, view_interval, DW_DEFAULT_DUMP_DIR, rule_dump_type_name(DW_DEFAULT_DUMP_TYPE),
	    dump_via_name(DW_DEFAULT_DUMP_VIA), DW_DEFAULT_MAX_DUMPS, cooldown, counter_interval, dump_timeout,
	    min_free, history, proc_interval, LAUNCHER_DEFAULT_ID,
	    launcher_helper(helper, sizeof(helper), why, sizeof(why)) < 0 ? "; no launcher helper: --version says why"
	                                                                  : "",
	    DW_DEFAULT_MAX_DUMPS, rule_cooldown, rule_dump_type_name(DW_DEFAULT_DUMP_TYPE), stop_timeout,
	    metrics_interval);
	exit_codes_print(f);
}

/* --min-free: a size ("20GB") or a percentage of the file system ("10%"). */
static int store_option_min_free(const char *text, struct store_limits *l)
{
	char err[256];
	double v;

	if (strchr(text, '%')) {
		if (units_parse_value(text, UNIT_PERCENT, &v, err, sizeof(err)) < 0) {
			log_error("--min-free: %s", err);
			return -EINVAL;
		}
		l->min_free_pct = v;
		l->min_free_bytes = 0;
	} else {
		if (units_parse_value(text, UNIT_BYTES, &v, err, sizeof(err)) < 0) {
			log_error("--min-free needs a size (20GB) or a percentage (10%%): %s", err);
			return -EINVAL;
		}
		l->min_free_bytes = (uint64_t)v;
		l->min_free_pct = 0;
	}
	return 0;
}

static int parse_pid(const char *s, pid_t *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v <= 0 || v > INT_MAX)
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

/* The value of --pid: parse_pid, or one line saying what was wrong. */
static int pid_option(const char *s, pid_t *out)
{
	if (parse_pid(s, out) < 0) {
		log_error("--pid needs a process id, not \"%s\"", s);
		return -EINVAL;
	}
	return 0;
}

/* A duration option's value, or one line "NAME: what was wrong". */
static int duration_option(const char *name, const char *arg, int64_t *out)
{
	char err[512];

	if (units_parse_duration(arg, out, err, sizeof(err)) < 0) {
		log_error("%s: %s", name, err);
		return -EINVAL;
	}
	return 0;
}

/* A count option's value (0 for no limit, at most max), or one line. */
static int count_option(const char *name, const char *arg, long max, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(arg, &end, 10);
	if (errno || *end || end == arg || *out < 0 || *out > max) {
		log_error("%s needs a count (0 for no limit), not \"%s\"", name, arg);
		return -EINVAL;
	}
	return 0;
}

/* ---- ps, record, the views, check --------------------------------------- */

static int cmd_ps(int argc, char **argv)
{
	int json = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf("usage: dumpwatch ps [--json]\n"
			       "  lists the .NET processes that can be attached to: pid, user, name, runtime\n"
			       "  version and diagnostics socket, in containers too (--json: one object each)\n");
			return DW_EXIT_OK;
		} else {
			fprintf(stderr, "dumpwatch ps: unknown argument %s\n", argv[i]);
			return DW_EXIT_USAGE;
		}
	}
	int n = discovery_print_ps(stdout, json);
	if (n < 0) {
		log_error("listing processes: %s", strerror(-n));
		return DW_EXIT_RUNTIME;
	}
	return DW_EXIT_OK;
}

/* dumpwatch status: what the running guard is doing (its status socket). */
static int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
	                                     {"state-dir", required_argument, NULL, 's'},
	                                     {"socket", required_argument, NULL, 'S'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {NULL, 0, NULL, 0}};
	char path[PATH_MAX], err[512];
	int json = 0, c, r;

	snprintf(path, sizeof(path), "%s", STATUS_DEFAULT_SOCKET);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 's':
			snprintf(path, sizeof(path), "%s/%s", optarg, STATUS_SOCKET_NAME);
			break;
		case 'S':
			snprintf(path, sizeof(path), "%s", optarg);
			break;
		case 'h':
			printf("usage: dumpwatch status [--json] [--state-dir DIR | --socket PATH]\n"
			       "  what the running guard is doing: each process it guards, its rules, how far\n"
			       "  each condition's sustain window has run, the limits used and the dumps taken\n"
			       "  (default socket %s: the guard's --state-dir, beside its --journal)\n",
			       STATUS_DEFAULT_SOCKET);
			return DW_EXIT_OK;
		default:
			return DW_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "dumpwatch status: unknown argument %s\n", argv[optind]);
		return DW_EXIT_USAGE;
	}
	r = status_run(path, json, stdout, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		return r == -ENOENT || r == -ECONNREFUSED || r == -ENODATA ? DW_EXIT_TARGET : DW_EXIT_RUNTIME;
	}
	return DW_EXIT_OK;
}

static int cmd_record(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"pid", required_argument, NULL, 'p'},      {"out", required_argument, NULL, 'o'},
	    {"duration", required_argument, NULL, 'D'}, {"meters", required_argument, NULL, 'm'},
	    {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0}};
	pid_t pid = 0;
	const char *out = NULL, *meters = NULL;
	int64_t duration = DW_DEFAULT_RECORD_DURATION_NS;
	char err[512];
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:o:D:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			printf("usage: dumpwatch record --pid PID --out FILE [--duration D] [--meters METER[,...]]\n"
			       "  writes the event stream of PID to FILE (nettrace): GC events, allocation ticks,\n"
			       "  exceptions and System.Runtime's counters, and the instruments of the meters\n"
			       "  named, for --duration (default 5s)\n");
			return DW_EXIT_OK;
		case 'm':
			meters = optarg;
			break;
		case 'p':
			if (pid_option(optarg, &pid) < 0)
				return DW_EXIT_USAGE;
			break;
		case 'o':
			out = optarg;
			break;
		case 'D':
			if (duration_option("--duration", optarg, &duration) < 0)
				return DW_EXIT_USAGE;
			break;
		default:
			return DW_EXIT_USAGE;
		}
	}
	if (!pid || !out) {
		log_error("record needs --pid PID and --out FILE");
		return DW_EXIT_USAGE;
	}
	if (record_run(pid, out, duration, NEED_GC | NEED_ALLOC_TICKS | NEED_COUNTERS | NEED_EXCEPTIONS, meters, err,
	               sizeof(err)) < 0) {
		log_error("%s", err);
		return DW_EXIT_TARGET;
	}
	return DW_EXIT_OK;
}

/* dumpwatch counters|gc --pid PID|--name GLOB [--interval D] [--format table|json]
 * [--duration D] [--counters PROVIDER]... [--meters METER[,...]]... */
static int cmd_view(enum view_kind kind, int argc, char **argv)
{
	static const struct option opts[] = {{"pid", required_argument, NULL, 'p'},
	                                     {"name", required_argument, NULL, 'n'},
	                                     {"interval", required_argument, NULL, 'i'},
	                                     {"format", required_argument, NULL, 'f'},
	                                     {"duration", required_argument, NULL, 'D'},
	                                     {"counters", required_argument, NULL, 'c'},
	                                     {"meters", required_argument, NULL, 'm'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {NULL, 0, NULL, 0}};
	const char *cmd = kind == VIEW_GC ? "gc" : "counters";
	struct view_options o;
	char err[512];
	int c, format_given = 0;

	memset(&o, 0, sizeof(o));
	o.kind = kind;
	o.interval_ns = DW_DEFAULT_VIEW_INTERVAL_NS;
	o.json = !isatty(STDOUT_FILENO);
	optind = 1;
	while ((c = getopt_long(argc, argv, "p:n:i:f:D:c:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			if (kind == VIEW_GC)
				printf(
				    "usage: dumpwatch gc --pid PID|--name NAME [--format table|json] [--duration D]\n"
				    "  one line per completed GC: index, generation, type, reason, pause, sizes\n"
				    "  (--name: every process of that name, present and future)\n");
			else
				printf(
				    "usage: dumpwatch counters --pid PID|--name NAME [--interval 1s] [--format "
				    "table|json]\n"
				    "                          [--counters PROVIDER] [--meters METER[,...]] "
				    "[--duration D]\n"
				    "  live GC, allocation, AppDomain and EventCounters figures, and the instruments "
				    "of\n"
				    "  System.Diagnostics.Metrics meters (\"unknown\", null in JSON, until known)\n");
			return DW_EXIT_OK;
		case 'p':
			if (pid_option(optarg, &o.pid) < 0)
				return DW_EXIT_USAGE;
			break;
		case 'n':
			o.name_glob = optarg;
			break;
		case 'i':
			if (units_parse_duration(optarg, &o.interval_ns, err, sizeof(err)) < 0 ||
			    o.interval_ns < DW_NS_PER_SEC || o.interval_ns % DW_NS_PER_SEC) {
				log_error("--interval: whole seconds, at least 1s (EventCounters report in seconds), "
				          "not \"%s\"",
				          optarg);
				return DW_EXIT_USAGE;
			}
			break;
		case 'f':
			if (strcmp(optarg, "json") && strcmp(optarg, "table") && strcmp(optarg, "text")) {
				log_error("--format: table or json, not \"%s\"", optarg);
				return DW_EXIT_USAGE;
			}
			o.json = strcmp(optarg, "json") == 0;
			format_given = 1;
			break;
		case 'D':
			if (duration_option("--duration", optarg, &o.duration_ns) < 0)
				return DW_EXIT_USAGE;
			break;
		case 'c':
			if (o.n_providers == sizeof(o.providers) / sizeof(o.providers[0])) {
				log_error("at most %zu --counters providers",
				          sizeof(o.providers) / sizeof(o.providers[0]));
				return DW_EXIT_USAGE;
			}
			o.providers[o.n_providers++] = optarg;
			break;
		case 'm':
			if (session_subscription_add_meters(&o.meters, optarg, 0, err, sizeof(err)) < 0) {
				log_error("%s, not \"%s\"", err, optarg);
				return DW_EXIT_USAGE;
			}
			break;
		default:
			return DW_EXIT_USAGE;
		}
	}
	(void)format_given;
	if (optind < argc || !o.pid == !o.name_glob) {
		log_error("%s needs --pid PID or --name NAME (a glob on the process name), not both", cmd);
		return DW_EXIT_USAGE;
	}
	if (kind == VIEW_GC && (o.n_providers || o.meters.n_meters)) {
		log_error("--counters and --meters are for dumpwatch counters");
		return DW_EXIT_USAGE;
	}
	return view_run(&o);
}

/* A directory given to check's --dump-dir/--allow-dump-dir: its real path
 * when it exists here, else the path made absolute and normalized (the rules
 * may be checked on another machine than the daemon's). 0 or -errno. */
static int check_dump_dir(const char *dir, char *out, size_t outlen)
{
	char cwd[PATH_MAX], abs[PATH_MAX];

	if (realpath(dir, out))
		return 0;
	if (dir[0] == '/')
		snprintf(abs, sizeof(abs), "%s", dir);
	else if (!getcwd(cwd, sizeof(cwd)) || (size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, dir) >= sizeof(abs))
		return -ENAMETOOLONG;
	return trust_path_normalize(abs, out, outlen);
}

static int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {{"dump-dir", required_argument, NULL, 'd'},
	                                     {"allow-dump-dir", required_argument, NULL, 'a'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {NULL, 0, NULL, 0}};
	static char dirs_buf[1 + GUARD_ALLOW_DUMP_DIRS_MAX][PATH_MAX];
	const char *dirs[1 + GUARD_ALLOW_DUMP_DIRS_MAX];
	size_t n_dirs = 0;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
		case 'a':
			if (n_dirs == sizeof(dirs) / sizeof(dirs[0])) {
				fprintf(stderr, "dumpwatch check: at most %zu dump directories\n", n_dirs);
				return DW_EXIT_USAGE;
			}
			if (check_dump_dir(optarg, dirs_buf[n_dirs], sizeof(dirs_buf[n_dirs])) < 0) {
				fprintf(stderr, "dumpwatch check: %s: not an absolute directory without \"..\"\n",
				        optarg);
				return DW_EXIT_USAGE;
			}
			dirs[n_dirs] = dirs_buf[n_dirs];
			n_dirs++;
			break;
		case 'h':
			fputs("usage: dumpwatch check [--dump-dir DIR] [--allow-dump-dir DIR]... PATH...\n"
			      "Validates rule files as the daemon would; a directory stands for every *.json directly\n"
			      "in it. Each file, the links to it and the directories above them must be root's or\n"
			      "yours and writable by no one else. A rule's dump.dir must lie inside one of the\n"
			      "directories given (as on the daemon's command line; default: the service's\n"
			      "--dump-dir " DW_SERVICE_DUMP_DIR ").\n"
			      "\n",
			      stdout);
			exit_codes_print(stdout);
			return DW_EXIT_OK;
		default:
			return DW_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fputs("usage: dumpwatch check [--dump-dir DIR] [--allow-dump-dir DIR]... PATH...\n", stderr);
		return DW_EXIT_USAGE;
	}
	if (n_dirs == 0)
		dirs[n_dirs++] = DW_SERVICE_DUMP_DIR;
	return rulefile_check_paths(argv + optind, (size_t)(argc - optind), dirs, n_dirs, stdout, stderr);
}

/* ---- the dump contexts: show, report ------------------------------------ */

/* The exit status for a dump context that could not be read or written: the
 * path (no such file, not allowed, not a regular file) is a target error,
 * a file that is not a context of this version a usage error. */
static int context_exit(int r)
{
	switch (r) {
	case -EBADMSG:
	case -ENOMSG:
	case -EFBIG:
	case -EPROTONOSUPPORT:
	case -ENAMETOOLONG:
		return DW_EXIT_USAGE;
	case -ENOMEM:
	case -EIO:
	case -ENOSPC:
	case -EDQUOT:
		return DW_EXIT_RUNTIME;
	default:
		return DW_EXIT_TARGET;
	}
}

static int cmd_show(int argc, char **argv)
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	char err[PATH_MAX * 2 + 512];
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			printf("usage: dumpwatch show FILE\n"
			       "  prints the context dumpwatch wrote beside a dump: the outcome and the rule that\n"
			       "  fired, each condition with its value at the fire, when (UTC and local), the dump,\n"
			       "  the process, a sparkline of each condition's metric over the history (^ under the\n"
			       "  columns where the condition held) and the last %d GCs. FILE is NAME.core, NAME.json\n"
			       "  or NAME: the context read is NAME.json, at most %u MiB (a larger file is refused\n"
			       "  unread). Exit 2 when it cannot be read, 1 when it is not a dump context this\n"
			       "  version reads or is too large.\n"
			       "\n",
			       CONTEXT_SHOW_GCS, CONTEXT_FILE_MAX >> 20);
			exit_codes_print(stdout);
			return DW_EXIT_OK;
		default:
			return DW_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fputs("usage: dumpwatch show FILE\n", stderr);
		return DW_EXIT_USAGE;
	}
	r = context_show_file(argv[optind], stdout, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "dumpwatch: %s\n", err); /* err is escaped */
		return context_exit(r);
	}
	return DW_EXIT_OK;
}

static int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	const char *out = NULL;
	char err[PATH_MAX * 2 + 512];
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			printf("usage: dumpwatch report [-o FILE] DIR\n"
			       "  writes one self-contained HTML page (no script, nothing fetched) of every dump\n"
			       "  context (*.json) in DIR, newest first: rule, outcome, process, time, size, the\n"
			       "  conditions with their values, links to NAME.json and the dump, and the plot.\n"
			       "  Other JSON files are skipped; a broken context is warned about and skipped. The\n"
			       "  page replaces DIR/index.html (or -o FILE) atomically. DIR is opened once and\n"
			       "  must not be a symbolic link: every context is read and the page written through\n"
			       "  it, and the summary names it by its real path. Bounded: a context of more than\n"
			       "  %u MiB is refused unread; the newest files (by modification time) are read, at\n"
			       "  most %d and %u MiB of them, and cards are kept while the page holds at most\n"
			       "  %u MiB; what is left out is named in one warning line.\n"
			       "  Exit 2 when DIR cannot be listed or the page cannot be created.\n"
			       "\n",
			       CONTEXT_FILE_MAX >> 20, CONTEXT_REPORT_MAX, CONTEXT_READ_MAX >> 20,
			       CONTEXT_PAGE_MAX >> 20);
			exit_codes_print(stdout);
			return DW_EXIT_OK;
		default:
			return DW_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fputs("usage: dumpwatch report [-o FILE] DIR\n", stderr);
		return DW_EXIT_USAGE;
	}
	r = context_report(argv[optind], out, NULL, stdout, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "dumpwatch: %s\n", err); /* err is escaped */
		return context_exit(r);
	}
	return DW_EXIT_OK;
}

/* ---- import ------------------------------------------------------------- */

#define IMPORT_USAGE "usage: dumpwatch import dotnet-monitor FILE --out DIR [--force]\n"

/* Writes text to dir/name.json (fds_write_file: whole or not at all, mode
 * 0644); without force an existing file is kept and -EEXIST returned. 0 or
 * -errno. */
static int import_write(const char *dir, const char *name, const char *text, int force)
{
	char file[NAME_MAX + 1];
	int dfd, r;

	if ((size_t)snprintf(file, sizeof(file), "%s.json", name) >= sizeof(file))
		return -ENAMETOOLONG;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	r = fds_write_file(dfd, file, text, strlen(text), 0644, !force);
	close(dfd);
	return r;
}

static int cmd_import(int argc, char **argv)
{
	static const struct option opts[] = {{"out", required_argument, NULL, 'o'},
	                                     {"force", no_argument, NULL, 'f'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {NULL, 0, NULL, 0}};
	struct dmimport_result res;
	const char *out = NULL, *file;
	char err[PATH_MAX + 512], path[PATH_MAX];
	char *text = NULL;
	size_t len, n_exist = 0, n_written = 0, n_failed = 0;
	struct stat st;
	int c, force = 0, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:fh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'f':
			force = 1;
			break;
		case 'h':
			printf(
			    IMPORT_USAGE
			    "  reads dotnet-monitor settings (JSON with \"CollectionRules\", or a ConfigMap's\n"
			    "  CollectionRules__NAME__... keys; at most 1 MiB and %d rules) and writes DIR/NAME.json\n"
			    "  for each collection rule with a CollectDump action: filters to process.name,\n"
			    "  process.cmdline and process.pid, EventCounter, EventMeter and the CPUUsage,\n"
			    "  GCHeapSize and ThreadpoolQueueLength shortcuts to conditions, the dump type, and\n"
			    "  Limits to max-dumps and window (cooldown: the trigger's window). Every written file\n"
			    "  passes `dumpwatch check`. Each part not carried over is one line on standard output,\n"
			    "  \"FILE: rule NAME: WHAT\", then a summary. Files are written whole (mode 0644) or not\n"
			    "  at all; an existing one is kept, and nothing written, unless --force replaces it.\n"
			    "  --out DIR   where the rule files go (made when missing; its parent must exist)\n"
			    "  --force     replace rule files of the same names in DIR\n"
			    "  Exit 0 when at least one rule was written and every file could be; 1 on a bad\n"
			    "  command line, settings that are not JSON or hold no importable rule, or a file\n"
			    "  that exists; 2 when FILE cannot be read or DIR not written.\n"
			    "\n",
			    DMIMPORT_RULES_MAX);
			exit_codes_print(stdout);
			return DW_EXIT_OK;
		default:
			return DW_EXIT_USAGE;
		}
	}
	if (argc - optind != 2 || strcmp(argv[optind], "dotnet-monitor") != 0 || !out) {
		fputs(IMPORT_USAGE, stderr);
		return DW_EXIT_USAGE;
	}
	file = argv[optind + 1];
	/* DIR is made when missing (its parent must exist); a path that is
	 * something else is refused. */
	if (stat(out, &st) < 0 && errno == ENOENT && mkdir(out, 0755) < 0) {
		fprintf(stderr, "dumpwatch import: cannot create %s: %s\n", out, strerror(errno));
		return DW_EXIT_TARGET;
	}
	if (stat(out, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "dumpwatch import: %s: %s\n", out,
		        errno == ENOENT ? strerror(errno) : "not a directory");
		return DW_EXIT_TARGET;
	}
	if (rulefile_read(file, &text, &len, err, sizeof(err)) < 0) {
		fprintf(stderr, "dumpwatch import: %s\n", err);
		return DW_EXIT_TARGET;
	}
	r = dmimport_convert(text, len, file, &res, err, sizeof(err));
	free(text);
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", file, err);
		return r == -ENOMEM ? DW_EXIT_RUNTIME : DW_EXIT_USAGE;
	}
	for (size_t i = 0; i < res.n_notes; i++) {
		if (res.notes[i].rule[0])
			printf("%s: rule %s: %s\n", file, res.notes[i].rule, res.notes[i].text);
		else
			printf("%s: %s\n", file, res.notes[i].text);
	}
	/* All or nothing against what is there: a partial import that left some
	 * old rules beside new ones would be hard to see. */
	for (size_t i = 0; !force && i < res.n_rules; i++) {
		snprintf(path, sizeof(path), "%s/%s.json", out, res.rules[i].name);
		if (lstat(path, &st) == 0) {
			fprintf(stderr, "dumpwatch import: %s exists: nothing written (--force replaces it)\n", path);
			n_exist++;
		}
	}
	for (size_t i = 0; n_exist == 0 && i < res.n_rules; i++) {
		r = import_write(out, res.rules[i].name, res.rules[i].text, force);
		if (r < 0) {
			fprintf(stderr, "dumpwatch import: %s/%s.json: %s\n", out, res.rules[i].name, strerror(-r));
			n_failed++;
		} else {
			n_written++;
		}
	}
	printf("%s: %zu of %zu collection rules written to %s, %zu notes\n", file, n_written, res.n_source_rules, out,
	       res.n_notes);
	r = n_failed ? DW_EXIT_TARGET : n_exist || res.n_rules == 0 ? DW_EXIT_USAGE : DW_EXIT_OK;
	dmimport_result_free(&res);
	return r;
}

/* ---- the watch and the guard ------------------------------------------ */

/* What the command line of the one-process watch and of the guard says: the
 * two share one option set, and --rules-dir picks the guard. */
struct cli {
	struct rule rule; /* --when conditions, --dump-type */
	long max_dumps;
	int64_t cooldown_ns;
	int limits_given; /* --dump-type, --max-dumps or --cooldown was given */
	pid_t pid;
	const char *dump_dir, *journal, *createdump, *rules_dir, *state_dir;
	const char *launcher; /* --launcher; NULL: not given */
	enum dump_via via;
	int verbose;
	int all_events; /* --all-events */
	int64_t counter_interval_ns, stop_timeout_ns, dump_timeout_ns, history_ns, proc_interval_ns;
	struct store_limits store;
	const char *socket_dirs[GUARD_SOCKET_DIRS_MAX];
	size_t n_socket_dirs;
	const char *allow_dump_dirs[GUARD_ALLOW_DUMP_DIRS_MAX];
	size_t n_allow_dump_dirs;
	const char *metrics_listen, *metrics_file; /* --metrics-listen, --metrics-file */
	const char *metrics_allow;                 /* --metrics-allow */
	int64_t metrics_interval_ns;
	char **operands; /* PID MB */
	int n_operands;
	struct hook_cmd on_fire, on_dump; /* argc 0: not given */
	const char *hook_user;
	int64_t hook_timeout_ns;
	struct upload_options upload; /* bucket "": no --upload */
	const char *upload_credentials;
};

/* cli_parse's "no exit status yet: go on". */
#define CLI_GO_ON (-1)

enum {
	OPT_VERSION = 256,
	OPT_VIA,
	OPT_INTERVAL,
	OPT_STATE_DIR,
	OPT_SOCKET_DIR,
	OPT_STOP_TIMEOUT,
	OPT_LOG,
	OPT_DUMP_TIMEOUT,
	OPT_MIN_FREE,
	OPT_STORE_MAX_SIZE,
	OPT_STORE_MAX_COUNT,
	OPT_STORE_FULL,
	OPT_HISTORY,
	OPT_PROC_INTERVAL,
	OPT_ALL_EVENTS,
	OPT_CREATEDUMP,
	OPT_ALLOW_DUMP_DIR,
	OPT_LAUNCHER,
	OPT_ON_FIRE,
	OPT_ON_DUMP,
	OPT_HOOK_USER,
	OPT_HOOK_TIMEOUT,
	OPT_UPLOAD,
	OPT_UPLOAD_ENDPOINT,
	OPT_UPLOAD_REGION,
	OPT_UPLOAD_CREDENTIALS,
	OPT_UPLOAD_PART_SIZE,
	OPT_UPLOAD_KEEP,
	OPT_UPLOAD_PATH_STYLE,
	OPT_METRICS_LISTEN,
	OPT_METRICS_ALLOW,
	OPT_METRICS_FILE,
	OPT_METRICS_INTERVAL,
};

/* --on-fire, --on-dump: split, and the program checked now as createdump is,
 * so that a file root must not run is a usage error at start. */
static int hook_option(const char *name, const char *arg, struct hook_cmd *cmd)
{
	char err[512], real[PATH_MAX];

	if (hook_cmd_parse(arg, cmd, err, sizeof(err)) < 0 ||
	    trust_exec_path(hook_cmd_arg(cmd, 0), "hook", real, sizeof(real), err, sizeof(err)) < 0) {
		log_error("%s: %s", name, err);
		return -EINVAL;
	}
	return 0;
}

/* --createdump: checked now, so that a file root must not run is a usage
 * error at start, not a failed dump at 3 a.m. */
static int createdump_option(const char *arg)
{
	char resolved[PATH_MAX], err[512];

	if (dump_find_createdump(NULL, arg, resolved, sizeof(resolved), err, sizeof(err)) < 0) {
		log_error("--createdump: %s", err);
		return -EINVAL;
	}
	return 0;
}

/* One option of the watch and the guard into c: 0, or -EINVAL after saying
 * what was wrong. */
static int cli_option(struct cli *c, int opt, const char *arg)
{
	char err[512];
	double v;
	long n;

	switch (opt) {
	case 'p':
		return pid_option(arg, &c->pid);
	case 'w':
		if (c->rule.n_conds == RULE_MAX_CONDS) {
			log_error("at most %d --when conditions", RULE_MAX_CONDS);
			return -EINVAL;
		}
		if (rule_cond_parse(arg, &c->rule.conds[c->rule.n_conds], err, sizeof(err)) < 0) {
			log_error("--when '%s': %s", arg, err);
			return -EINVAL;
		}
		c->rule.n_conds++;
		return 0;
	case 'd':
		c->dump_dir = arg;
		return 0;
	case 't':
		c->limits_given = 1;
		if (rule_dump_type_parse(arg, &c->rule.dump_type) < 0) {
			log_error("--dump-type must be normal, withheap, triage or full, not \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_VIA:
		if (dump_via_parse(arg, &c->via) < 0) {
			log_error("--dump-via must be runtime, exec or auto, not \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_CREATEDUMP:
		if (createdump_option(arg) < 0)
			return -EINVAL;
		c->createdump = arg;
		return 0;
	case OPT_LAUNCHER:
		/* A desktop file id: a plain file name, as docks look them up. */
		if (strcmp(arg, "off") != 0 && !launcher_desktop_id_ok(arg)) {
			log_error("--launcher takes a desktop file id such as dumpwatch.desktop, or off; not \"%s\"",
			          arg);
			return -EINVAL;
		}
		c->launcher = arg;
		return 0;
	case 'n':
		c->limits_given = 1;
		return count_option("--max-dumps", arg, 100000, &c->max_dumps);
	case 'c':
		c->limits_given = 1;
		return duration_option("--cooldown", arg, &c->cooldown_ns);
	case OPT_INTERVAL:
		if (units_parse_duration(arg, &c->counter_interval_ns, err, sizeof(err)) < 0 ||
		    c->counter_interval_ns < DW_COUNTER_INTERVAL_MIN_NS ||
		    c->counter_interval_ns > 3600 * DW_NS_PER_SEC || c->counter_interval_ns % 1000000 != 0) {
			log_error("--counter-interval takes a duration in milliseconds from 50ms to 1h, such as 1s; "
			          "not \"%s\"",
			          arg);
			return -EINVAL;
		}
		return 0;
	case 'j':
		c->journal = arg;
		return 0;
	case 'r':
		c->rules_dir = arg;
		return 0;
	case OPT_STATE_DIR:
		c->state_dir = arg;
		return 0;
	case OPT_SOCKET_DIR:
		if (c->n_socket_dirs == GUARD_SOCKET_DIRS_MAX) {
			log_error("at most %d --socket-dir", GUARD_SOCKET_DIRS_MAX);
			return -EINVAL;
		}
		c->socket_dirs[c->n_socket_dirs++] = arg;
		return 0;
	case OPT_ALLOW_DUMP_DIR:
		if (c->n_allow_dump_dirs == GUARD_ALLOW_DUMP_DIRS_MAX) {
			log_error("at most %d --allow-dump-dir", GUARD_ALLOW_DUMP_DIRS_MAX);
			return -EINVAL;
		}
		c->allow_dump_dirs[c->n_allow_dump_dirs++] = arg;
		return 0;
	case OPT_STOP_TIMEOUT:
		return duration_option("--stop-timeout", arg, &c->stop_timeout_ns);
	case OPT_DUMP_TIMEOUT:
		return duration_option("--dump-timeout", arg, &c->dump_timeout_ns);
	case OPT_ON_FIRE:
		return hook_option("--on-fire", arg, &c->on_fire);
	case OPT_ON_DUMP:
		return hook_option("--on-dump", arg, &c->on_dump);
	case OPT_HOOK_USER:
		c->hook_user = arg;
		return 0;
	case OPT_UPLOAD:
		if (upload_parse_url(arg, &c->upload, err, sizeof(err)) < 0) {
			log_error("%s", err);
			return -EINVAL;
		}
		return 0;
	case OPT_UPLOAD_ENDPOINT:
		if (snprintf(c->upload.endpoint, sizeof(c->upload.endpoint), "%s", arg) >=
		    (int)sizeof(c->upload.endpoint)) {
			log_error("--upload-endpoint: too long");
			return -EINVAL;
		}
		return 0;
	case OPT_UPLOAD_REGION:
		snprintf(c->upload.region, sizeof(c->upload.region), "%s", arg);
		return 0;
	case OPT_UPLOAD_CREDENTIALS:
		c->upload_credentials = arg;
		return 0;
	case OPT_UPLOAD_PART_SIZE:
		if (units_parse_value(arg, UNIT_BYTES, &v, err, sizeof(err)) < 0 || v < (double)S3_PART_MIN ||
		    v > (double)S3_PART_MAX) {
			log_error("--upload-part-size must be a size from 5MiB to 5GiB");
			return -EINVAL;
		}
		c->upload.part_size = (uint64_t)v;
		return 0;
	case OPT_UPLOAD_KEEP:
		if (strcmp(arg, "yes") != 0 && strcmp(arg, "no") != 0) {
			log_error("--upload-keep must be yes or no, not \"%s\"", arg);
			return -EINVAL;
		}
		c->upload.keep_local = strcmp(arg, "yes") == 0;
		return 0;
	case OPT_UPLOAD_PATH_STYLE:
		c->upload.addressing = S3_ADDRESSING_PATH;
		return 0;
	case OPT_HOOK_TIMEOUT:
		if (duration_option("--hook-timeout", arg, &c->hook_timeout_ns) < 0)
			return -EINVAL;
		if (c->hook_timeout_ns < DW_NS_PER_SEC || c->hook_timeout_ns > 24 * 3600 * DW_NS_PER_SEC) {
			log_error("--hook-timeout must be from 1s to 24h");
			return -EINVAL;
		}
		return 0;
	case OPT_MIN_FREE:
		return store_option_min_free(arg, &c->store);
	case OPT_STORE_MAX_SIZE:
		if (units_parse_value(arg, UNIT_BYTES, &v, err, sizeof(err)) < 0) {
			log_error("--store-max-size: %s", err);
			return -EINVAL;
		}
		c->store.max_bytes = (uint64_t)v;
		return 0;
	case OPT_STORE_MAX_COUNT:
		if (count_option("--store-max-count", arg, 1000000, &n) < 0)
			return -EINVAL;
		c->store.max_count = (uint32_t)n;
		return 0;
	case OPT_HISTORY:
		if (units_parse_duration(arg, &c->history_ns, err, sizeof(err)) < 0 || c->history_ns < DW_NS_PER_SEC ||
		    c->history_ns > DW_HISTORY_MAX_NS) {
			log_error("--history takes a duration from 1s to 1h, such as 5m; not \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_ALL_EVENTS:
		c->all_events = 1;
		return 0;
	case OPT_PROC_INTERVAL:
		if (units_parse_duration(arg, &c->proc_interval_ns, err, sizeof(err)) < 0 ||
		    c->proc_interval_ns < DW_PROC_INTERVAL_MIN_NS || c->proc_interval_ns > DW_PROC_INTERVAL_MAX_NS) {
			log_error("--proc-interval takes a duration from 10ms to 1m, such as 100ms; not \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_STORE_FULL:
		if (strcmp(arg, "skip") == 0)
			c->store.delete_oldest = 0;
		else if (strcmp(arg, "delete-oldest") == 0)
			c->store.delete_oldest = 1;
		else {
			log_error("--store-full must be skip or delete-oldest, not \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_LOG:
		if (strcmp(arg, "journald") == 0)
			log_set_journald(1);
		else if (strcmp(arg, "stderr") == 0)
			log_set_journald(0);
		else {
			log_error("--log must be journald or stderr, not \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_METRICS_LISTEN:
		c->metrics_listen = arg;
		return 0;
	case OPT_METRICS_ALLOW:
		c->metrics_allow = arg;
		return 0;
	case OPT_METRICS_FILE:
		if (arg[0] != '/') {
			log_error("--metrics-file takes an absolute path, not \"%s\"", arg);
			return -EINVAL;
		}
		c->metrics_file = arg;
		return 0;
	case OPT_METRICS_INTERVAL:
		if (units_parse_duration(arg, &c->metrics_interval_ns, err, sizeof(err)) < 0 ||
		    c->metrics_interval_ns < DW_METRICS_INTERVAL_MIN_NS ||
		    c->metrics_interval_ns > DW_METRICS_INTERVAL_MAX_NS) {
			log_error("--metrics-interval takes a duration from 1s to 1h, such as 15s; not \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case 'v':
		c->verbose = 1;
		return 0;
	default:
		return -EINVAL;
	}
}

/* Parses the command line of the watch and the guard into c (defaults
 * first). Returns CLI_GO_ON, or the exit status when there is nothing more
 * to do (--help, --version, a bad option). */
static int cli_parse(int argc, char **argv, struct cli *c)
{
	static const struct option opts[] = {{"pid", required_argument, NULL, 'p'},
	                                     {"when", required_argument, NULL, 'w'},
	                                     {"dump-dir", required_argument, NULL, 'd'},
	                                     {"dump-type", required_argument, NULL, 't'},
	                                     {"dump-via", required_argument, NULL, OPT_VIA},
	                                     {"createdump", required_argument, NULL, OPT_CREATEDUMP},
	                                     {"launcher", required_argument, NULL, OPT_LAUNCHER},
	                                     {"max-dumps", required_argument, NULL, 'n'},
	                                     {"cooldown", required_argument, NULL, 'c'},
	                                     {"journal", required_argument, NULL, 'j'},
	                                     {"counter-interval", required_argument, NULL, OPT_INTERVAL},
	                                     {"verbose", no_argument, NULL, 'v'},
	                                     {"rules-dir", required_argument, NULL, 'r'},
	                                     {"state-dir", required_argument, NULL, OPT_STATE_DIR},
	                                     {"socket-dir", required_argument, NULL, OPT_SOCKET_DIR},
	                                     {"stop-timeout", required_argument, NULL, OPT_STOP_TIMEOUT},
	                                     {"log", required_argument, NULL, OPT_LOG},
	                                     {"dump-timeout", required_argument, NULL, OPT_DUMP_TIMEOUT},
	                                     {"min-free", required_argument, NULL, OPT_MIN_FREE},
	                                     {"store-max-size", required_argument, NULL, OPT_STORE_MAX_SIZE},
	                                     {"store-max-count", required_argument, NULL, OPT_STORE_MAX_COUNT},
	                                     {"store-full", required_argument, NULL, OPT_STORE_FULL},
	                                     {"history", required_argument, NULL, OPT_HISTORY},
	                                     {"proc-interval", required_argument, NULL, OPT_PROC_INTERVAL},
	                                     {"all-events", no_argument, NULL, OPT_ALL_EVENTS},
	                                     {"allow-dump-dir", required_argument, NULL, OPT_ALLOW_DUMP_DIR},
	                                     {"on-fire", required_argument, NULL, OPT_ON_FIRE},
	                                     {"on-dump", required_argument, NULL, OPT_ON_DUMP},
	                                     {"hook-user", required_argument, NULL, OPT_HOOK_USER},
	                                     {"hook-timeout", required_argument, NULL, OPT_HOOK_TIMEOUT},
	                                     {"upload", required_argument, NULL, OPT_UPLOAD},
	                                     {"upload-endpoint", required_argument, NULL, OPT_UPLOAD_ENDPOINT},
	                                     {"upload-region", required_argument, NULL, OPT_UPLOAD_REGION},
	                                     {"upload-credentials", required_argument, NULL, OPT_UPLOAD_CREDENTIALS},
	                                     {"upload-part-size", required_argument, NULL, OPT_UPLOAD_PART_SIZE},
	                                     {"upload-keep", required_argument, NULL, OPT_UPLOAD_KEEP},
	                                     {"upload-path-style", no_argument, NULL, OPT_UPLOAD_PATH_STYLE},
	                                     {"metrics-listen", required_argument, NULL, OPT_METRICS_LISTEN},
	                                     {"metrics-allow", required_argument, NULL, OPT_METRICS_ALLOW},
	                                     {"metrics-file", required_argument, NULL, OPT_METRICS_FILE},
	                                     {"metrics-interval", required_argument, NULL, OPT_METRICS_INTERVAL},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, OPT_VERSION},
	                                     {NULL, 0, NULL, 0}};
	char helper[PATH_MAX], why[PATH_MAX + 256];
	int opt;

	memset(c, 0, sizeof(*c));
	c->rule.dump_type = DW_DEFAULT_DUMP_TYPE;
	c->max_dumps = DW_DEFAULT_MAX_DUMPS;
	c->cooldown_ns = DW_DEFAULT_WATCH_COOLDOWN_NS;
	c->history_ns = DW_DEFAULT_HISTORY_NS;
	c->proc_interval_ns = DW_DEFAULT_PROC_INTERVAL_NS;
	c->metrics_interval_ns = DW_DEFAULT_METRICS_INTERVAL_NS;
	c->dump_dir = DW_DEFAULT_DUMP_DIR;
	c->via = DW_DEFAULT_DUMP_VIA;
	c->counter_interval_ns = DW_DEFAULT_COUNTER_INTERVAL_NS;
	c->stop_timeout_ns = DW_DEFAULT_STOP_TIMEOUT_NS;
	c->dump_timeout_ns = DW_DEFAULT_DUMP_TIMEOUT_NS;
	c->store.min_free_pct = DW_DEFAULT_MIN_FREE_PCT;
	c->upload.keep_local = 1;
	while ((opt = getopt_long(argc, argv, "p:w:d:t:n:c:j:r:vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			usage(stdout);
			return DW_EXIT_OK;
		case OPT_VERSION:
			printf("dumpwatch %s\n", DW_VERSION);
			if (launcher_helper(helper, sizeof(helper), why, sizeof(why)) == 0)
				printf("desktop launcher entry: %s at %s\n", LAUNCHER_HELPER, helper);
			else
				printf("desktop launcher entry: none: %s\n", why);
			return DW_EXIT_OK;
		case '?':
			usage(stderr);
			return DW_EXIT_USAGE;
		default:
			if (cli_option(c, opt, optarg) < 0)
				return DW_EXIT_USAGE;
		}
	}
	if (c->createdump) {
		if (c->via == DUMP_VIA_RUNTIME) {
			log_error("--createdump is what --dump-via exec runs; it cannot go with --dump-via runtime");
			return DW_EXIT_USAGE;
		}
		c->via = DUMP_VIA_EXEC;
	}
	c->operands = argv + optind;
	c->n_operands = argc - optind;
	return CLI_GO_ON;
}

/* The state directory of the guard: --state-dir, else the journal's
 * directory, else none (out = ""). */
static void guard_state_dir(const struct cli *c, char *out, size_t outlen)
{
	out[0] = '\0';
	if (c->state_dir) {
		snprintf(out, outlen, "%s", c->state_dir);
	} else if (c->journal) {
		const char *slash = strrchr(c->journal, '/');
		if (!slash)
			snprintf(out, outlen, ".");
		else
			snprintf(out, outlen, "%.*s", (int)(slash == c->journal ? 1 : slash - c->journal), c->journal);
	} else {
		log_warn("no --journal or --state-dir: dump limits will not survive a restart");
	}
}

/* What both the watch and the guard hand every target: dumps (to dump_dir,
 * absolute, for rules without their own), subscriptions, output, hooks. */
static void target_options_of(const struct cli *c, const char *dump_dir, struct target_options *to)
{
	*to = (struct target_options){
	    .dump_dir = dump_dir,
	    .via = c->via,
	    .store = c->store,
	    .dump_timeout_ns = c->dump_timeout_ns,
	    .createdump = c->createdump,
	    .counter_interval_ms = (uint32_t)(c->counter_interval_ns / 1000000),
	    .all_events = c->all_events,
	    .verbose = c->verbose,
	    .history_ns = c->history_ns,
	    .proc_interval_ns = c->proc_interval_ns,
	    .on_fire = c->on_fire,
	    .on_dump = c->on_dump,
	    .hook_user = c->hook_user,
	    .hook_timeout_ns = c->hook_timeout_ns,
	};
}

/* --upload and its companions into go->upload: the endpoint and region
 * defaulted, the credentials read now (a refused file is a usage error at
 * start), the queue beside the state. 0 or -EINVAL after saying why. */
static int upload_options_finish(const struct cli *c, struct guard_options *go, const char *state_dir)
{
	static struct upload_options uo;
	static char qdir[PATH_MAX];
	char err[512];
	const char *env_region = getenv("AWS_REGION");

	uo = c->upload;
	if (!uo.region[0])
		snprintf(uo.region, sizeof(uo.region), "%s",
		         env_region && env_region[0] ? env_region : S3_DEFAULT_REGION);
	if (!uo.endpoint[0])
		snprintf(uo.endpoint, sizeof(uo.endpoint), "https://s3.%s.amazonaws.com", uo.region);
	if (s3_credentials_load(&uo.creds, c->upload_credentials, err, sizeof(err)) < 0) {
		log_error("--upload: %s", err);
		return -EINVAL;
	}
	if (state_dir) {
		snprintf(qdir, sizeof(qdir), "%s/uploads", state_dir);
		uo.queue_dir = qdir;
	} else {
		log_warn("--upload without --state-dir or --journal: uploads still queued at a stop are forgotten");
	}
	go->upload = &uo;
	return 0;
}

/* Guard options from the command line: the rules directory made absolute
 * (it may not exist yet: it is picked up when it appears), the dump
 * directories as real paths (they must exist; the rules' dump.dir are
 * compared with them as real paths), the state directory. 0, or -EINVAL
 * after saying what was wrong. The strings live in static buffers. */
static int guard_options_from_cli(const struct cli *c, struct guard_options *go)
{
	static char rdir[PATH_MAX], ddir[PATH_MAX], sdir[PATH_MAX], adirs[GUARD_ALLOW_DUMP_DIRS_MAX][PATH_MAX];

	memset(go, 0, sizeof(*go));
	if (c->rules_dir[0] == '/')
		snprintf(rdir, sizeof(rdir), "%s", c->rules_dir);
	else if (!getcwd(sdir, sizeof(sdir)) ||
	         snprintf(rdir, sizeof(rdir), "%s/%s", sdir, c->rules_dir) >= (int)sizeof(rdir)) {
		log_error("--rules-dir %s: path too long", c->rules_dir);
		return -EINVAL;
	}
	if (!realpath(c->dump_dir, ddir)) {
		log_error("dump directory %s: %s", c->dump_dir, strerror(errno));
		return -EINVAL;
	}
	for (size_t i = 0; i < c->n_allow_dump_dirs; i++) {
		if (!realpath(c->allow_dump_dirs[i], adirs[i])) {
			log_error("--allow-dump-dir %s: %s", c->allow_dump_dirs[i], strerror(errno));
			return -EINVAL;
		}
		go->allow_dump_dirs[i] = adirs[i];
	}
	go->n_allow_dump_dirs = c->n_allow_dump_dirs;
	guard_state_dir(c, sdir, sizeof(sdir));
	go->rules_dir = rdir;
	target_options_of(c, ddir, &go->target);
	go->journal_path = c->journal;
	go->state_dir = sdir[0] ? sdir : NULL;
	go->stop_timeout_ns = c->stop_timeout_ns;
	for (size_t i = 0; i < c->n_socket_dirs; i++)
		go->socket_dirs[i] = c->socket_dirs[i];
	go->n_socket_dirs = c->n_socket_dirs;
	if (c->upload.bucket[0] && upload_options_finish(c, go, sdir[0] ? sdir : NULL) < 0)
		return -EINVAL;
	go->metrics_listen = c->metrics_listen;
	go->metrics_allow = c->metrics_allow;
	go->metrics_file = c->metrics_file;
	go->metrics_interval_ns = c->metrics_interval_ns;
	return 0;
}

/* Guard mode (--rules-dir): rules, limits and processes come from the rule
 * files, so the options of the one-process watch are refused. */
static int run_guard(const struct cli *c)
{
	static struct guard_options go;

	if (c->pid || c->rule.n_conds || c->limits_given || c->n_operands > 0) {
		log_error("--rules-dir takes its rules, limits and processes from the rule files; --pid, --when, "
		          "--dump-type, --max-dumps, --cooldown and PID MB are for watching one process");
		return DW_EXIT_USAGE;
	}
	if (c->launcher) {
		log_error("--launcher is for watching one process from a desktop session; the guard is a service");
		return DW_EXIT_USAGE;
	}
	if (guard_options_from_cli(c, &go) < 0)
		return DW_EXIT_USAGE;
	return guard_run(&go);
}

/* The rule of the classic form `dumpwatch PID MB`: --pid PID --when
 * 'heap-size > MBMB'. 0, or -EINVAL after saying what was wrong. */
static int rule_from_pid_mb(const char *pid_text, const char *mb_text, pid_t *ret_pid, struct rule *rule)
{
	char text[RULE_TEXT_MAX], err[512], *end;
	double mb;

	if (parse_pid(pid_text, ret_pid) < 0) {
		log_error("\"%s\" is not a process id", pid_text);
		return -EINVAL;
	}
	mb = strtod(mb_text, &end);
	if (*end || end == mb_text || !(mb > 0)) {
		log_error("\"%s\" is not a size in MB (a number such as 500)", mb_text);
		return -EINVAL;
	}
	snprintf(text, sizeof(text), "heap-size > %sMB", mb_text);
	if (rule_cond_parse(text, &rule->conds[0], err, sizeof(err)) < 0) {
		log_error("%s", err);
		return -EINVAL;
	}
	rule->n_conds = 1;
	return 0;
}

/* The name of the command line's rule: its conditions joined by " and ",
 * made a rule name (rule_name_from_text). */
static void rule_name_from_conds(struct rule *rule)
{
	char joined[RULE_TEXT_MAX * 2] = "";

	for (uint32_t i = 0; i < rule->n_conds; i++) {
		if (i)
			strncat(joined, " and ", sizeof(joined) - strlen(joined) - 1);
		strncat(joined, rule->conds[i].text, sizeof(joined) - strlen(joined) - 1);
	}
	rule_name_from_text(joined, rule->name, sizeof(rule->name));
}

/* The one-process watch: --pid and --when, or PID MB. */
static int run_watch(struct cli *c)
{
	static char dir[PATH_MAX];
	struct watch_options o;

	if (c->n_allow_dump_dirs) {
		log_error("--allow-dump-dir is for --rules-dir: it widens where rule files may send dumps");
		return DW_EXIT_USAGE;
	}
	if (c->upload.bucket[0]) {
		log_error(
		    "--upload is for the guard (--rules-dir), whose queue outlives a restart; a one-process watch "
		    "leaves its dump in --dump-dir");
		return DW_EXIT_USAGE;
	}
	if (c->n_operands == 2 && !c->pid && c->rule.n_conds == 0) {
		if (rule_from_pid_mb(c->operands[0], c->operands[1], &c->pid, &c->rule) < 0)
			return DW_EXIT_USAGE;
	} else if (c->n_operands > 0) {
		log_error("unexpected argument \"%s\"", c->operands[0]);
		usage(stderr);
		return DW_EXIT_USAGE;
	}
	if (!c->pid || c->rule.n_conds == 0) {
		usage(stderr);
		return DW_EXIT_USAGE;
	}
	if (!realpath(c->dump_dir, dir)) {
		log_error("dump directory %s: %s", c->dump_dir, strerror(errno));
		return DW_EXIT_USAGE;
	}
	rule_name_from_conds(&c->rule);
	c->rule.limits.max_dumps = (uint32_t)c->max_dumps;
	c->rule.limits.cooldown_ns = c->cooldown_ns;
	memset(&o, 0, sizeof(o));
	o.pid = c->pid;
	o.rules = &c->rule;
	o.n_rules = 1;
	target_options_of(c, dir, &o.target);
	o.journal_path = c->journal;
	o.launcher = c->launcher ? c->launcher : LAUNCHER_DEFAULT_ID;
	return watch_run(&o);
}

/* dumpwatch [options] [PID MB]: the one-process watch, or with --rules-dir
 * the guard. */
static int cmd_watch_or_guard(int argc, char **argv)
{
	static struct cli c;
	int r = cli_parse(argc, argv, &c);

	if (r != CLI_GO_ON)
		return r;
	if (!c.rules_dir && (c.metrics_listen || c.metrics_file || c.metrics_allow)) {
		log_error("--metrics-listen, --metrics-allow and --metrics-file are for the guard (--rules-dir)");
		return DW_EXIT_USAGE;
	}
	if (c.metrics_allow && !c.metrics_listen) {
		log_error("--metrics-allow says who may read the page --metrics-listen serves: give both");
		return DW_EXIT_USAGE;
	}
	return c.rules_dir ? run_guard(&c) : run_watch(&c);
}

/* ---- dispatch ----------------------------------------------------------- */

static int cmd_counters(int argc, char **argv)
{
	return cmd_view(VIEW_COUNTERS, argc, argv);
}

static int cmd_gc(int argc, char **argv)
{
	return cmd_view(VIEW_GC, argc, argv);
}

/* dumpwatch metrics: the metric names a condition may use, one per line
 * (what the shell completion offers). */
static int cmd_metrics(int argc, char **argv)
{
	if (argc > 1) {
		if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
			printf("usage: dumpwatch metrics\n"
			       "  the metric names a condition may use, one per line: the built-in ones, then\n"
			       "  System.Runtime's counters by full and bare name (any other EventCounters\n"
			       "  provider's as Provider/counter; exceptions and meters have their own forms)\n");
			return DW_EXIT_OK;
		}
		fprintf(stderr, "dumpwatch metrics: unknown argument %s\n", argv[1]);
		return DW_EXIT_USAGE;
	}
	for (int id = 0; id < M_COUNTER; id++)
		if (id != M_EXCEPTIONS)
			printf("%s\n", catalog_id_name((enum metric_id)id));
	for (size_t i = 0; catalog_runtime_counters[i]; i++)
		printf("System.Runtime/%s\n", catalog_runtime_counters[i]);
	for (size_t i = 0; catalog_runtime_counters[i]; i++) {
		struct metric_ref ref;
		char err[256];
		/* A bare name that a built-in metric takes is that metric's. */
		if (catalog_resolve(catalog_runtime_counters[i], &ref, err, sizeof(err)) == 0 && ref.id == M_COUNTER)
			printf("%s\n", catalog_runtime_counters[i]);
	}
	return DW_EXIT_OK;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int argc, char **argv);
	} commands[] = {
	    {"ps", cmd_ps},           {"record", cmd_record}, {"check", cmd_check}, {"counters", cmd_counters},
	    {"gc", cmd_gc},           {"status", cmd_status}, {"show", cmd_show},   {"report", cmd_report},
	    {"metrics", cmd_metrics}, {"import", cmd_import}};

	if (argc > 1)
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (strcmp(argv[1], commands[i].name) == 0)
				return commands[i].run(argc - 1, argv + 1);
	return cmd_watch_or_guard(argc, argv);
}
