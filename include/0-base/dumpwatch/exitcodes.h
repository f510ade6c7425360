/* Exit codes: what every mode of dumpwatch returns (the one-process watch,
 * the guard, ps, record, check and the views). The codes are named here once;
 * dw_exit_codes (src/0-base/exitcodes.c) gives each its name and meaning,
 * which `dumpwatch --help` prints; dumpwatch(8) describes the same codes
 * (tests/unit/test_exitcodes.c compares them). */
#ifndef DUMPWATCH_EXITCODES_H
#define DUMPWATCH_EXITCODES_H

#include <stddef.h>

/* The meanings, and what `check` returns, are in dw_exit_codes. */
#define DW_EXIT_OK 0       /* finished */
#define DW_EXIT_USAGE 1    /* bad command line or rule */
#define DW_EXIT_TARGET 2   /* no such process, not .NET, socket unreachable; no such path */
#define DW_EXIT_DUMP 3     /* a dump failed */
#define DW_EXIT_RUNTIME 4  /* the event stream broke, or an internal failure */
#define DW_EXIT_SIGNAL 130 /* stopped by SIGINT/SIGTERM before finishing */

/* One exit code: its number, a short name (DW_EXIT_<NAME> in lower case) and
 * a one-line meaning for users (plain text, no '|'). */
struct dw_exit_code {
	int code;
	const char *name;
	const char *meaning;
};

/* Every exit code, in increasing order; dw_n_exit_codes entries. */
extern const struct dw_exit_code dw_exit_codes[];
extern const size_t dw_n_exit_codes;

#endif
