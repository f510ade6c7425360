/* dumpwatch metrics: the metric names a condition may use, one per line
 * (what the shell completion offers), from the catalog (catalog.h). */
#include <stdio.h>
#include <string.h>

#include "dumpwatch/catalog.h"
#include "dumpwatch/cli.h"
#include "dumpwatch/cmd.h"
#include "dumpwatch/exitcodes.h"

static int run(int argc, char **argv)
{
	if (argc > 1) {
		if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
			cli_help_usage(stdout, cmd_metrics.synopsis);
			printf("  the metric names a condition may use, one per line: the built-in ones, then\n"
			       "  System.Runtime's counters by full and bare name (any other EventCounters\n"
			       "  provider's as Provider/counter; exceptions and meters have their own forms)\n");
			return DW_EXIT_OK;
		}
		fprintf(stderr, "dumpwatch metrics: unknown argument %s\n", argv[1]);
		return DW_EXIT_USAGE;
	}
	for (int id = 0; id < M_COUNTER; id++)
		if (id != M_EXCEPTIONS)
			printf("%s\n", catalog_id_name((enum metric_id)id));
	for (size_t i = 0; catalog_runtime_counters[i]; i++)
		printf("System.Runtime/%s\n", catalog_runtime_counters[i]);
	for (size_t i = 0; catalog_runtime_counters[i]; i++) {
		struct metric_ref ref;
		char err[256];
		/* A bare name that a built-in metric takes is that metric's. */
		if (catalog_resolve(catalog_runtime_counters[i], &ref, err, sizeof(err)) == 0 && ref.id == M_COUNTER)
			printf("%s\n", catalog_runtime_counters[i]);
	}
	return DW_EXIT_OK;
}

const struct cmd cmd_metrics = {
    .name = "metrics",
    .run = run,
    .synopsis = "metrics",
    .summary = "the metric names a condition may use",
};
