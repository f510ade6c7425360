/* Leveled logging to stderr. Under journald (JOURNAL_STREAM set, or
 * --journald) each line starts with a "<N>" priority prefix so the journal
 * records the right priority; otherwise lines start with "dumpwatch: ". */
#include "dumpwatch/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static enum log_level max_level = LOG_LVL_INFO;
static int journald = -1; /* -1: not decided yet */

void log_set_level(enum log_level level)
{
	max_level = level;
}

void log_set_journald(int on)
{
	journald = on;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	if (level > max_level)
		return;
	if (journald < 0)
		journald = getenv("JOURNAL_STREAM") != NULL;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (journald)
		fprintf(stderr, "<%d>%s\n", (int)level, line);
	else
		fprintf(stderr, "dumpwatch: %s%s\n",
		        level == LOG_LVL_ERROR  ? "error: "
		        : level == LOG_LVL_WARN ? "warning: "
		                                : "",
		        line);
}
