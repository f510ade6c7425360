/* dumpwatch status: what the running guard is doing, asked on its status
 * socket (status.h). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>

#include "dumpwatch/cli.h"
#include "dumpwatch/cmd.h"
#include "dumpwatch/exitcodes.h"
#include "dumpwatch/log.h"
#include "dumpwatch/status.h"

static void help(FILE *f)
{
	cli_help_usage(f, cmd_status.synopsis);
	fputs("  what the running guard is doing: each process it guards, its rules, how far\n"
	      "  each condition's sustain window has run, the limits used and the dumps taken\n"
	      "\n"
	      "options:\n",
	      f);
	cli_help_option(f, "--json", "the status as one JSON document instead of text");
	cli_help_option(f, "--state-dir DIR", "the guard's --state-dir: ask DIR/%s", STATUS_SOCKET_NAME);
	cli_help_option(f, "--socket PATH", "the guard's status socket (default %s)", STATUS_DEFAULT_SOCKET);
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
	                                     {"state-dir", required_argument, NULL, 's'},
	                                     {"socket", required_argument, NULL, 'S'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {NULL, 0, NULL, 0}};
	char path[PATH_MAX], err[512];
	int json = 0, c, r;

	snprintf(path, sizeof(path), "%s", STATUS_DEFAULT_SOCKET);
	optind = 0;
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
			help(stdout);
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

const struct cmd cmd_status = {
    .name = "status",
    .run = run,
    .synopsis = "status [--json] [--state-dir DIR | --socket PATH]",
    .summary = "what the running guard is doing: processes, rules, sustain windows, limits used, dumps taken",
};
