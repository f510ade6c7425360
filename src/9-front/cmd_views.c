/* dumpwatch counters, dumpwatch gc: the live views (views.h), one parser for
 * the two; gc takes no --counters nor --meters. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dumpwatch/cli.h"
#include "dumpwatch/cmd.h"
#include "dumpwatch/defaults.h"
#include "dumpwatch/exitcodes.h"
#include "dumpwatch/log.h"
#include "dumpwatch/units.h"
#include "dumpwatch/views.h"

static void help(FILE *f, enum view_kind kind)
{
	char interval[32];

	units_format_duration(DW_DEFAULT_VIEW_INTERVAL_NS, interval, sizeof(interval));
	if (kind == VIEW_GC) {
		cli_help_usage(f, cmd_gc.synopsis);
		fputs("  one line per completed GC: index, generation, type, reason, pause, sizes\n", f);
	} else {
		cli_help_usage(f, cmd_counters.synopsis);
		fputs("  live GC, allocation, AppDomain and EventCounters figures, and the instruments of\n"
		      "  System.Diagnostics.Metrics meters (\"unknown\", null in JSON, until known)\n",
		      f);
	}
	fputs("\noptions:\n", f);
	cli_help_option(f, "--pid PID", "the process to show");
	cli_help_option(f, "--name NAME", "every process of that name (a glob), present and future");
	if (kind == VIEW_COUNTERS)
		cli_help_option(f, "--interval D", "the refresh interval (default %s; whole seconds)", interval);
	cli_help_option(f, "--format table|json",
	                "the output form; a table on a terminal and JSON lines otherwise,\n"
	                "unless this says");
	cli_help_option(f, "--duration D", "stop after D (else at SIGINT or SIGTERM, or when the process exits)");
	if (kind == VIEW_COUNTERS) {
		cli_help_option(f, "--counters PROVIDER", "also this EventCounters provider (repeatable)");
		cli_help_option(f, "--meters METER[,...]",
		                "also the instruments of these System.Diagnostics.Metrics meters");
	}
}

/* dumpwatch counters|gc --pid PID|--name GLOB [--interval D] [--format table|json]
 * [--duration D] [--counters PROVIDER]... [--meters METER[,...]]... */
static int run_view(enum view_kind kind, int argc, char **argv)
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
	int c;

	memset(&o, 0, sizeof(o));
	o.kind = kind;
	o.interval_ns = DW_DEFAULT_VIEW_INTERVAL_NS;
	o.json = !isatty(STDOUT_FILENO);
	optind = 0;
	while ((c = getopt_long(argc, argv, "p:n:i:f:D:c:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			help(stdout, kind);
			return DW_EXIT_OK;
		case 'p':
			if (cli_pid_option(optarg, &o.pid) < 0)
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
			break;
		case 'D':
			if (cli_duration_option("--duration", optarg, &o.duration_ns) < 0)
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

static int run_counters(int argc, char **argv)
{
	return run_view(VIEW_COUNTERS, argc, argv);
}

static int run_gc(int argc, char **argv)
{
	return run_view(VIEW_GC, argc, argv);
}

const struct cmd cmd_counters = {
    .name = "counters",
    .run = run_counters,
    .synopsis = "counters --pid PID|--name NAME [--interval D] [--format table|json] [--counters PROVIDER]\n"
                "         [--meters METER[,...]] [--duration D]",
    .summary = "live GC, allocation, AppDomain and EventCounters figures, and meters' instruments",
};

const struct cmd cmd_gc = {
    .name = "gc",
    .run = run_gc,
    .synopsis = "gc --pid PID|--name NAME [--format table|json] [--duration D]",
    .summary = "one line per completed GC (index, type, pause, sizes)",
};
