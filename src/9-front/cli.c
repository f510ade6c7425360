/* The commands' shared pieces of command-line reading; see cli.h. */
#include "dumpwatch/cli.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/exitcodes.h"
#include "dumpwatch/log.h"
#include "dumpwatch/units.h"

/* The column where an option's text starts in --help. */
#define CLI_HELP_COLUMN 27

void cli_getopt_add(struct cli_getopt *g, const struct cli_option *table)
{
	size_t len = strlen(g->shorts);

	for (const struct cli_option *c = table; c->o.name; c++) {
		if (g->n == CLI_OPTIONS_MAX)
			abort(); /* a table grew past CLI_OPTIONS_MAX */
		g->longs[g->n++] = c->o;
		if (c->o.val > 0 && c->o.val < 128 && isalpha(c->o.val)) {
			g->shorts[len++] = (char)c->o.val;
			if (c->o.has_arg == required_argument)
				g->shorts[len++] = ':';
		}
	}
	g->shorts[len] = '\0';
	memset(&g->longs[g->n], 0, sizeof(g->longs[g->n]));
}

const struct cli_option *cli_option_find(const struct cli_option *table, int val)
{
	for (const struct cli_option *c = table; c->o.name; c++)
		if (c->o.val == val)
			return c;
	return NULL;
}

int cli_parse_pid(const char *s, pid_t *out)
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

int cli_pid_option(const char *s, pid_t *out)
{
	if (cli_parse_pid(s, out) < 0) {
		log_error("--pid needs a process id, not \"%s\"", s);
		return -EINVAL;
	}
	return 0;
}

int cli_duration_option(const char *name, const char *arg, int64_t *out)
{
	char err[512];

	if (units_parse_duration(arg, out, err, sizeof(err)) < 0) {
		log_error("%s: %s", name, err);
		return -EINVAL;
	}
	return 0;
}

int cli_count_option(const char *name, const char *arg, long max, long *out)
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

void cli_help_option(FILE *f, const char *option, const char *fmt, ...)
{
	char text[1024];
	int col;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	col = fprintf(f, "%s%s", option[1] == '-' ? "      " : "  ", option);
	if (col > CLI_HELP_COLUMN - 2)
		fputs("  ", f);
	else
		fprintf(f, "%*s", CLI_HELP_COLUMN - col, "");
	for (const char *p = text; *p; p++) {
		fputc(*p, f);
		if (*p == '\n' && p[1])
			fprintf(f, "%*s", CLI_HELP_COLUMN, "");
	}
	fputc('\n', f);
}

void cli_help_usage(FILE *f, const char *synopsis)
{
	const char *p = synopsis;

	for (int first = 1; *p; first = 0) {
		size_t len = strcspn(p, "\n");
		if (p[0] == ' ') /* a continuation */
			fprintf(f, "%*s%.*s\n", (int)strlen("usage: dumpwatch "), "", (int)len, p);
		else
			fprintf(f, "%s dumpwatch %.*s\n", first ? "usage:" : "      ", (int)len, p);
		p += len + (p[len] == '\n');
	}
}

void cli_help_exit_codes(FILE *f)
{
	fputs("exit status (every mode):\n", f);
	for (size_t i = 0; i < dw_n_exit_codes; i++)
		fprintf(f, "  %3d %-8s %s\n", dw_exit_codes[i].code, dw_exit_codes[i].name, dw_exit_codes[i].meaning);
}
