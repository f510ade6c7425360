/* Unit tests of the command line's shared pieces (cli.c) and of the option
 * tables of the watch, the guard and what they share (cmd_watch.c,
 * cmd_guard.c, target_cli.c): the tables joined for getopt_long, no option
 * or code in two of them, a refusal line for every option of one of the two
 * modes, every option of a table in --help's list of it (the page's lists
 * are held against --help by test_manpages.sh), the layout of that list,
 * and the values several commands parse. */
#include "dumpwatch/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dumpwatch/cmd.h"
#include "dumpwatch/target_cli.h"

static size_t table_len(const struct cli_option *t)
{
	size_t n = 0;
	while (t[n].o.name)
		n++;
	return n;
}

static void test_getopt_add(void)
{
	static const struct cli_option a[] = {{{"pid", required_argument, NULL, 'p'}, NULL},
	                                      {{"verbose", no_argument, NULL, 'v'}, NULL},
	                                      {{"long-only", required_argument, NULL, CLI_VAL_WATCH}, NULL},
	                                      {{NULL, 0, NULL, 0}, NULL}};
	static const struct cli_option b[] = {{{"rules-dir", required_argument, NULL, 'r'}, NULL},
	                                      {{NULL, 0, NULL, 0}, NULL}};
	struct cli_getopt g = {0};

	cli_getopt_add(&g, a);
	cli_getopt_add(&g, b);
	CHECK(g.n == 4);
	CHECK_STR(g.shorts, "p:vr:");
	CHECK_STR(g.longs[2].name, "long-only");
	CHECK_STR(g.longs[3].name, "rules-dir");
	CHECK(g.longs[4].name == NULL && g.longs[4].val == 0);
	CHECK(cli_option_find(a, CLI_VAL_WATCH) == &a[2]);
	CHECK(cli_option_find(a, 'r') == NULL);
}

/* The three tables of the watch's and the guard's command lines. */
static void test_tables(void)
{
	const struct cli_option *tables[] = {target_cli_options, cmd_watch.options, cmd_guard.options};
	struct cli_getopt g = {0};

	for (size_t t = 0; t < 3; t++)
		cli_getopt_add(&g, tables[t]);
	CHECK(g.n == table_len(target_cli_options) + table_len(cmd_watch.options) + table_len(cmd_guard.options));
	for (size_t i = 0; i < g.n; i++)
		for (size_t j = i + 1; j < g.n; j++) {
			CHECK_MSG(strcmp(g.longs[i].name, g.longs[j].name) != 0, "--%s twice", g.longs[i].name);
			CHECK_MSG(g.longs[i].val != g.longs[j].val, "--%s and --%s share a code", g.longs[i].name,
			          g.longs[j].name);
		}
	/* Shared options are refused by neither; each of a mode's own is
	 * refused by the other with a line of its own. */
	for (const struct cli_option *c = target_cli_options; c->o.name; c++)
		CHECK_MSG(c->elsewhere == NULL, "--%s is shared, yet has a refusal", c->o.name);
	for (size_t t = 1; t < 3; t++)
		for (const struct cli_option *c = tables[t]; c->o.name; c++)
			CHECK_MSG(c->elsewhere && c->elsewhere[0], "--%s has no refusal line", c->o.name);
	CHECK(cmd_watch.operands_elsewhere && strstr(cmd_watch.operands_elsewhere, "PID MB"));
	CHECK(cli_option_find(cmd_guard.options, 'r') != NULL);
	CHECK(strstr(cli_option_find(cmd_guard.options, 'r')->elsewhere, "--rules-dir"));
}

/* Every option of table is an entry of the list help prints. */
static void check_listed(const struct cli_option *table, void (*help)(FILE *f), const char *what)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	/* After a newline, so that the first entry is found as the others. */
	fputc('\n', f);
	help(f);
	fclose(f);
	for (const struct cli_option *c = table; c->o.name; c++) {
		char entry[128];
		if (c->o.val < 128)
			snprintf(entry, sizeof(entry), "\n  -%c, --%s", c->o.val, c->o.name);
		else
			snprintf(entry, sizeof(entry), "\n      --%s", c->o.name);
		const char *at = strstr(text, entry);
		CHECK_MSG(at && (at[strlen(entry)] == ' ' || at[strlen(entry)] == '\n'), "%s: no entry \"%s\"", what,
		          entry + 1);
	}
	free(text);
}

static void test_help_lists(void)
{
	check_listed(target_cli_options, target_cli_help, "shared");
	check_listed(cmd_watch.options, cmd_watch.help_options, "watch");
	check_listed(cmd_guard.options, cmd_guard.help_options, "guard");
}

static void test_help_layout(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cli_help_option(f, "-p, --pid PID", "the process");
	cli_help_option(f, "--json", "as JSON (%d)", 1);
	cli_help_option(f, "--counter-interval DURATION", "one\ntwo");
	cli_help_usage(f, "gc --pid PID\n     [--format F]\nps");
	fclose(f);
	CHECK_STR(text, "  -p, --pid PID            the process\n"
	                "      --json               as JSON (1)\n"
	                "      --counter-interval DURATION  one\n"
	                "                           two\n"
	                "usage: dumpwatch gc --pid PID\n"
	                "                      [--format F]\n"
	                "       dumpwatch ps\n");
	free(text);
}

static void test_values(void)
{
	pid_t pid = 0;
	long n = -1;
	int64_t ns = 0;

	CHECK(cli_parse_pid("4807", &pid) == 0 && pid == 4807);
	CHECK(cli_parse_pid("0", &pid) == -EINVAL);
	CHECK(cli_parse_pid("-1", &pid) == -EINVAL);
	CHECK(cli_parse_pid("12x", &pid) == -EINVAL);
	CHECK(cli_parse_pid("", &pid) == -EINVAL);
	CHECK(cli_parse_pid("2147483648", &pid) == -EINVAL);
	CHECK(cli_count_option("--max-dumps", "0", 10, &n) == 0 && n == 0);
	CHECK(cli_count_option("--max-dumps", "10", 10, &n) == 0 && n == 10);
	CHECK(cli_count_option("--max-dumps", "11", 10, &n) == -EINVAL);
	CHECK(cli_count_option("--max-dumps", "-1", 10, &n) == -EINVAL);
	CHECK(cli_duration_option("--cooldown", "1500ms", &ns) == 0 && ns == 1500000000LL);
	CHECK(cli_duration_option("--cooldown", "soon", &ns) == -EINVAL);
}

int main(void)
{
	test_getopt_add();
	test_tables();
	test_help_lists();
	test_help_layout();
	test_values();
	return check_done();
}
