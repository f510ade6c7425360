/* Unit tests for exitcodes.c: the table holds every DW_EXIT_* code once, in
 * order, and the README's exit-status table says word for word what the C
 * table says (the README is read from DW_SOURCE_DIR, set by CMake). */
#include "dumpwatch/exitcodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#ifndef DW_SOURCE_DIR
#error "DW_SOURCE_DIR must name the source tree (CMakeLists.txt sets it)"
#endif

#define README_HEADER "| code | name | meaning |"

static void test_table(void)
{
	static const struct {
		int code;
		const char *name;
	} named[] = {{DW_EXIT_OK, "ok"},     {DW_EXIT_USAGE, "usage"},     {DW_EXIT_TARGET, "target"},
	             {DW_EXIT_DUMP, "dump"}, {DW_EXIT_RUNTIME, "runtime"}, {DW_EXIT_SIGNAL, "signal"}};

	CHECK(dw_n_exit_codes == sizeof(named) / sizeof(named[0]));
	for (size_t i = 0; i < dw_n_exit_codes; i++) {
		const struct dw_exit_code *e = &dw_exit_codes[i];
		CHECK(e->name && e->name[0] && e->meaning && e->meaning[0]);
		CHECK_MSG(!strchr(e->meaning, '|') && !strchr(e->meaning, '\n'),
		          "code %d: '|' or newline in its meaning", e->code);
		if (i)
			CHECK_MSG(dw_exit_codes[i - 1].code < e->code, "codes out of order at %d", e->code);
	}
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		size_t j;
		for (j = 0; j < dw_n_exit_codes; j++)
			if (dw_exit_codes[j].code == named[i].code)
				break;
		CHECK_MSG(j < dw_n_exit_codes, "code %d not in the table", named[i].code);
		if (j < dw_n_exit_codes)
			CHECK_STR(dw_exit_codes[j].name, named[i].name);
	}
}

/* Reads the README's exit-status table: the rows after README_HEADER and its
 * separator, up to the first line that is not a table row. */
static void test_readme(void)
{
	FILE *f = fopen(DW_SOURCE_DIR "/README.md", "r");
	char line[2048], want[2048];
	int headers = 0;
	size_t row = 0;
	enum { BEFORE, SEPARATOR, ROWS, AFTER } at = BEFORE;

	CHECK_MSG(f != NULL, "cannot open %s", DW_SOURCE_DIR "/README.md");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line, README_HEADER) == 0) {
			headers++;
			at = SEPARATOR;
			continue;
		}
		if (at == SEPARATOR) {
			CHECK_STR(line, "|---|---|---|");
			at = ROWS;
			continue;
		}
		if (at != ROWS)
			continue;
		if (line[0] != '|') {
			at = AFTER;
			continue;
		}
		CHECK_MSG(row < dw_n_exit_codes, "README: more exit codes than the table: %s", line);
		if (row < dw_n_exit_codes) {
			const struct dw_exit_code *e = &dw_exit_codes[row];
			snprintf(want, sizeof(want), "| %d | `%s` | %s |", e->code, e->name, e->meaning);
			CHECK_STR(line, want);
		}
		row++;
	}
	fclose(f);
	CHECK_MSG(headers == 1, "README: %d exit-status tables (a line \"%s\"), expected 1", headers, README_HEADER);
	CHECK_MSG(row == dw_n_exit_codes, "README: %zu exit codes, the table has %zu", row, dw_n_exit_codes);
}

int main(void)
{
	test_table();
	test_readme();
	return check_done();
}
