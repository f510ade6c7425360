/* The table of exit codes (exitcodes.h): the one text of what each code means.
 * `dumpwatch --help` prints it; dumpwatch(8)'s EXIT STATUS lists the same
 * codes (tests/unit/test_exitcodes.c). */
#include "dumpwatch/exitcodes.h"

const struct dw_exit_code dw_exit_codes[] = {
    {DW_EXIT_OK, "ok",
     "done: the dumps asked for were taken, or the process exited first (a message says which); the guard and the "
     "views also when stopped by SIGTERM or SIGINT; check: every rule file is good; import: at least one rule was "
     "written and every file could be"},
    {DW_EXIT_USAGE, "usage",
     "bad command line or rule; check: a bad command line, or a rule file has an error or is refused; import: the "
     "settings are not JSON or hold no rule that could be imported, or a rule file exists without --force"},
    {DW_EXIT_TARGET, "target",
     "no such process, not a .NET process, or its diagnostics socket is unreachable; check: a path cannot be read; "
     "import: the settings cannot be read or a rule file cannot be written"},
    {DW_EXIT_DUMP, "dump", "a dump failed"},
    {DW_EXIT_RUNTIME, "runtime", "the event stream failed, or an internal failure"},
    {DW_EXIT_SIGNAL, "signal", "the one-process watch was stopped by SIGINT or SIGTERM before finishing"},
};

const size_t dw_n_exit_codes = sizeof(dw_exit_codes) / sizeof(dw_exit_codes[0]);
