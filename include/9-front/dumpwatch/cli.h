/* What the commands share when they read a command line: option tables that
 * a command joins into the one getopt_long takes, the values several
 * commands parse (a pid, a duration, a count), and the layout of --help's
 * options lists, which test_manpages.sh holds against dumpwatch(8). Each
 * command parses only its own options (cmd.h). */
#ifndef DUMPWATCH_CLI_H
#define DUMPWATCH_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Codes of the long options without a short form, one range per table, so
 * that tables joined never share a code. */
enum {
	CLI_VAL_MAIN = 256,   /* main.c: --version */
	CLI_VAL_TARGET = 320, /* target_cli.h: what the watch and the guard share */
	CLI_VAL_WATCH = 384,  /* cmd_watch.c */
	CLI_VAL_GUARD = 448,  /* cmd_guard.c */
};

/* One option as getopt_long takes it, and for the options of the watch and
 * of the guard that the other does not take, the line said when the other
 * is given it (NULL otherwise). A table ends with a NULL name. */
struct cli_option {
	struct option o;
	const char *elsewhere;
};

#define CLI_OPTIONS_MAX 64

/* Tables joined for getopt_long: the long options and the short ones
 * ("d:j:v"), both terminated. Zeroed before the first cli_getopt_add. */
struct cli_getopt {
	struct option longs[CLI_OPTIONS_MAX + 1];
	char shorts[2 * CLI_OPTIONS_MAX + 1];
	size_t n;
};

/* Appends table to g; an option with a printable code is also a short one.
 * More than CLI_OPTIONS_MAX options in all is a programmer's mistake. */
void cli_getopt_add(struct cli_getopt *g, const struct cli_option *table);

/* The entry of table whose code is val, or NULL. */
const struct cli_option *cli_option_find(const struct cli_option *table, int val);

/* A process id, silently: 0 or -EINVAL. */
int cli_parse_pid(const char *s, pid_t *out);
/* The value of --pid: 0, or -EINVAL after one line saying what was wrong. */
int cli_pid_option(const char *s, pid_t *out);
/* A duration option's value: 0, or -EINVAL after one line "NAME: why". */
int cli_duration_option(const char *name, const char *arg, int64_t *out);
/* A count option's value, 0 (no limit) to max: 0, or -EINVAL after one line. */
int cli_count_option(const char *name, const char *arg, long max, long *out);

/* One entry of an options list in --help: "  -p, --pid PID" (a long option
 * alone is indented as if it had a short one), then the text from column 27,
 * or two spaces after an option that reaches it; a '\n' in the text starts a
 * line at that column. The option is written as dumpwatch(8) writes it. */
void cli_help_option(FILE *f, const char *option, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* "usage: dumpwatch SYNOPSIS", and a line "       dumpwatch ..." for each
 * further line of the synopsis ('\n' between them); a line that starts with
 * a space goes on the one before, under its "dumpwatch ". */
void cli_help_usage(FILE *f, const char *synopsis);

/* The exit-status table (exitcodes.h), as --help shows it. */
void cli_help_exit_codes(FILE *f);

#endif
