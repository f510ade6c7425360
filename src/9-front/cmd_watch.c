/* dumpwatch PID MB, dumpwatch --pid PID --when EXPR...: the one-process
 * watch's command line, into watch_options (watch.h). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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
#include "dumpwatch/watch.h"

enum {
	OPT_LAUNCHER = CLI_VAL_WATCH,
	OPT_HEAP_SUMMARY,
};

/* Said when the guard is given the watch's rule, limits or PID MB. */
static const char watch_only[] = "--rules-dir takes its rules, limits and processes from the rule files; --pid, "
                                 "--when, --dump-type, --heap-summary, --max-dumps, --cooldown and PID MB are for "
                                 "watching one "
                                 "process";

static const struct cli_option watch_options[] = {
    {{"pid", required_argument, NULL, 'p'}, watch_only},
    {{"when", required_argument, NULL, 'w'}, watch_only},
    {{"dump-type", required_argument, NULL, 't'}, watch_only},
    {{"heap-summary", no_argument, NULL, OPT_HEAP_SUMMARY}, watch_only},
    {{"max-dumps", required_argument, NULL, 'n'}, watch_only},
    {{"cooldown", required_argument, NULL, 'c'}, watch_only},
    {{"launcher", required_argument, NULL, OPT_LAUNCHER},
     "--launcher is for watching one process from a desktop session; the guard is a service"},
    {{NULL, 0, NULL, 0}, NULL},
};

struct watch_cli {
	struct target_cli t;
	pid_t pid;
	struct rule rule; /* --when conditions, --dump-type */
	long max_dumps;
	int64_t cooldown_ns;
	const char *launcher; /* NULL: not given */
};

