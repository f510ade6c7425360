/* `dumpwatch check`: validates rule files as the daemon would (read through
 * the trust checks, parsed, dump.dir checked, names unique across files) and
 * reports each problem as one escaped line. The reporting half of the rule
 * files; reading is rulefile_io.c's, parsing rulefile.c's. */
#include "dumpwatch/rulecheck.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpwatch/exitcodes.h"
#include "dumpwatch/rulefile.h"
#include "dumpwatch/rulefile_io.h"
#include "dumpwatch/text.h"
#include "dumpwatch/trust.h"

struct seen_name {
	char name[RULE_NAME_MAX];
	char *path;
	int line, column;
};

struct checker {
	FILE *outf, *errf;
	const char *const *dump_dirs;
	size_t n_dump_dirs;
	uid_t self;
	struct seen_name *names;
	size_t n_names, cap_names;
	int status;
};

/* One line of `dumpwatch check` output. Paths, file names and the rule text
 * quoted in messages may hold anything: the line is escaped (text_escape). */
static void check_print(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check_print(FILE *f, const char *fmt, ...)
{
	char line[2 * PATH_MAX + RULEFILE_MSG_MAX + 256], safe[4 * sizeof(line) + 1];
	va_list ap;
	size_t len;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	len = strlen(line);
	if ((size_t)n >= sizeof(line))
		len = text_utf8_trim(line, len);
	text_escape(line, len, safe, sizeof(safe));
	fprintf(f, "%s\n", safe);
}

/* The worst status so far wins: an unreadable path (DW_EXIT_TARGET) over a
 * bad file (DW_EXIT_USAGE) over none. */
static void check_status(struct checker *k, int s)
{
	if (s > k->status)
		k->status = s;
}

static void check_file(struct checker *k, const char *path)
{
	struct rule_diag diags[20];
	struct file_rule *rules = NULL;
	char err[2 * PATH_MAX + RULEFILE_MSG_MAX + 128], *text; /* room for two paths: a duplicate name */
	size_t len, nd = 0;
	int n, dups = 0;

	n = rulefile_read_trusted(path, k->self, &text, &len, err, sizeof(err));
	if (n < 0) {
		check_print(k->errf, "%s", err);
		check_status(k, n == -EPERM ? DW_EXIT_USAGE : DW_EXIT_TARGET);
		return;
	}
	n = rulefile_parse(text, len, &rules, diags, sizeof(diags) / sizeof(diags[0]), &nd);
	free(text);
	if (n >= 0 && rulefile_check_dump_dirs(rules, (size_t)n, k->dump_dirs, k->n_dump_dirs, diags,
	                                       sizeof(diags) / sizeof(diags[0]), &nd) < 0) {
		free(rules);
		rules = NULL;
		n = -EINVAL;
	}
	if (n < 0) {
		if (n == -ENOMEM)
			check_print(k->errf, "%s: out of memory", path);
		for (size_t i = 0; i < nd; i++) {
			rulefile_format_diag(path, &diags[i], err, sizeof(err));
			check_print(k->errf, "%s", err);
		}
		check_status(k, DW_EXIT_USAGE);
		return;
	}
	for (int i = 0; i < n; i++) {
		size_t j;
		for (j = 0; j < k->n_names; j++)
			if (strcmp(k->names[j].name, rules[i].rule.name) == 0)
				break;
		if (j < k->n_names) {
			rulefile_format_duplicate(path, &rules[i], k->names[j].path, k->names[j].line,
			                          k->names[j].column, err, sizeof(err));
			check_print(k->errf, "%s", err);
			dups++;
			continue;
		}
		if (k->n_names == k->cap_names) {
			size_t cap = k->cap_names ? k->cap_names * 2 : 16;
			struct seen_name *p = realloc(k->names, cap * sizeof(*p));
			if (!p) {
				check_print(k->errf, "%s: out of memory", path);
				check_status(k, DW_EXIT_USAGE);
				free(rules);
				return;
			}
			k->names = p;
			k->cap_names = cap;
		}
		struct seen_name *s = &k->names[k->n_names];
		snprintf(s->name, sizeof(s->name), "%s", rules[i].rule.name);
		s->path = strdup(path);
		if (!s->path)
			continue;
		s->line = rules[i].name_line;
		s->column = rules[i].name_column;
		k->n_names++;
	}
	/* A hook program root may not run is refused each time it is due, not
	 * when its rule is loaded: said here, beforehand, without failing the
	 * file (the daemon takes it). */
	for (int i = 0; i < n; i++) {
		const struct hook_cmd *cmds[2] = {&rules[i].on_fire, &rules[i].on_dump};
		static const char *const which[2] = {"on-fire", "on-dump"};
		for (int c = 0; c < 2; c++) {
			char real[PATH_MAX], why[768];
			if (cmds[c]->argc == 0 || trust_exec_path(hook_cmd_arg(cmds[c], 0), "hook", real, sizeof(real),
			                                          why, sizeof(why)) == 0)
				continue;
			check_print(k->errf, "%s:%d: warning: rule %s: hooks.%s will not run: %s", path, rules[i].line,
			            rules[i].rule.name, which[c], why);
		}
	}
	if (dups)
		check_status(k, DW_EXIT_USAGE);
	else
		check_print(k->outf, "%s: %d rule%s OK", path, n, n == 1 ? "" : "s");
	free(rules);
}

static void check_dir(struct checker *k, const char *dir)
{
	char **names, path[PATH_MAX];
	size_t n;
	int truncated, r;
	const char *sep = dir[strlen(dir) - 1] == '/' ? "" : "/";

	r = rulefile_list_dir(dir, &names, &n, &truncated);
	if (r < 0) {
		check_print(k->errf, "%s: cannot read the directory: %s", dir, strerror(-r));
		check_status(k, DW_EXIT_TARGET);
		return;
	}
	if (truncated) {
		check_print(k->errf, "%s: more than %d rule files; the rest are not checked", dir, RULEFILE_DIR_MAX);
		check_status(k, DW_EXIT_USAGE);
	}
	if (n == 0)
		check_print(k->outf, "%s: no rule files (*.json)", dir);
	for (size_t i = 0; i < n; i++) {
		if ((size_t)snprintf(path, sizeof(path), "%s%s%s", dir, sep, names[i]) >= sizeof(path)) {
			check_print(k->errf, "%s%s%s: path too long", dir, sep, names[i]);
			check_status(k, DW_EXIT_TARGET);
		} else {
			check_file(k, path);
		}
	}
	rulefile_free_names(names, n);
}

int rulefile_check_paths(char *const *paths, size_t n_paths, const char *const *dump_dirs, size_t n_dump_dirs,
                         FILE *outf, FILE *errf)
{
	struct checker k;

	memset(&k, 0, sizeof(k));
	k.outf = outf;
	k.errf = errf;
	k.dump_dirs = dump_dirs;
	k.n_dump_dirs = n_dump_dirs;
	k.self = geteuid();
	for (size_t i = 0; i < n_paths; i++) {
		struct stat st;

		if (stat(paths[i], &st) < 0) {
			check_print(errf, "%s: %s", paths[i], strerror(errno));
			check_status(&k, DW_EXIT_TARGET);
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			check_file(&k, paths[i]);
			continue;
		}
		check_dir(&k, paths[i]);
	}
	for (size_t i = 0; i < k.n_names; i++)
		free(k.names[i].path);
	free(k.names);
	return k.status;
}
