/* dumpwatch --rules-dir DIR: the guard's command line, into guard_options
 * (guard.h): the paths made absolute or real, the state directory, the
 * upload's credentials read and its queue placed. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dumpwatch/cli.h"
#include "dumpwatch/cmd.h"
#include "dumpwatch/defaults.h"
#include "dumpwatch/exitcodes.h"
#include "dumpwatch/guard.h"
#include "dumpwatch/log.h"
#include "dumpwatch/target_cli.h"
#include "dumpwatch/units.h"
#include "dumpwatch/upload.h"

enum {
	OPT_STATE_DIR = CLI_VAL_GUARD,
	OPT_ALLOW_DUMP_DIR,
	OPT_SOCKET_DIR,
	OPT_STOP_TIMEOUT,
	OPT_UPLOAD,
	OPT_UPLOAD_ENDPOINT,
	OPT_UPLOAD_REGION,
	OPT_UPLOAD_CREDENTIALS,
	OPT_UPLOAD_PART_SIZE,
	OPT_UPLOAD_KEEP,
	OPT_UPLOAD_PATH_STYLE,
	OPT_METRICS_LISTEN,
	OPT_METRICS_ALLOW,
	OPT_METRICS_FILE,
	OPT_METRICS_INTERVAL,
};

/* Said when the one-process watch is given an option of the guard. */
#define GUARD_ONLY(name) name " is for the guard (--rules-dir)"
static const char upload_only[] = "--upload is for the guard (--rules-dir), whose queue outlives a restart; a "
                                  "one-process watch leaves its dump in --dump-dir";
static const char metrics_only[] = "--metrics-listen, --metrics-allow and --metrics-file are for the guard "
                                   "(--rules-dir)";

static const struct cli_option guard_options[] = {
    {{"rules-dir", required_argument, NULL, 'r'}, GUARD_ONLY("--rules-dir")},
    {{"state-dir", required_argument, NULL, OPT_STATE_DIR}, GUARD_ONLY("--state-dir")},
    {{"allow-dump-dir", required_argument, NULL, OPT_ALLOW_DUMP_DIR},
     "--allow-dump-dir is for --rules-dir: it widens where rule files may send dumps"},
    {{"socket-dir", required_argument, NULL, OPT_SOCKET_DIR}, GUARD_ONLY("--socket-dir")},
    {{"stop-timeout", required_argument, NULL, OPT_STOP_TIMEOUT}, GUARD_ONLY("--stop-timeout")},
    {{"upload", required_argument, NULL, OPT_UPLOAD}, upload_only},
    {{"upload-endpoint", required_argument, NULL, OPT_UPLOAD_ENDPOINT}, upload_only},
    {{"upload-region", required_argument, NULL, OPT_UPLOAD_REGION}, upload_only},
    {{"upload-credentials", required_argument, NULL, OPT_UPLOAD_CREDENTIALS}, upload_only},
    {{"upload-part-size", required_argument, NULL, OPT_UPLOAD_PART_SIZE}, upload_only},
    {{"upload-keep", required_argument, NULL, OPT_UPLOAD_KEEP}, upload_only},
    {{"upload-path-style", no_argument, NULL, OPT_UPLOAD_PATH_STYLE}, upload_only},
    {{"metrics-listen", required_argument, NULL, OPT_METRICS_LISTEN}, metrics_only},
    {{"metrics-allow", required_argument, NULL, OPT_METRICS_ALLOW}, metrics_only},
    {{"metrics-file", required_argument, NULL, OPT_METRICS_FILE}, metrics_only},
    {{"metrics-interval", required_argument, NULL, OPT_METRICS_INTERVAL}, GUARD_ONLY("--metrics-interval")},
    {{NULL, 0, NULL, 0}, NULL},
};

struct guard_cli {
	struct target_cli t;
	const char *rules_dir, *state_dir;
	int64_t stop_timeout_ns;
	const char *socket_dirs[GUARD_SOCKET_DIRS_MAX];
	size_t n_socket_dirs;
	const char *allow_dump_dirs[GUARD_ALLOW_DUMP_DIRS_MAX];
	size_t n_allow_dump_dirs;
	struct upload_options upload; /* bucket "": no --upload */
	const char *upload_credentials;
	const char *metrics_listen, *metrics_allow, *metrics_file;
	int64_t metrics_interval_ns;
};

