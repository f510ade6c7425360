/* The options the watch and the guard share; see target_cli.h. */
#include "dumpwatch/target_cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/defaults.h"
#include "dumpwatch/log.h"
#include "dumpwatch/trust.h"
#include "dumpwatch/units.h"

enum {
	OPT_VIA = CLI_VAL_TARGET,
	OPT_CREATEDUMP,
	OPT_COUNTER_INTERVAL,
	OPT_DUMP_TIMEOUT,
	OPT_MIN_FREE,
	OPT_STORE_MAX_SIZE,
	OPT_STORE_MAX_COUNT,
	OPT_STORE_FULL,
	OPT_HISTORY,
	OPT_PROC_INTERVAL,
	OPT_ALL_EVENTS,
	OPT_ALLOC_TICKS,
	OPT_ON_FIRE,
	OPT_ON_DUMP,
	OPT_HOOK_USER,
	OPT_HOOK_TIMEOUT,
	OPT_LOG,
};

const struct cli_option target_cli_options[] = {
    {{"dump-dir", required_argument, NULL, 'd'}, NULL},
    {{"dump-via", required_argument, NULL, OPT_VIA}, NULL},
    {{"createdump", required_argument, NULL, OPT_CREATEDUMP}, NULL},
    {{"journal", required_argument, NULL, 'j'}, NULL},
    {{"counter-interval", required_argument, NULL, OPT_COUNTER_INTERVAL}, NULL},
    {{"dump-timeout", required_argument, NULL, OPT_DUMP_TIMEOUT}, NULL},
    {{"min-free", required_argument, NULL, OPT_MIN_FREE}, NULL},
    {{"store-max-size", required_argument, NULL, OPT_STORE_MAX_SIZE}, NULL},
    {{"store-max-count", required_argument, NULL, OPT_STORE_MAX_COUNT}, NULL},
    {{"store-full", required_argument, NULL, OPT_STORE_FULL}, NULL},
    {{"history", required_argument, NULL, OPT_HISTORY}, NULL},
    {{"proc-interval", required_argument, NULL, OPT_PROC_INTERVAL}, NULL},
    {{"all-events", no_argument, NULL, OPT_ALL_EVENTS}, NULL},
    {{"alloc-ticks", required_argument, NULL, OPT_ALLOC_TICKS}, NULL},
    {{"on-fire", required_argument, NULL, OPT_ON_FIRE}, NULL},
    {{"on-dump", required_argument, NULL, OPT_ON_DUMP}, NULL},
    {{"hook-user", required_argument, NULL, OPT_HOOK_USER}, NULL},
    {{"hook-timeout", required_argument, NULL, OPT_HOOK_TIMEOUT}, NULL},
    {{"log", required_argument, NULL, OPT_LOG}, NULL},
    {{"verbose", no_argument, NULL, 'v'}, NULL},
    {{NULL, 0, NULL, 0}, NULL},
};

/* The values --dump-via takes. */
static const struct {
	const char *name;
	enum dump_via via;
} dump_vias[] = {{"runtime", DUMP_VIA_RUNTIME}, {"exec", DUMP_VIA_EXEC}, {"auto", DUMP_VIA_AUTO}};

static const char *dump_via_name(enum dump_via via)
{
	for (size_t i = 0; i < sizeof(dump_vias) / sizeof(dump_vias[0]); i++)
		if (dump_vias[i].via == via)
			return dump_vias[i].name;
	return "?";
}

/* --dump-via: 0, or -EINVAL for a name not in dump_vias. */
static int dump_via_parse(const char *text, enum dump_via *out)
{
	for (size_t i = 0; i < sizeof(dump_vias) / sizeof(dump_vias[0]); i++)
		if (strcmp(text, dump_vias[i].name) == 0) {
			*out = dump_vias[i].via;
			return 0;
		}
	return -EINVAL;
}

