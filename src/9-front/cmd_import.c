/* dumpwatch import dotnet-monitor: a rule file for each collection rule of
 * dotnet-monitor settings, converted by dmimport.h; this file reads the
 * settings and writes the rule files. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpwatch/cli.h"
#include "dumpwatch/cmd.h"
#include "dumpwatch/dmimport.h"
#include "dumpwatch/exitcodes.h"
#include "dumpwatch/fds.h"
#include "dumpwatch/rulefile_io.h"

static void help(FILE *f)
{
	cli_help_usage(f, cmd_import.synopsis);
	fprintf(f,
	        "  reads dotnet-monitor settings (JSON with \"CollectionRules\", or a ConfigMap's\n"
	        "  CollectionRules__NAME__... keys; at most 1 MiB and %d rules) and writes DIR/NAME.json\n"
	        "  for each collection rule with a CollectDump action: filters to process.name,\n"
	        "  process.cmdline and process.pid, EventCounter, EventMeter and the CPUUsage,\n"
	        "  GCHeapSize and ThreadpoolQueueLength shortcuts to conditions, the dump type, and\n"
	        "  Limits to max-dumps and window (cooldown: the trigger's window). Every written file\n"
	        "  passes `dumpwatch check`. Each part not carried over is one line on standard output,\n"
	        "  \"FILE: rule NAME: WHAT\", then a summary. Files are written whole (mode 0644) or not\n"
	        "  at all; an existing one is kept, and nothing written, unless --force replaces it.\n"
	        "  Exit 0 when at least one rule was written and every file could be; 1 on a bad\n"
	        "  command line, settings that are not JSON or hold no importable rule, or a file\n"
	        "  that exists; 2 when FILE cannot be read or DIR not written.\n"
	        "\n"
	        "options:\n",
	        DMIMPORT_RULES_MAX);
	cli_help_option(f, "--out DIR", "where the rule files go (made when missing; its parent must exist)");
	cli_help_option(f, "--force", "replace rule files of the same names in DIR");
	fputc('\n', f);
	cli_help_exit_codes(f);
}

/* Writes text to dir/name.json (fds_write_file: whole or not at all, mode
 * 0644); without force an existing file is kept and -EEXIST returned. 0 or
 * -errno. */
static int import_write(const char *dir, const char *name, const char *text, int force)
{
	char file[NAME_MAX + 1];
	int dfd, r;

	if ((size_t)snprintf(file, sizeof(file), "%s.json", name) >= sizeof(file))
		return -ENAMETOOLONG;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	r = fds_write_file(dfd, file, text, strlen(text), 0644, !force);
	close(dfd);
	return r;
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {{"out", required_argument, NULL, 'o'},
	                                     {"force", no_argument, NULL, 'f'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {NULL, 0, NULL, 0}};
	struct dmimport_result res;
	const char *out = NULL, *file;
	char err[PATH_MAX + 512], path[PATH_MAX];
	char *text = NULL;
	size_t len, n_exist = 0, n_written = 0, n_failed = 0;
	struct stat st;
	int c, force = 0, r;

	optind = 0;
	while ((c = getopt_long(argc, argv, "o:fh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'f':
			force = 1;
			break;
		case 'h':
			help(stdout);
			return DW_EXIT_OK;
		default:
			return DW_EXIT_USAGE;
		}
	}
	if (argc - optind != 2 || strcmp(argv[optind], "dotnet-monitor") != 0 || !out) {
		cli_help_usage(stderr, cmd_import.synopsis);
		return DW_EXIT_USAGE;
	}
	file = argv[optind + 1];
	/* DIR is made when missing (its parent must exist); a path that is
	 * something else is refused. */
	if (stat(out, &st) < 0 && errno == ENOENT && mkdir(out, 0755) < 0) {
		fprintf(stderr, "dumpwatch import: cannot create %s: %s\n", out, strerror(errno));
		return DW_EXIT_TARGET;
	}
	if (stat(out, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "dumpwatch import: %s: %s\n", out,
		        errno == ENOENT ? strerror(errno) : "not a directory");
		return DW_EXIT_TARGET;
	}
	if (rulefile_read(file, &text, &len, err, sizeof(err)) < 0) {
		fprintf(stderr, "dumpwatch import: %s\n", err);
		return DW_EXIT_TARGET;
	}
	r = dmimport_convert(text, len, file, &res, err, sizeof(err));
	free(text);
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", file, err);
		return r == -ENOMEM ? DW_EXIT_RUNTIME : DW_EXIT_USAGE;
	}
	for (size_t i = 0; i < res.n_notes; i++) {
		if (res.notes[i].rule[0])
			printf("%s: rule %s: %s\n", file, res.notes[i].rule, res.notes[i].text);
		else
			printf("%s: %s\n", file, res.notes[i].text);
	}
	/* All or nothing against what is there: a partial import that left some
	 * old rules beside new ones would be hard to see. */
	for (size_t i = 0; !force && i < res.n_rules; i++) {
		snprintf(path, sizeof(path), "%s/%s.json", out, res.rules[i].name);
		if (lstat(path, &st) == 0) {
			fprintf(stderr, "dumpwatch import: %s exists: nothing written (--force replaces it)\n", path);
			n_exist++;
		}
	}
	for (size_t i = 0; n_exist == 0 && i < res.n_rules; i++) {
		r = import_write(out, res.rules[i].name, res.rules[i].text, force);
		if (r < 0) {
			fprintf(stderr, "dumpwatch import: %s/%s.json: %s\n", out, res.rules[i].name, strerror(-r));
			n_failed++;
		} else {
			n_written++;
		}
	}
	printf("%s: %zu of %zu collection rules written to %s, %zu notes\n", file, n_written, res.n_source_rules, out,
	       res.n_notes);
	r = n_failed ? DW_EXIT_TARGET : n_exist || res.n_rules == 0 ? DW_EXIT_USAGE : DW_EXIT_OK;
	dmimport_result_free(&res);
	return r;
}

const struct cmd cmd_import = {
    .name = "import",
    .run = run,
    .synopsis = "import dotnet-monitor FILE --out DIR [--force]",
    .summary = "write a rule file in DIR for each collection rule of dotnet-monitor settings FILE",
};
