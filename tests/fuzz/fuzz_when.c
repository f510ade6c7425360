/* Fuzz target: the --when condition grammar ("METRIC OP VALUE [for D]",
 * "exception ...", "meter ..."); a meter condition is then read from series
 * whose tags are the input itself, which fuzzes the tag filter's matching. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "dumpwatch/meters.h"
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
	if (rule_cond_parse(text, &c, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
			(void)rule_cond_test(&c, values[i]);
		if (c.metric.id == M_METER) {
			struct meters *m = meters_new();
			struct ev_meter v;
			double out;
			int64_t t;
			memset(&v, 0, sizeof(v));
			snprintf(v.meter, sizeof(v.meter), "%s", c.metric.provider);
			snprintf(v.instrument, sizeof(v.instrument), "%s", c.metric.counter);
			v.has_value = v.has_rate = v.has_count = 1;
			v.value = v.rate = 1;
			for (int k = EV_METER_COUNTER; m && k <= EV_METER_HISTOGRAM; k++) {
				v.kind = (enum ev_meter_kind)k;
				snprintf(v.tags, sizeof(v.tags), "%s", text + (size > 8 ? (size_t)k : 0));
				meters_on_value(m, &v, k);
				(void)meters_read(m, &c.metric, &out, &t);
			}
			(void)catalog_meter_tags_match(c.metric.tags, text);
			meters_free(m);
		}
	}
	free(text);
	return 0;
}
