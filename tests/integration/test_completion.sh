#!/usr/bin/env bash
# Bash completion (scripts/dumpwatch.bash-completion) as bash runs it: the
# modes, the options of a mode read from its --help, dump types and formats,
# metric names after --when (also inside a quote), the pid and name of a
# running .NET process after --pid and --name, rule files after check.
source "$(dirname "$0")/lib.sh"
SRC=${DW_SOURCE_DIR:?set by ctest}
start_app
mkdir -p "$T/bin"
ln -s "$DUMPWATCH" "$T/bin/dumpwatch"
# complete WORD...: the candidates for the last word, one per line.
complete_words() {
	PATH="$T/bin:$PATH" bash -c '
		source "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		_dumpwatch
		printf "%s\n" "${COMPREPLY[@]}"' _ "$SRC/scripts/dumpwatch.bash-completion" dumpwatch "$@"
}
has() { # WORD CANDIDATES-FILE
	grep -qx -- "$1" "$2" || fail "expected '$1' among: $(tr '\n' ' ' <"$2")"
}
lacks() { ! grep -qx -- "$1" "$2" || fail "did not expect '$1' among: $(tr '\n' ' ' <"$2")"; }

complete_words "" >"$T/c"
for m in ps record check counters gc status show report metrics import heap; do has "$m" "$T/c"; done
has "$APP_PID" "$T/c"
complete_words st >"$T/c"
has status "$T/c"
lacks ps "$T/c"
complete_words --du >"$T/c"
has --dump-dir "$T/c"; has --dump-type "$T/c"; has --dump-via "$T/c"; has --dump-timeout "$T/c"
complete_words --up >"$T/c"
has --upload "$T/c"; has --upload-keep "$T/c"
complete_words status -- >"$T/c"
has --json "$T/c"; has --state-dir "$T/c"; has --socket "$T/c"
lacks --dump-dir "$T/c"
complete_words heap --t >"$T/c"
has --types "$T/c"; has --timeout "$T/c"
lacks --dump-dir "$T/c"
complete_words counters --f >"$T/c"
has --format "$T/c"
complete_words counters --format "" >"$T/c"
has table "$T/c"; has json "$T/c"
complete_words --dump-type w >"$T/c"
has withheap "$T/c"
lacks triage "$T/c"
complete_words --pid "" >"$T/c"
has "$APP_PID" "$T/c"
complete_words gc --name Mem >"$T/c"
has MemSpike "$T/c"
complete_words --when loh >"$T/c"
has loh-size "$T/c"; has loh-alloc-rate "$T/c"
lacks gc-pause "$T/c"
complete_words --when "'System.Runtime/cpu" >"$T/c"
has "'System.Runtime/cpu-usage" "$T/c"
complete_words -w exc >"$T/c"
has exception "$T/c"; has exception-rate "$T/c"
mkdir "$T/rules"
touch "$T/rules/a.json" "$T/rules/b.txt"
complete_words check "$T/rules/" >"$T/c"
has "$T/rules/a.json" "$T/c"
lacks "$T/rules/b.txt" "$T/c"
echo "PASS: completion of modes, options, values, metrics, pids, names and rule files"
