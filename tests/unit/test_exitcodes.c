/* Unit tests for exitcodes.c: the table holds every DW_EXIT_* code once, in
 * order, and dumpwatch(8)'s EXIT STATUS lists the same codes in the same order
 * (the page is read from DW_SOURCE_DIR, set by CMake). */
#include "dumpwatch/exitcodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#ifndef DW_SOURCE_DIR
#error "DW_SOURCE_DIR must name the source tree (CMakeLists.txt sets it)"
#endif

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

/* Reads dumpwatch(8)'s EXIT STATUS: its ".It CODE" entries, which must be the
 * table's codes in its order (the page says what each means in prose). */
static void test_manpage(void)
{
	FILE *f = fopen(DW_SOURCE_DIR "/man/dumpwatch.8", "r");
	char line[2048];
	size_t row = 0;
	int in = 0, sections = 0;

	CHECK_MSG(f != NULL, "cannot open %s", DW_SOURCE_DIR "/man/dumpwatch.8");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, ".Sh ", 4) == 0) {
			in = strcmp(line, ".Sh EXIT STATUS") == 0;
			sections += in;
			continue;
		}
		int code;
		if (!in || sscanf(line, ".It %d", &code) != 1)
			continue;
		CHECK_MSG(row < dw_n_exit_codes, "dumpwatch(8): more exit codes than the table: %s", line);
		if (row < dw_n_exit_codes)
			CHECK_MSG(code == dw_exit_codes[row].code, "dumpwatch(8): exit code %d where the table has %d",
			          code, dw_exit_codes[row].code);
		row++;
	}
	fclose(f);
	CHECK_MSG(sections == 1, "dumpwatch(8): %d EXIT STATUS sections, expected 1", sections);
	CHECK_MSG(row == dw_n_exit_codes, "dumpwatch(8): %zu exit codes, the table has %zu", row, dw_n_exit_codes);
}

int main(void)
{
	test_table();
	test_manpage();
	return check_done();
}
