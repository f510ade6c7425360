/* The commands of dumpwatch: the table main() dispatches on. Each command is
 * one file, src/9-front/cmd_NAME.c, that parses only its own options (the
 * watch and the guard also those they share, target_cli.h) and hands over
 * to its module; the reference of every option is dumpwatch(8). */
#ifndef DUMPWATCH_CMD_H
#define DUMPWATCH_CMD_H

#include <stdio.h>

struct cli_option; /* cli.h */

struct cmd {
	/* argv[1] that names it; NULL for the watch and the guard, which main()
	 * tells apart by their options (--rules-dir is the guard's). */
	const char *name;
	/* Runs it on its own arguments (argv[0]: its name, or the program's for
	 * the watch and the guard); returns a DW_EXIT_* code. */
	int (*run)(int argc, char **argv);
	/* What follows "dumpwatch " on its usage lines ('\n' between two), and
	 * what it does in a line, as dumpwatch --help shows them. */
	const char *synopsis;
	const char *summary;
	/* The watch and the guard: their own options, each with the line said
	 * when the other is given it, and --help's list of them. */
	const struct cli_option *options;
	void (*help_options)(FILE *f);
	/* The watch: said when the guard is given PID MB. */
	const char *operands_elsewhere;
};

extern const struct cmd cmd_watch, cmd_guard;
extern const struct cmd cmd_ps, cmd_record, cmd_check, cmd_counters, cmd_gc, cmd_status, cmd_show, cmd_report,
    cmd_metrics, cmd_import, cmd_heap;

#endif