void target_cli_init(struct target_cli *c)
{
	memset(c, 0, sizeof(*c));
	c->dump_dir = DW_DEFAULT_DUMP_DIR;
	c->via = DUMP_VIA_DEFAULT;
	c->counter_interval_ns = DW_DEFAULT_COUNTER_INTERVAL_NS;
	c->dump_timeout_ns = DW_DEFAULT_DUMP_TIMEOUT_NS;
	c->history_ns = DW_DEFAULT_HISTORY_NS;
	c->proc_interval_ns = DW_DEFAULT_PROC_INTERVAL_NS;
	c->store.min_free_pct = DW_DEFAULT_MIN_FREE_PCT;
}

/* --min-free: a size ("20GB") or a percentage of the file system ("10%"). */
static int min_free_option(const char *text, struct store_limits *l)
{
	char err[256];
	double v;

	if (strchr(text, '%')) {
		if (units_parse_value(text, UNIT_PERCENT, &v, err, sizeof(err)) < 0) {
			log_error("--min-free: %s", err);
			return -EINVAL;
		}
		l->min_free_pct = v;
		l->min_free_bytes = 0;
	} else {
		if (units_parse_value(text, UNIT_BYTES, &v, err, sizeof(err)) < 0) {
			log_error("--min-free needs a size (20GB) or a percentage (10%%): %s", err);
			return -EINVAL;
		}
		l->min_free_bytes = (uint64_t)v;
		l->min_free_pct = 0;
	}
	return 0;
}

/* --on-fire, --on-dump: split, and the program checked now as createdump is,
 * so that a file root must not run is a usage error at start. */
static int hook_option(const char *name, const char *arg, struct hook_cmd *cmd)
{
	char err[512], real[PATH_MAX];

	if (hook_cmd_parse(arg, cmd, err, sizeof(err)) < 0 ||
	    trust_exec_path(hook_cmd_arg(cmd, 0), "hook", real, sizeof(real), err, sizeof(err)) < 0) {
		log_error("%s: %s", name, err);
		return -EINVAL;
	}
	return 0;
}

/* --createdump: checked now, so that a file root must not run is a usage
 * error at start, not a failed dump at 3 a.m. */
static int createdump_option(const char *arg)
{
	char resolved[PATH_MAX], err[512];

	if (dump_find_createdump(NULL, arg, resolved, sizeof(resolved), err, sizeof(err)) < 0) {
		log_error("--createdump: %s", err);
		return -EINVAL;
	}
	return 0;
}

