/* dumpwatch record: a process's event stream into a nettrace file
 * (record.h). */
#include <getopt.h>
#include <stdio.h>

#include "dumpwatch/catalog.h"
#include "dumpwatch/cli.h"
#include "dumpwatch/cmd.h"
#include "dumpwatch/defaults.h"
#include "dumpwatch/exitcodes.h"
#include "dumpwatch/log.h"
#include "dumpwatch/record.h"
#include "dumpwatch/units.h"

static void help(FILE *f)
{
	char duration[32];

	units_format_duration(DW_DEFAULT_RECORD_DURATION_NS, duration, sizeof(duration));
	cli_help_usage(f, cmd_record.synopsis);
	fputs("  writes the event stream of PID to FILE (nettrace): GC events, allocation ticks,\n"
	      "  exceptions and System.Runtime's counters, and the instruments of the meters named\n"
	      "\n"
	      "options:\n",
	      f);
	cli_help_option(f, "--pid PID", "the process to record");
	cli_help_option(f, "--out FILE", "the nettrace file to write");
	cli_help_option(f, "--duration D", "how long to record (default %s)", duration);
	cli_help_option(f, "--meters METER[,...]", "also the instruments of these System.Diagnostics.Metrics meters");
}

static int run(int argc, char **argv)
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

	optind = 0;
	while ((c = getopt_long(argc, argv, "p:o:D:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			help(stdout);
			return DW_EXIT_OK;
		case 'm':
			meters = optarg;
			break;
		case 'p':
			if (cli_pid_option(optarg, &pid) < 0)
				return DW_EXIT_USAGE;
			break;
		case 'o':
			out = optarg;
			break;
		case 'D':
			if (cli_duration_option("--duration", optarg, &duration) < 0)
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

const struct cmd cmd_record = {
    .name = "record",
    .run = run,
    .synopsis = "record --pid PID --out FILE [--duration D] [--meters METER[,...]]",
    .summary = "write the event stream of PID to a nettrace file",
};
