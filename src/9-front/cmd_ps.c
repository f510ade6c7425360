/* dumpwatch ps: the .NET processes that can be attached to (discovery.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dumpwatch/cli.h"
#include "dumpwatch/cmd.h"
#include "dumpwatch/discovery.h"
#include "dumpwatch/exitcodes.h"
#include "dumpwatch/log.h"

static void help(FILE *f)
{
	cli_help_usage(f, cmd_ps.synopsis);
	fputs("  lists the .NET processes that can be attached to: pid, user, name, runtime\n"
	      "  version and diagnostics socket, in containers too\n"
	      "\n"
	      "options:\n",
	      f);
	cli_help_option(f, "--json", "one JSON object per process instead of a table");
}

static int run(int argc, char **argv)
{
	int json = 0, n;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			help(stdout);
			return DW_EXIT_OK;
		} else {
			fprintf(stderr, "dumpwatch ps: unknown argument %s\n", argv[i]);
			return DW_EXIT_USAGE;
		}
	}
	n = discovery_print_ps(stdout, json);
	if (n < 0) {
		log_error("listing processes: %s", strerror(-n));
		return DW_EXIT_RUNTIME;
	}
	return DW_EXIT_OK;
}

const struct cmd cmd_ps = {
    .name = "ps",
    .run = run,
    .synopsis = "ps [--json]",
    .summary = "list .NET processes",
};