int target_cli_option(struct target_cli *c, int opt, const char *arg)
{
	char err[512];
	double v;
	long n;

	switch (opt) {
	case 'd':
		c->dump_dir = arg;
		return 0;
	case OPT_VIA:
		if (dump_via_parse(arg, &c->via) < 0) {
			log_error("--dump-via must be runtime, exec or auto, not \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_CREATEDUMP:
		if (createdump_option(arg) < 0)
			return -EINVAL;
		c->createdump = arg;
		return 0;
	case 'j':
		c->journal = arg;
		return 0;
	case OPT_COUNTER_INTERVAL:
		if (units_parse_duration(arg, &c->counter_interval_ns, err, sizeof(err)) < 0 ||
		    c->counter_interval_ns < DW_COUNTER_INTERVAL_MIN_NS ||
		    c->counter_interval_ns > 3600 * DW_NS_PER_SEC || c->counter_interval_ns % 1000000 != 0) {
			log_error("--counter-interval takes a duration in milliseconds from 50ms to 1h, such as 1s; "
			          "not \"%s\"",
			          arg);
			return -EINVAL;
		}
		return 0;
	case OPT_DUMP_TIMEOUT:
		return cli_duration_option("--dump-timeout", arg, &c->dump_timeout_ns);
	case OPT_MIN_FREE:
		return min_free_option(arg, &c->store);
	case OPT_STORE_MAX_SIZE:
		if (units_parse_value(arg, UNIT_BYTES, &v, err, sizeof(err)) < 0) {
			log_error("--store-max-size: %s", err);
			return -EINVAL;
		}
		c->store.max_bytes = (uint64_t)v;
		return 0;
	case OPT_STORE_MAX_COUNT:
		if (cli_count_option("--store-max-count", arg, 1000000, &n) < 0)
			return -EINVAL;
		c->store.max_count = (uint32_t)n;
		return 0;
	case OPT_STORE_FULL:
		if (strcmp(arg, "skip") == 0)
			c->store.delete_oldest = 0;
		else if (strcmp(arg, "delete-oldest") == 0)
			c->store.delete_oldest = 1;
		else {
			log_error("--store-full must be skip or delete-oldest, not \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_HISTORY:
		if (units_parse_duration(arg, &c->history_ns, err, sizeof(err)) < 0 || c->history_ns < DW_NS_PER_SEC ||
		    c->history_ns > DW_HISTORY_MAX_NS) {
			log_error("--history takes a duration from 1s to 1h, such as 5m; not \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_PROC_INTERVAL:
		if (units_parse_duration(arg, &c->proc_interval_ns, err, sizeof(err)) < 0 ||
		    c->proc_interval_ns < DW_PROC_INTERVAL_MIN_NS || c->proc_interval_ns > DW_PROC_INTERVAL_MAX_NS) {
			log_error("--proc-interval takes a duration from 10ms to 1m, such as 100ms; not \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_ALL_EVENTS:
		c->all_events = 1;
		return 0;
	case OPT_ALLOC_TICKS:
		if (strcmp(arg, "near") != 0 && strcmp(arg, "always") != 0) {
			log_error("--alloc-ticks takes near or always; not \"%s\"", arg);
			return -EINVAL;
		}
		c->ticks_always = strcmp(arg, "always") == 0;
		c->ticks_set = 1;
		return 0;
	case OPT_ON_FIRE:
		return hook_option("--on-fire", arg, &c->on_fire);
	case OPT_ON_DUMP:
		return hook_option("--on-dump", arg, &c->on_dump);
	case OPT_HOOK_USER:
		c->hook_user = arg;
		return 0;
	case OPT_HOOK_TIMEOUT:
		if (cli_duration_option("--hook-timeout", arg, &c->hook_timeout_ns) < 0)
			return -EINVAL;
		if (c->hook_timeout_ns < DW_NS_PER_SEC || c->hook_timeout_ns > 24 * 3600 * DW_NS_PER_SEC) {
			log_error("--hook-timeout must be from 1s to 24h");
			return -EINVAL;
		}
		return 0;
	case OPT_LOG:
		if (strcmp(arg, "journald") == 0)
			log_set_journald(1);
		else if (strcmp(arg, "stderr") == 0)
			log_set_journald(0);
		else {
			log_error("--log must be journald or stderr, not \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case 'v':
		c->verbose = 1;
		return 0;
	default:
		return -ENOENT;
	}
}

int target_cli_finish(struct target_cli *c)
{
	if (c->createdump) {
		if (c->via == DUMP_VIA_RUNTIME) {
			log_error("--createdump is what --dump-via exec runs; it cannot go with --dump-via runtime");
			return -EINVAL;
		}
		c->via = DUMP_VIA_EXEC;
	}
	return 0;
}

int target_cli_dump_dir(const struct target_cli *c, char *out)
{
	if (!realpath(c->dump_dir, out)) {
		log_error("dump directory %s: %s", c->dump_dir, strerror(errno));
		return -EINVAL;
	}
	return 0;
}

void target_cli_target_options(const struct target_cli *c, const char *dump_dir, struct target_options *to)
{
	*to = (struct target_options){
	    .dump_dir = dump_dir,
	    .via = c->via,
	    .store = c->store,
	    .dump_timeout_ns = c->dump_timeout_ns,
	    .createdump = c->createdump,
	    .counter_interval_ms = (uint32_t)(c->counter_interval_ns / 1000000),
	    .all_events = c->all_events,
	    .ticks_always = c->ticks_always,
	    .verbose = c->verbose,
	    .history_ns = c->history_ns,
	    .proc_interval_ns = c->proc_interval_ns,
	    .on_fire = c->on_fire,
	    .on_dump = c->on_dump,
	    .hook_user = c->hook_user,
	    .hook_timeout_ns = c->hook_timeout_ns,
	};
}

void target_cli_help(FILE *f)
{
	char counter_interval[32], dump_timeout[32], min_free[32], history[32], proc_interval[32], hook_timeout[32];

	units_format_duration(DW_DEFAULT_COUNTER_INTERVAL_NS, counter_interval, sizeof(counter_interval));
	units_format_duration(DW_DEFAULT_DUMP_TIMEOUT_NS, dump_timeout, sizeof(dump_timeout));
	units_format(DW_DEFAULT_MIN_FREE_PCT, UNIT_PERCENT, min_free, sizeof(min_free));
	units_format_duration(DW_DEFAULT_HISTORY_NS, history, sizeof(history));
	units_format_duration(DW_DEFAULT_PROC_INTERVAL_NS, proc_interval, sizeof(proc_interval));
	units_format_duration(DW_DEFAULT_HOOK_TIMEOUT_NS, hook_timeout, sizeof(hook_timeout));
	cli_help_option(f, "-d, --dump-dir DIR", "where dumps go (default %s, the current directory)",
	                DW_DEFAULT_DUMP_DIR);
	cli_help_option(f, "--dump-via HOW", "runtime | exec | auto (default %s: the runtime's dump command)",
	                dump_via_name(DUMP_VIA_DEFAULT));
	cli_help_option(f, "--createdump PATH",
	                "the createdump that --dump-via exec runs (default: the host's runtime\n"
	                "of the target's version); implies --dump-via exec");
	cli_help_option(f, "-j, --journal FILE", "append a JSON line for every attach, fire, dump and failure");
	cli_help_option(f, "--counter-interval DURATION", "EventCounters interval (default %s; 50ms to 1h)",
	                counter_interval);
	cli_help_option(f, "--dump-timeout D", "kill a createdump still running after D (default %s; 0 = no limit)",
	                dump_timeout);
	cli_help_option(f, "--min-free SIZE|PCT",
	                "skip a dump that would leave less free on the dump file system\n"
	                "(e.g. 20GB or 10%%; default %s; 0 = no minimum)",
	                min_free);
	cli_help_option(f, "--store-max-size SIZE", "at most this much in stored dumps (default no limit)");
	cli_help_option(f, "--store-max-count N", "at most N stored dumps (default no limit)");
	cli_help_option(f, "--store-full skip|delete-oldest", "when a dump would break those (default skip)");
	cli_help_option(f, "--history DURATION",
	                "metric history shown in each dump's context files NAME.json and\n"
	                "NAME.svg beside it (default %s; 1s to 1h)",
	                history);
	cli_help_option(f, "--proc-interval D",
	                "how often rss, private-memory, swap, threads and fds are read from\n"
	                "/proc (default %s; 10ms to 1m)",
	                proc_interval);
	cli_help_option(f, "--all-events",
	                "subscribe to every event of the keywords the rules need, not only\n"
	                "those dumpwatch reads (.NET 10 filters by event id; for comparison)");
	cli_help_option(f, "--alloc-ticks near|always",
	                "when rules on sizes and allocation rates take allocation ticks: only\n"
	                "while one is near its threshold (default near; far from it the\n"
	                "counters bound them), or always (allocation by type covers all the\n"
	                "history, at a cost; what the PID MB form takes unless told)");
	cli_help_option(f, "--on-fire CMD",
	                "run CMD when a rule fires: a program (absolute path, root's) and its\n"
	                "arguments, no shell; DUMPWATCH_* variables say what happened");
	cli_help_option(f, "--on-dump CMD", "run CMD when a rule's dump is written, as --on-fire");
	cli_help_option(f, "--hook-user USER",
	                "whom hooks run as (default, as root: a uid of its own for each run;\n"
	                "never root or nobody)");
	cli_help_option(f, "--hook-timeout D", "kill a hook, and all it started, still running after D (default %s)",
	                hook_timeout);
	cli_help_option(f, "--log journald|stderr",
	                "priority prefixes for journald (default: when JOURNAL_STREAM is set)");
	cli_help_option(f, "-v, --verbose", "print metrics as they arrive");
}
