/* dumpwatch check: rule files validated as the guard would load them
 * (rulecheck.h). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "dumpwatch/cli.h"
#include "dumpwatch/cmd.h"
#include "dumpwatch/defaults.h"
#include "dumpwatch/exitcodes.h"
#include "dumpwatch/guard.h"
#include "dumpwatch/rulecheck.h"
#include "dumpwatch/trust.h"

static void help(FILE *f)
{
	cli_help_usage(f, cmd_check.synopsis);
	fputs("Validates rule files as the daemon would; a directory stands for every *.json directly\n"
	      "in it. Each file, the links to it and the directories above them must be root's or\n"
	      "yours and writable by no one else. A rule's dump.dir must lie inside one of the\n"
	      "directories given, as on the daemon's command line.\n"
	      "\n"
	      "options:\n",
	      f);
	cli_help_option(f, "--dump-dir DIR",
	                "the daemon's --dump-dir (repeatable; default " DW_SERVICE_DUMP_DIR ",\n"
	                "the service's)");
	cli_help_option(f, "--allow-dump-dir DIR", "one of the daemon's --allow-dump-dir (repeatable)");
	fputc('\n', f);
	cli_help_exit_codes(f);
}

/* A directory given to check's --dump-dir/--allow-dump-dir: its real path
 * when it exists here, else the path made absolute and normalized (the rules
 * may be checked on another machine than the daemon's). 0 or -errno. */
static int check_dump_dir(const char *dir, char *out, size_t outlen)
{
	char cwd[PATH_MAX], abs[PATH_MAX];

	if (realpath(dir, out))
		return 0;
	if (dir[0] == '/')
		snprintf(abs, sizeof(abs), "%s", dir);
	else if (!getcwd(cwd, sizeof(cwd)) || (size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, dir) >= sizeof(abs))
		return -ENAMETOOLONG;
	return trust_path_normalize(abs, out, outlen);
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {{"dump-dir", required_argument, NULL, 'd'},
	                                     {"allow-dump-dir", required_argument, NULL, 'a'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {NULL, 0, NULL, 0}};
	static char dirs_buf[1 + GUARD_ALLOW_DUMP_DIRS_MAX][PATH_MAX];
	const char *dirs[1 + GUARD_ALLOW_DUMP_DIRS_MAX];
	size_t n_dirs = 0;
	int c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
		case 'a':
			if (n_dirs == sizeof(dirs) / sizeof(dirs[0])) {
				fprintf(stderr, "dumpwatch check: at most %zu dump directories\n", n_dirs);
				return DW_EXIT_USAGE;
			}
			if (check_dump_dir(optarg, dirs_buf[n_dirs], sizeof(dirs_buf[n_dirs])) < 0) {
				fprintf(stderr, "dumpwatch check: %s: not an absolute directory without \"..\"\n",
				        optarg);
				return DW_EXIT_USAGE;
			}
			dirs[n_dirs] = dirs_buf[n_dirs];
			n_dirs++;
			break;
		case 'h':
			help(stdout);
			return DW_EXIT_OK;
		default:
			return DW_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		cli_help_usage(stderr, cmd_check.synopsis);
		return DW_EXIT_USAGE;
	}
	if (n_dirs == 0)
		dirs[n_dirs++] = DW_SERVICE_DUMP_DIR;
	return rulefile_check_paths(argv + optind, (size_t)(argc - optind), dirs, n_dirs, stdout, stderr);
}

const struct cmd cmd_check = {
    .name = "check",
    .run = run,
    .synopsis = "check [--dump-dir DIR] [--allow-dump-dir DIR]... PATH...",
    .summary = "validate rule files (a directory: its *.json)",
};