/* One of the watch's own options into c: 0, or -EINVAL after one line. */
static int watch_option(struct watch_cli *c, int opt, const char *arg)
{
	char err[512];

	switch (opt) {
	case 'p':
		return cli_pid_option(arg, &c->pid);
	case 'w':
		if (c->rule.n_conds == RULE_MAX_CONDS) {
			log_error("at most %d --when conditions", RULE_MAX_CONDS);
			return -EINVAL;
		}
		if (rule_cond_parse(arg, &c->rule.conds[c->rule.n_conds], err, sizeof(err)) < 0) {
			log_error("--when '%s': %s", arg, err);
			return -EINVAL;
		}
		c->rule.n_conds++;
		return 0;
	case 't':
		if (rule_dump_type_parse(arg, &c->rule.dump_type) < 0) {
			log_error("--dump-type must be normal, withheap, triage, full or gcdump, not \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_HEAP_SUMMARY:
		c->rule.heap_summary = 1;
		return 0;
	case 'n':
		return cli_count_option("--max-dumps", arg, 100000, &c->max_dumps);
	case 'c':
		return cli_duration_option("--cooldown", arg, &c->cooldown_ns);
	case OPT_LAUNCHER:
		/* A desktop file id: a plain file name, as docks look them up. */
		if (strcmp(arg, "off") != 0 && !launcher_desktop_id_ok(arg)) {
			log_error("--launcher takes a desktop file id such as dumpwatch.desktop, or off; not \"%s\"",
			          arg);
			return -EINVAL;
		}
		c->launcher = arg;
		return 0;
	default:
		return target_cli_option(&c->t, opt, arg) == 0 ? 0 : -EINVAL;
	}
}

/* The rule of the classic form `dumpwatch PID MB`: --pid PID --when
 * 'heap-size > MBMB'. 0, or -EINVAL after saying what was wrong. */
static int rule_from_pid_mb(const char *pid_text, const char *mb_text, pid_t *ret_pid, struct rule *rule)
{
	char text[RULE_TEXT_MAX], err[512], *end;
	double mb;

	if (cli_parse_pid(pid_text, ret_pid) < 0) {
		log_error("\"%s\" is not a process id", pid_text);
		return -EINVAL;
	}
	mb = strtod(mb_text, &end);
	if (*end || end == mb_text || !(mb > 0)) {
		log_error("\"%s\" is not a size in MB (a number such as 500)", mb_text);
		return -EINVAL;
	}
	snprintf(text, sizeof(text), "heap-size > %sMB", mb_text);
	if (rule_cond_parse(text, &rule->conds[0], err, sizeof(err)) < 0) {
		log_error("%s", err);
		return -EINVAL;
	}
	rule->n_conds = 1;
	return 0;
}

/* The name of the command line's rule: its conditions joined by " and ",
 * made a rule name (rule_name_from_text). */
static void rule_name_from_conds(struct rule *rule)
{
	char joined[RULE_TEXT_MAX * 2] = "";

	for (uint32_t i = 0; i < rule->n_conds; i++) {
		if (i)
			strncat(joined, " and ", sizeof(joined) - strlen(joined) - 1);
		strncat(joined, rule->conds[i].text, sizeof(joined) - strlen(joined) - 1);
	}
	rule_name_from_text(joined, rule->name, sizeof(rule->name));
}

static int run(int argc, char **argv)
{
	static struct watch_cli c;
	static char dir[PATH_MAX];
	struct cli_getopt g = {0};
	struct watch_options o;
	int opt;

	cli_getopt_add(&g, watch_options);
	cli_getopt_add(&g, target_cli_options);
	memset(&c, 0, sizeof(c));
	target_cli_init(&c.t);
	c.rule.dump_type = RULE_DEFAULT_DUMP_TYPE;
	c.max_dumps = DW_DEFAULT_MAX_DUMPS;
	c.cooldown_ns = DW_DEFAULT_WATCH_COOLDOWN_NS;
	optind = 0;
	while ((opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1)
		if (opt == '?' || watch_option(&c, opt, optarg) < 0)
			return DW_EXIT_USAGE;
	if (target_cli_finish(&c.t) < 0)
		return DW_EXIT_USAGE;
	if (argc - optind == 2 && !c.pid && c.rule.n_conds == 0) {
		if (rule_from_pid_mb(argv[optind], argv[optind + 1], &c.pid, &c.rule) < 0)
			return DW_EXIT_USAGE;
		/* An incident watch: what filled the heap matters more than
		 * the ticks' cost, so its allocation by type covers all of it. */
		if (!c.t.ticks_set)
			c.t.ticks_always = 1;
	} else if (optind < argc) {
		log_error("unexpected argument \"%s\"", argv[optind]);
		cli_help_usage(stderr, cmd_watch.synopsis);
		return DW_EXIT_USAGE;
	}
	if (!c.pid || c.rule.n_conds == 0) {
		log_error("watching one process needs --pid PID and --when EXPR, or PID MB");
		cli_help_usage(stderr, cmd_watch.synopsis);
		return DW_EXIT_USAGE;
	}
	if (target_cli_dump_dir(&c.t, dir) < 0)
		return DW_EXIT_USAGE;
	rule_name_from_conds(&c.rule);
	c.rule.limits.max_dumps = (uint32_t)c.max_dumps;
	c.rule.limits.cooldown_ns = c.cooldown_ns;
	memset(&o, 0, sizeof(o));
	o.pid = c.pid;
	o.rules = &c.rule;
	o.n_rules = 1;
	target_cli_target_options(&c.t, dir, &o.target);
	o.journal_path = c.t.journal;
	o.launcher = c.launcher ? c.launcher : LAUNCHER_DEFAULT_ID;
	return watch_run(&o);
}

static void help_options(FILE *f)
{
	char cooldown[32], helper[PATH_MAX], why[PATH_MAX + 256];

	units_format_duration(DW_DEFAULT_WATCH_COOLDOWN_NS, cooldown, sizeof(cooldown));
	cli_help_option(f, "-p, --pid PID", "the process to watch");
	cli_help_option(f, "-w, --when EXPR", "a condition (repeatable; all must hold)");
	cli_help_option(f, "-t, --dump-type TYPE", "normal | withheap | triage | full | gcdump (default %s)",
	                rule_dump_type_name(RULE_DEFAULT_DUMP_TYPE));
	cli_help_option(f, "--heap-summary",
	                "after the dump, a heap snapshot for its context: the heap\n"
	                "by type and what holds it (induces a full blocking GC)");
	cli_help_option(f, "-n, --max-dumps N", "exit after the N-th dump (default %d; 0 = no limit)",
	                DW_DEFAULT_MAX_DUMPS);
	cli_help_option(f, "-c, --cooldown DURATION", "least time between two dumps (default %s)", cooldown);
	cli_help_option(f, "--launcher ID|off",
	                "show dumps on the desktop launcher entry ID (default %s;\n"
	                "a sudo run shows them to the user who ran sudo)%s",
	                LAUNCHER_DEFAULT_ID,
	                launcher_helper(helper, sizeof(helper), why, sizeof(why)) < 0
	                    ? "; no launcher helper: --version says why"
	                    : "");
}

const struct cmd cmd_watch = {
    .name = NULL,
    .run = run,
    .synopsis = "PID MB\n--pid PID --when EXPR [--when EXPR ...] [options]",
    .summary = "dump PID when its GC heap passes MB megabytes, then exit; or when every EXPR holds",
    .options = watch_options,
    .help_options = help_options,
    .operands_elsewhere = watch_only,
};
