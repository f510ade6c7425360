/* Leveled logging to stderr. Under journald (JOURNAL_STREAM set, or
 * --journald) each line starts with a "<N>" priority prefix so the journal
 * records the right priority; otherwise lines start with "dumpwatch: ".
 *
 * Messages carry names, command lines, versions and paths that processes
 * chose, so the whole formatted message is escaped (text_escape): a log call
 * prints exactly one line, with no control character and only valid UTF-8,
 * whatever its arguments hold. A "<0>" or "dumpwatch: " inside a message can
 * then only ever appear after the real prefix, never start a line. */
#include "dumpwatch/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/text.h"

#define LOG_LINE_MAX 2048

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
	/* An escape is at most 4 bytes for 1 ("\xNN"). */
	char line[LOG_LINE_MAX], safe[4 * LOG_LINE_MAX + 1];
	va_list ap;
	int n;
	size_t len;

	if (level > max_level)
		return;
	if (journald < 0)
		journald = getenv("JOURNAL_STREAM") != NULL;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	len = n < 0 ? 0 : strlen(line);
	/* A message cut at the buffer's end ends on a whole character. */
	if (n >= (int)sizeof(line))
		len = text_utf8_trim(line, len);
	text_escape(line, len, safe, sizeof(safe));
	if (journald)
		fprintf(stderr, "<%d>%s\n", (int)level, safe);
	else
		fprintf(stderr, "dumpwatch: %s%s\n",
		        level == LOG_LVL_ERROR  ? "error: "
		        : level == LOG_LVL_WARN ? "warning: "
		                                : "",
		        safe);
}
