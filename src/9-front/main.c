/* dumpwatch: the table of commands. A command named by the first argument
 * (`ps`, `record`, ...) gets the rest; any other command line is the
 * one-process watch or, with --rules-dir, the guard. Each command is a file
 * of its own that parses only its own options (cmd.h); this file only
 * chooses, and answers --help and --version. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "dumpwatch/cli.h"
#include "dumpwatch/cmd.h"
#include "dumpwatch/defaults.h"
#include "dumpwatch/exitcodes.h"
#include "dumpwatch/launcher.h"
#include "dumpwatch/log.h"
#include "dumpwatch/rules.h"
#include "dumpwatch/target_cli.h"
#include "dumpwatch/units.h"

static const struct cmd *const commands[] = {
    &cmd_watch, &cmd_guard,  &cmd_ps,   &cmd_record, &cmd_check,   &cmd_counters,
    &cmd_gc,    &cmd_status, &cmd_show, &cmd_report, &cmd_metrics, &cmd_import, &cmd_heap,
};

enum {
	OPT_VERSION = CLI_VAL_MAIN,
};

/* What main() itself answers on the command line of the watch and the guard. */
static const struct cli_option main_options[] = {
    {{"help", no_argument, NULL, 'h'}, NULL},
    {{"version", no_argument, NULL, OPT_VERSION}, NULL},
    {{NULL, 0, NULL, 0}, NULL},
};

/* dumpwatch --help: every command's usage, then the options of the watch and
 * the guard (the other commands list theirs at `dumpwatch CMD --help`). */
static void help(FILE *f)
{
	char rule_cooldown[32];

	units_format_duration(DW_DEFAULT_RULE_COOLDOWN_NS, rule_cooldown, sizeof(rule_cooldown));
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (i == 0)
			cli_help_usage(f, commands[i]->synopsis);
		else
			for (const char *p = commands[i]->synopsis; *p;) {
				size_t len = strcspn(p, "\n");
				fprintf(f, "       %s%.*s\n", p[0] == ' ' ? "          " : "dumpwatch ", (int)len, p);
				p += len + (p[len] == '\n');
			}
		fprintf(f, "           %s\n", commands[i]->summary);
	}
	fputs("  (counters and gc: a table on a terminal, JSON lines otherwise, unless --format says;\n"
	      "   each command's options: dumpwatch COMMAND --help; all of them: dumpwatch(8))\n"
	      "\n"
	      "EXPR is METRIC OP VALUE [for DURATION], e.g. 'loh-size > 200MB', 'loh-alloc-rate > 50MB/s for 2s',\n"
	      "'gc-pause > 500ms', 'private-memory > 2GB', 'System.Runtime/cpu-usage > 90% for 10s'. All --when\n"
	      "must hold at once. rss, private-memory, swap, threads and fds are polled from /proc.\n"
	      "Exceptions: exception [TYPE] [message 'PATTERN'] [>= N] [in DURATION], e.g.\n"
	      "\"exception TimeoutException* message '*pool*' >= 3 in 1m\" (globs; by default any, 1, 1m).\n"
	      "Meters: meter METER/INSTRUMENT[KEY=GLOB,...] [value|rate|p50|p95|p99|count|sum] OP VALUE [for D],\n"
	      "e.g. 'meter Microsoft.AspNetCore.Hosting/http.server.request.duration p99 > 2s for 30s'.\n"
	      "MB = 1,000,000 bytes, MiB = 1,048,576. The metric names: dumpwatch metrics, dumpwatch-rules(5).\n"
	      "\n"
	      "options of the watch and the guard:\n",
	      f);
	target_cli_help(f);
	cli_help_option(f, "-h, --help", "this text (after a command: that command's), and exit");
	cli_help_option(f, "--version", "the version and the desktop launcher helper found, and exit");
	fputs("\noptions of the watch (PID MB, --pid):\n", f);
	cmd_watch.help_options(f);
	fprintf(f,
	        "\noptions of the guard (--rules-dir; limits and dump type come from the rule files, by default\n"
	        "max-dumps %d, cooldown %s, type %s):\n",
	        DW_DEFAULT_MAX_DUMPS, rule_cooldown, rule_dump_type_name(RULE_DEFAULT_DUMP_TYPE));
	cmd_guard.help_options(f);
	fputc('\n', f);
	cli_help_exit_codes(f);
}

static void version(void)
{
	char helper[PATH_MAX], why[PATH_MAX + 256];

	printf("dumpwatch %s\n", DW_VERSION);
	if (launcher_helper(helper, sizeof(helper), why, sizeof(why)) == 0)
		printf("desktop launcher entry: %s at %s\n", LAUNCHER_HELPER, helper);
	else
		printf("desktop launcher entry: none: %s\n", why);
}

/* The watch or the guard. A first pass reads the command line with the
 * options of both, only to choose (--rules-dir: the guard) and to refuse, in
 * one line, an option of the one not chosen; the chosen command then parses
 * it with its own options. --help and --version are answered here. */
static int run_watch_or_guard(int argc, char **argv)
{
	struct cli_getopt all = {0};
	const struct cli_option *watch_only = NULL, *guard_only = NULL;
	int opt, guard = 0;

	cli_getopt_add(&all, main_options);
	cli_getopt_add(&all, target_cli_options);
	cli_getopt_add(&all, cmd_watch.options);
	cli_getopt_add(&all, cmd_guard.options);
	optind = 0;
	while ((opt = getopt_long(argc, argv, all.shorts, all.longs, NULL)) != -1) {
		if (opt == 'h') {
			help(stdout);
			return DW_EXIT_OK;
		}
		if (opt == OPT_VERSION) {
			version();
			return DW_EXIT_OK;
		}
		if (opt == '?') {
			help(stderr);
			return DW_EXIT_USAGE;
		}
		if (!watch_only)
			watch_only = cli_option_find(cmd_watch.options, opt);
		if (!guard_only)
			guard_only = cli_option_find(cmd_guard.options, opt);
		guard |= opt == 'r';
	}
	if (guard && (watch_only || optind < argc)) {
		log_error("%s", watch_only ? watch_only->elsewhere : cmd_watch.operands_elsewhere);
		return DW_EXIT_USAGE;
	}
	if (!guard && guard_only) {
		log_error("%s", guard_only->elsewhere);
		return DW_EXIT_USAGE;
	}
	return (guard ? &cmd_guard : &cmd_watch)->run(argc, argv);
}

int main(int argc, char **argv)
{
	if (argc == 1) {
		help(stderr);
		return DW_EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i]->name && strcmp(argv[1], commands[i]->name) == 0)
			return commands[i]->run(argc - 1, argv + 1);
	return run_watch_or_guard(argc, argv);
}
