/* Fuzz target: the --when condition grammar ("METRIC OP VALUE [for D]"). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const double values[] = {0, -1, 1e6, 2e8, INFINITY, NAN};
	struct rule_cond c;
	char err[512];
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (rule_cond_parse(text, &c, err, sizeof(err)) == 0)
		for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
			(void)rule_cond_test(&c, values[i]);
	free(text);
	return 0;
}