/* One of the guard's own options into c: 0, or -EINVAL after one line. */
static int guard_option(struct guard_cli *c, int opt, const char *arg)
{
	char err[512];
	double v;

	switch (opt) {
	case 'r':
		c->rules_dir = arg;
		return 0;
	case OPT_STATE_DIR:
		c->state_dir = arg;
		return 0;
	case OPT_SOCKET_DIR:
		if (c->n_socket_dirs == GUARD_SOCKET_DIRS_MAX) {
			log_error("at most %d --socket-dir", GUARD_SOCKET_DIRS_MAX);
			return -EINVAL;
		}
		c->socket_dirs[c->n_socket_dirs++] = arg;
		return 0;
	case OPT_ALLOW_DUMP_DIR:
		if (c->n_allow_dump_dirs == GUARD_ALLOW_DUMP_DIRS_MAX) {
			log_error("at most %d --allow-dump-dir", GUARD_ALLOW_DUMP_DIRS_MAX);
			return -EINVAL;
		}
		c->allow_dump_dirs[c->n_allow_dump_dirs++] = arg;
		return 0;
	case OPT_STOP_TIMEOUT:
		return cli_duration_option("--stop-timeout", arg, &c->stop_timeout_ns);
	case OPT_UPLOAD:
		if (upload_parse_url(arg, &c->upload, err, sizeof(err)) < 0) {
			log_error("%s", err);
			return -EINVAL;
		}
		return 0;
	case OPT_UPLOAD_ENDPOINT:
		if (snprintf(c->upload.endpoint, sizeof(c->upload.endpoint), "%s", arg) >=
		    (int)sizeof(c->upload.endpoint)) {
			log_error("--upload-endpoint: too long");
			return -EINVAL;
		}
		return 0;
	case OPT_UPLOAD_REGION:
		snprintf(c->upload.region, sizeof(c->upload.region), "%s", arg);
		return 0;
	case OPT_UPLOAD_CREDENTIALS:
		c->upload_credentials = arg;
		return 0;
	case OPT_UPLOAD_PART_SIZE:
		if (units_parse_value(arg, UNIT_BYTES, &v, err, sizeof(err)) < 0 || v < (double)S3_PART_MIN ||
		    v > (double)S3_PART_MAX) {
			log_error("--upload-part-size must be a size from 5MiB to 5GiB");
			return -EINVAL;
		}
		c->upload.part_size = (uint64_t)v;
		return 0;
	case OPT_UPLOAD_KEEP:
		if (strcmp(arg, "yes") != 0 && strcmp(arg, "no") != 0) {
			log_error("--upload-keep must be yes or no, not \"%s\"", arg);
			return -EINVAL;
		}
		c->upload.keep_local = strcmp(arg, "yes") == 0;
		return 0;
	case OPT_UPLOAD_PATH_STYLE:
		c->upload.addressing = S3_ADDRESSING_PATH;
		return 0;
	case OPT_METRICS_LISTEN:
		c->metrics_listen = arg;
		return 0;
	case OPT_METRICS_ALLOW:
		c->metrics_allow = arg;
		return 0;
	case OPT_METRICS_FILE:
		if (arg[0] != '/') {
			log_error("--metrics-file takes an absolute path, not \"%s\"", arg);
			return -EINVAL;
		}
		c->metrics_file = arg;
		return 0;
	case OPT_METRICS_INTERVAL:
		if (units_parse_duration(arg, &c->metrics_interval_ns, err, sizeof(err)) < 0 ||
		    c->metrics_interval_ns < DW_METRICS_INTERVAL_MIN_NS ||
		    c->metrics_interval_ns > DW_METRICS_INTERVAL_MAX_NS) {
			log_error("--metrics-interval takes a duration from 1s to 1h, such as 15s; not \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	default:
		return target_cli_option(&c->t, opt, arg) == 0 ? 0 : -EINVAL;
	}
}

/* The state directory of the guard: --state-dir, else the journal's
 * directory, else none (out = ""). */
static void state_dir_of(const struct guard_cli *c, char *out, size_t outlen)
{
	out[0] = '\0';
	if (c->state_dir) {
		snprintf(out, outlen, "%s", c->state_dir);
	} else if (c->t.journal) {
		const char *slash = strrchr(c->t.journal, '/');
		if (!slash)
			snprintf(out, outlen, ".");
		else
			snprintf(out, outlen, "%.*s", (int)(slash == c->t.journal ? 1 : slash - c->t.journal),
			         c->t.journal);
	} else {
		log_warn("no --journal or --state-dir: dump limits will not survive a restart");
	}
}

/* --upload and its companions into go->upload: the endpoint and region
 * defaulted, the credentials read now (a refused file is a usage error at
 * start), the queue beside the state. 0 or -EINVAL after saying why. */
static int upload_options_finish(const struct guard_cli *c, struct guard_options *go, const char *state_dir)
{
	static struct upload_options uo;
	static char qdir[PATH_MAX];
	char err[512];
	const char *env_region = getenv("AWS_REGION");

	uo = c->upload;
	if (!uo.region[0])
		snprintf(uo.region, sizeof(uo.region), "%s",
		         env_region && env_region[0] ? env_region : S3_DEFAULT_REGION);
	if (!uo.endpoint[0])
		snprintf(uo.endpoint, sizeof(uo.endpoint), "https://s3.%s.amazonaws.com", uo.region);
	if (s3_credentials_load(&uo.creds, c->upload_credentials, err, sizeof(err)) < 0) {
		log_error("--upload: %s", err);
		return -EINVAL;
	}
	if (state_dir) {
		snprintf(qdir, sizeof(qdir), "%s/uploads", state_dir);
		uo.queue_dir = qdir;
	} else {
		log_warn("--upload without --state-dir or --journal: uploads still queued at a stop are forgotten");
	}
	go->upload = &uo;
	return 0;
}

/* guard_options of c: the rules directory made absolute (it may not exist
 * yet: it is picked up when it appears), the dump directories as real paths
 * (they must exist; the rules' dump.dir are compared with them as real
 * paths), the state directory. 0, or -EINVAL after saying what was wrong.
 * The strings live in static buffers. */
static int guard_options_of(const struct guard_cli *c, struct guard_options *go)
{
	static char rdir[PATH_MAX], ddir[PATH_MAX], sdir[PATH_MAX], adirs[GUARD_ALLOW_DUMP_DIRS_MAX][PATH_MAX];

	memset(go, 0, sizeof(*go));
	if (c->rules_dir[0] == '/')
		snprintf(rdir, sizeof(rdir), "%s", c->rules_dir);
	else if (!getcwd(sdir, sizeof(sdir)) ||
	         snprintf(rdir, sizeof(rdir), "%s/%s", sdir, c->rules_dir) >= (int)sizeof(rdir)) {
		log_error("--rules-dir %s: path too long", c->rules_dir);
		return -EINVAL;
	}
	if (target_cli_dump_dir(&c->t, ddir) < 0)
		return -EINVAL;
	for (size_t i = 0; i < c->n_allow_dump_dirs; i++) {
		if (!realpath(c->allow_dump_dirs[i], adirs[i])) {
			log_error("--allow-dump-dir %s: %s", c->allow_dump_dirs[i], strerror(errno));
			return -EINVAL;
		}
		go->allow_dump_dirs[i] = adirs[i];
	}
	go->n_allow_dump_dirs = c->n_allow_dump_dirs;
	state_dir_of(c, sdir, sizeof(sdir));
	go->rules_dir = rdir;
	target_cli_target_options(&c->t, ddir, &go->target);
	go->journal_path = c->t.journal;
	go->state_dir = sdir[0] ? sdir : NULL;
	go->stop_timeout_ns = c->stop_timeout_ns;
	for (size_t i = 0; i < c->n_socket_dirs; i++)
		go->socket_dirs[i] = c->socket_dirs[i];
	go->n_socket_dirs = c->n_socket_dirs;
	if (c->upload.bucket[0] && upload_options_finish(c, go, sdir[0] ? sdir : NULL) < 0)
		return -EINVAL;
	go->metrics_listen = c->metrics_listen;
	go->metrics_allow = c->metrics_allow;
	go->metrics_file = c->metrics_file;
	go->metrics_interval_ns = c->metrics_interval_ns;
	return 0;
}

static int run(int argc, char **argv)
{
	static struct guard_cli c;
	static struct guard_options go;
	struct cli_getopt g = {0};
	int opt;

	cli_getopt_add(&g, guard_options);
	cli_getopt_add(&g, target_cli_options);
	memset(&c, 0, sizeof(c));
	target_cli_init(&c.t);
	c.stop_timeout_ns = DW_DEFAULT_STOP_TIMEOUT_NS;
	c.metrics_interval_ns = DW_DEFAULT_METRICS_INTERVAL_NS;
	c.upload.keep_local = 1;
	optind = 0;
	while ((opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1)
		if (opt == '?' || guard_option(&c, opt, optarg) < 0)
			return DW_EXIT_USAGE;
	if (target_cli_finish(&c.t) < 0)
		return DW_EXIT_USAGE;
	if (optind < argc) {
		log_error("unexpected argument \"%s\": the guard takes its processes from the rule files",
		          argv[optind]);
		return DW_EXIT_USAGE;
	}
	if (!c.rules_dir) {
		log_error("the guard needs --rules-dir DIR");
		return DW_EXIT_USAGE;
	}
	if (c.metrics_allow && !c.metrics_listen) {
		log_error("--metrics-allow says who may read the page --metrics-listen serves: give both");
		return DW_EXIT_USAGE;
	}
	if (guard_options_of(&c, &go) < 0)
		return DW_EXIT_USAGE;
	return guard_run(&go);
}

static void help_options(FILE *f)
{
	char stop_timeout[32], metrics_interval[32], part_size[32];

	units_format_duration(DW_DEFAULT_STOP_TIMEOUT_NS, stop_timeout, sizeof(stop_timeout));
	units_format_duration(DW_DEFAULT_METRICS_INTERVAL_NS, metrics_interval, sizeof(metrics_interval));
	snprintf(part_size, sizeof(part_size), "%lluMiB", (unsigned long long)(S3_PART_DEFAULT >> 20));
	cli_help_option(f, "-r, --rules-dir DIR", "the rule files (*.json), watched for changes; SIGHUP reloads");
	cli_help_option(f, "--state-dir DIR", "where limits are kept across restarts (default: beside --journal)");
	cli_help_option(f, "--allow-dump-dir DIR",
	                "a rule's dump.dir may also lie inside DIR (repeatable; by default\n"
	                "only inside --dump-dir)");
	cli_help_option(f, "--socket-dir DIR", "also watch DIR for new diagnostics sockets (repeatable)");
	cli_help_option(f, "--stop-timeout D", "on SIGTERM, how long a dump in progress may take (default %s)",
	                stop_timeout);
	cli_help_option(f, "--upload s3://BUCKET[/PREFIX]",
	                "upload every dump and its context files (rules may opt\n"
	                "out or set their own prefix); a queue beside the state survives restarts");
	cli_help_option(f, "--upload-endpoint URL",
	                "an S3-compatible server (default https://s3.REGION.amazonaws.com)");
	cli_help_option(f, "--upload-region R", "(default $AWS_REGION, else %s)", S3_DEFAULT_REGION);
	cli_help_option(f, "--upload-credentials FILE",
	                "KEY=VALUE lines AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY\n"
	                "[, AWS_SESSION_TOKEN], root's, mode 0600; a relative name is looked\n"
	                "up in $CREDENTIALS_DIRECTORY (default: those variables themselves)");
	cli_help_option(f, "--upload-part-size SIZE", "multipart above this (default %s; 5MiB to 5GiB)", part_size);
	cli_help_option(f, "--upload-keep yes|no", "keep the local files once uploaded (default yes)");
	cli_help_option(f, "--upload-path-style", "http://HOST/BUCKET/KEY even for amazonaws.com");
	cli_help_option(f, "--metrics-listen [ADDR:]PORT",
	                "serve Prometheus metrics of every guarded process and of\n"
	                "dumpwatch at http://ADDR:PORT/metrics (PORT alone: 127.0.0.1;\n"
	                "[::1]:PORT for IPv6); see docs/metrics.md");
	cli_help_option(f, "--metrics-allow LIST",
	                "only these may read the page: users (local clients, by the uid that\n"
	                "owns their socket) and ADDR[/BITS] (by address), comma-separated");
	cli_help_option(f, "--metrics-file PATH",
	                "write the same text to PATH for node_exporter's textfile collector,\n"
	                "replaced atomically (its directory writable by no one else)");
	cli_help_option(f, "--metrics-interval D", "how often --metrics-file is rewritten (default %s)",
	                metrics_interval);
}

const struct cmd cmd_guard = {
    .name = NULL,
    .run = run,
    .synopsis = "--rules-dir DIR [options]",
    .summary = "guard every .NET process the rule files in DIR match",
    .options = guard_options,
    .help_options = help_options,
};
