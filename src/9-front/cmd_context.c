/* dumpwatch show, dumpwatch report: the readers of the dump contexts
 * (context.h), one dump's as text, a directory's as one HTML page. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>

#include "dumpwatch/cli.h"
#include "dumpwatch/cmd.h"
#include "dumpwatch/context.h"
#include "dumpwatch/exitcodes.h"

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

static void show_help(FILE *f)
{
	cli_help_usage(f, cmd_show.synopsis);
	fprintf(f,
	        "  prints the context dumpwatch wrote beside a dump: the outcome and the rule that\n"
	        "  fired, each condition with its value at the fire, when (UTC and local), the dump,\n"
	        "  the process, a sparkline of each condition's metric over the history (^ under the\n"
	        "  columns where the condition held) and the last %d GCs. FILE is NAME.core, NAME.json\n"
	        "  or NAME: the context read is NAME.json, at most %u MiB (a larger file is refused\n"
	        "  unread). Exit 2 when it cannot be read, 1 when it is not a dump context this\n"
	        "  version reads or is too large.\n"
	        "\n",
	        CONTEXT_SHOW_GCS, CONTEXT_FILE_MAX >> 20);
	cli_help_exit_codes(f);
}

static int run_show(int argc, char **argv)
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	char err[PATH_MAX * 2 + 512];
	int c, r;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			show_help(stdout);
			return DW_EXIT_OK;
		default:
			return DW_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		cli_help_usage(stderr, cmd_show.synopsis);
		return DW_EXIT_USAGE;
	}
	r = context_show_file(argv[optind], stdout, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "dumpwatch: %s\n", err); /* err is escaped */
		return context_exit(r);
	}
	return DW_EXIT_OK;
}

static void report_help(FILE *f)
{
	cli_help_usage(f, cmd_report.synopsis);
	fprintf(f,
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
	        "\n"
	        "options:\n",
	        CONTEXT_FILE_MAX >> 20, CONTEXT_REPORT_MAX, CONTEXT_READ_MAX >> 20, CONTEXT_PAGE_MAX >> 20);
	cli_help_option(f, "-o, --output FILE", "the page to write (default DIR/index.html)");
	fputc('\n', f);
	cli_help_exit_codes(f);
}

static int run_report(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	const char *out = NULL;
	char err[PATH_MAX * 2 + 512];
	int c, r;

	optind = 0;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			report_help(stdout);
			return DW_EXIT_OK;
		default:
			return DW_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		cli_help_usage(stderr, cmd_report.synopsis);
		return DW_EXIT_USAGE;
	}
	r = context_report(argv[optind], out, NULL, stdout, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "dumpwatch: %s\n", err); /* err is escaped */
		return context_exit(r);
	}
	return DW_EXIT_OK;
}

const struct cmd cmd_show = {
    .name = "show",
    .run = run_show,
    .synopsis = "show FILE",
    .summary = "why a dump was taken: its context (FILE: NAME.core, NAME.json or NAME) as text, with sparklines "
               "and GCs",
};

const struct cmd cmd_report = {
    .name = "report",
    .run = run_report,
    .synopsis = "report [-o FILE] DIR",
    .summary = "one HTML page of every dump context in DIR, newest first, with plots (default DIR/index.html)",
};
