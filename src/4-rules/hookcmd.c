/* A hook's command: see hookcmd.h. */
#include "dumpwatch/hookcmd.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dumpwatch/text.h"

int hook_cmd_add(struct hook_cmd *c, const char *arg)
{
	size_t n = strlen(arg) + 1;

	if (c->argc >= HOOK_ARGS_MAX || c->len + n > sizeof(c->buf))
		return -E2BIG;
	memcpy(c->buf + c->len, arg, n);
	c->len += (uint32_t)n;
	c->argc++;
	return 0;
}

const char *hook_cmd_arg(const struct hook_cmd *c, size_t i)
{
	size_t off = 0;

	if (i >= c->argc)
		return NULL;
	while (i--)
		off += strlen(c->buf + off) + 1;
	return c->buf + off;
}

int hook_cmd_parse(const char *text, struct hook_cmd *out, char *err, size_t errlen)
{
	char word[HOOK_ARGV_BYTES];
	const char *p = text;

	memset(out, 0, sizeof(*out));
	for (;;) {
		size_t n = 0;
		int quoted = 0;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		while (*p && *p != ' ' && *p != '\t') {
			char q = *p;
			if (q == '\'' || q == '"') {
				const char *end;
				quoted = 1;
				for (end = p + 1; *end && *end != q; end++)
					if (q == '"' && *end == '\\' && (end[1] == '"' || end[1] == '\\')) {
						end++;
						if (n < sizeof(word) - 1)
							word[n++] = *end;
					} else if (n < sizeof(word) - 1) {
						word[n++] = *end;
					}
				if (!*end) {
					snprintf(err, errlen, "hook command: a %c quote is not closed", q);
					return -EINVAL;
				}
				p = end + 1;
				continue;
			}
			if (q == '\\' && p[1])
				p++;
			if (n < sizeof(word) - 1)
				word[n++] = *p;
			p++;
		}
		word[n] = '\0';
		if (n >= sizeof(word) - 1 || hook_cmd_add(out, word) < 0) {
			snprintf(err, errlen, "hook command is too long: at most %d words, %d bytes", HOOK_ARGS_MAX,
			         HOOK_ARGV_BYTES);
			return -E2BIG;
		}
		(void)quoted;
	}
	if (out->argc == 0) {
		snprintf(err, errlen, "hook command is empty");
		return -EINVAL;
	}
	if (out->buf[0] != '/') {
		char q[96];
		snprintf(err, errlen, "hook program \"%s\" must be an absolute path (it runs without a shell or PATH)",
		         text_escape_str(out->buf, q, sizeof(q)));
		return -EINVAL;
	}
	return 0;
}

void hook_cmd_format(const struct hook_cmd *c, char *out, size_t outlen)
{
	size_t pos = 0;

	if (outlen == 0)
		return;
	out[0] = '\0';
	for (size_t i = 0; i < c->argc; i++) {
		const char *a = hook_cmd_arg(c, i);
		int plain = a[0] != '\0' && strcspn(a, " \t'\"\\") == strlen(a);
		int w = snprintf(out + pos, outlen - pos, plain ? "%s%s" : "%s'%s'", i ? " " : "", a);
		if (w < 0 || (size_t)w >= outlen - pos)
			return;
		pos += (size_t)w;
	}
}
