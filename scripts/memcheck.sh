#!/usr/bin/env bash
# Runs every unit test under valgrind memcheck: any invalid access, use of
# uninitialised memory or definite leak fails. Uses an existing build
# (BUILD_DIR, default build/; scripts/build.sh makes one).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
command -v valgrind >/dev/null || { echo "memcheck: valgrind is not installed (scripts/setup.sh)" >&2; exit 1; }
failed=0 n=0
for t in "$build"/test_*; do
	[ -x "$t" ] || continue
	n=$((n + 1))
	log="$build/memcheck.$(basename "$t").log"
	if valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		--track-fds=no --trace-children=no --quiet "$t" >"$log" 2>&1; then
		echo "memcheck: $(basename "$t"): clean"
	else
		echo "memcheck: $(basename "$t"): FAILED (log: $log)"
		tail -40 "$log"
		failed=$((failed + 1))
	fi
done
echo "memcheck: $n unit test(s), $failed with errors"
[ "$failed" -eq 0 ]
