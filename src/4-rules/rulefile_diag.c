/* The rule-file parser's diagnostics: each recorded with its position as
 * "line:column: message", the first of each kind kept when there are more
 * than the caller has room for, sorted by position, and formatted with the
 * file's path. Quoted text is cut and made printable (rf_shown); an unknown
 * key gets the nearest known one suggested (rf_near_key). */
#include "rulefile_shared.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/text.h"

int rf_diag_wanted(const struct rf_ctx *c, enum rf_diag_kind kind)
{
	if (c->n < c->max)
		return 1;
	for (size_t i = 0; i < c->n; i++)
		if (c->kinds[i] == kind)
			return 0;
	return 1;
}

void rf_diag(struct rf_ctx *c, enum rf_diag_kind kind, uint32_t off, const char *fmt, ...)
{
	struct rule_diag *d;
	va_list ap;
	size_t slot = c->n;

	c->total++;
	if (!rf_diag_wanted(c, kind))
		return;
	if (c->n >= c->max) {
		size_t i, j;
		for (i = c->n; i-- > 0;) {
			for (j = 0; j < c->n; j++)
				if (j != i && c->kinds[j] == c->kinds[i])
					break;
			if (j < c->n)
				break;
		}
		if (i == (size_t)-1)
			return;
		slot = i;
	} else {
		c->n++;
	}
	d = &c->diags[slot];
	c->kinds[slot] = kind;
	d->line = d->column = 0;
	if (off != JSONPOS_NONE)
		jsonpos_line_col(&c->jp, off, &d->line, &d->column);
	va_start(ap, fmt);
	vsnprintf(d->message, sizeof(d->message), fmt, ap);
	va_end(ap);
}

const char *rf_shown(const char *s, char *buf, size_t buflen)
{
	size_t n = strlen(s);
	snprintf(buf, buflen, "%.*s%s", (int)(n > 60 ? 60 : n), s, n > 60 ? "..." : "");
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
	return buf;
}

int rf_near_key(const char *key, const char *const *keys, int strict)
{
	size_t best = (size_t)-1, n = strlen(key);
	int bi = -1;

	for (int k = 0; keys[k]; k++) {
		size_t d = text_edit_distance(key, keys[k]);
		if (d < best) {
			best = d;
			bi = k;
		}
	}
	if (strict)
		return best <= (n < 6 ? 1 : 2) && best < n ? bi : -1;
	return best <= (n < 6 ? 2 : 3) && best < n ? bi : -1;
}

static int diag_cmp(const void *a, const void *b)
{
	const struct rule_diag *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return (x->column > y->column) - (x->column < y->column);
}

void rf_diag_sort(struct rule_diag *diags, size_t n)
{
	if (n > 1)
		qsort(diags, n, sizeof(*diags), diag_cmp);
}

void rulefile_format_diag(const char *path, const struct rule_diag *d, char *buf, size_t len)
{
	if (d->line > 0)
		snprintf(buf, len, "%s:%d:%d: %s", path, d->line, d->column, d->message);
	else
		snprintf(buf, len, "%s: %s", path, d->message);
}

void rulefile_format_duplicate(const char *path, const struct file_rule *r, const char *other_path, int other_line,
                               int other_column, char *buf, size_t len)
{
	snprintf(buf, len, "%s:%d:%d: rule name \"%s\" is also defined at %s:%d:%d", path, r->name_line, r->name_column,
	         r->rule.name, other_path, other_line, other_column);
}
