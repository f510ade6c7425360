/* A hook's command as a rule file or the command line gives it: an argv
 * held in one bounded buffer, split from a string as a shell would without
 * expanding anything. Part of the rule model (rulefile.h holds two per
 * rule); hook.h runs them. Pure. */
#ifndef DUMPWATCH_HOOKCMD_H
#define DUMPWATCH_HOOKCMD_H

#include <stddef.h>
#include <stdint.h>

#define HOOK_ARGS_MAX 32     /* arguments of one command, the program included */
#define HOOK_ARGV_BYTES 1024 /* their text, NULs included */

/* One command: argc strings stored one after another, each NUL-terminated. */
struct hook_cmd {
	char buf[HOOK_ARGV_BYTES];
	uint32_t len;
	uint32_t argc;
};

/* Splits text into words as a shell would without expanding anything:
 * blanks separate, '...' and "..." quote, a backslash escapes the next
 * character (inside "..." only before " and \). The program must be an
 * absolute path. 0, or -EINVAL / -E2BIG with a sentence in err. Pure. */
int hook_cmd_parse(const char *text, struct hook_cmd *out, char *err, size_t errlen);

/* Appends one argument. 0, or -E2BIG when it does not fit. Pure. */
int hook_cmd_add(struct hook_cmd *c, const char *arg);

/* Argument i, or NULL past the last. */
const char *hook_cmd_arg(const struct hook_cmd *c, size_t i);

/* The command as one line (words quoted where needed), for messages. */
void hook_cmd_format(const struct hook_cmd *c, char *out, size_t outlen);

#endif
