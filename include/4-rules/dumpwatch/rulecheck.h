/* `dumpwatch check`: rule files validated as the daemon would, with one
 * line per problem. Does I/O. */
#ifndef DUMPWATCH_RULECHECK_H
#define DUMPWATCH_RULECHECK_H

#include <stddef.h>
#include <stdio.h>

/* `dumpwatch check`: validates each path, a rule file or a directory (every
 * *.json directly in it, sorted by name; hidden files and *.schema.json are
 * skipped), as the daemon would: each file is read through
 * rulefile_read_trusted with the caller's effective uid trusted beside root
 * (a refusal is printed as "file: refused: REASON"), and every dump.dir must
 * lie inside one of dump_dirs (rulefile_check_dump_dirs; none given: not
 * checked). Prints each diagnostic as "file:line:column: message" to errf
 * and, for each good file, "file: N rules OK" to outf; also reports a rule
 * name defined in two files ("rule name "x" is also defined at
 * other:line:column"). Returns DW_EXIT_OK (0) when all files are good,
 * DW_EXIT_USAGE (1) when any has an error or is refused, DW_EXIT_TARGET (2)
 * when a path cannot be read (after checking the others). Does I/O. */
int rulefile_check_paths(char *const *paths, size_t n_paths, const char *const *dump_dirs, size_t n_dump_dirs,
                         FILE *outf, FILE *errf);

#endif
