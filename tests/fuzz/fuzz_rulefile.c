/* Fuzz target: the rule-file parser (JSON text in, rules or diagnostics out). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "dumpwatch/rulefile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct file_rule *rules = NULL;
	struct rule_diag diags[8];
	size_t nd = 0;
	char line[1024];

	int n = rulefile_parse((const char *)data, size, &rules, diags, 8, &nd);
	if (n < 0) {
		for (size_t i = 0; i < nd && i < 8; i++)
			rulefile_format_diag("fuzz.json", &diags[i], line, sizeof(line));
	} else {
		for (int i = 0; i < n; i++)
			(void)rulefile_filter_match(&rules[i].filter, "MemSpike", "MemSpike --tag x", 1, 0, 0);
	}
	free(rules);
	return 0;
}
