#!/usr/bin/env bash
# The cost of dump contexts (docs/context.md, "Measured"):
# - bench_context: one process's history after the whole window, idle and
#   busy, the bound, and the time to publish a context (NAME.json and
#   NAME.svg written, synced and renamed) with the files' sizes;
# - the guard's memory with COUNT idle real processes after HOLD seconds
#   (the whole history window), from many.sh: VmRSS before and after.
# Figures only, never pass/fail.
#   usage: tests/bench/context.sh [BUILD_DIR] [COUNT] [HOLD]
#   COUNT 200, HOLD 300 by default; COUNT 0 skips the real processes.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
count=${2:-200}
hold=${3:-300}
[ -x "$build/bench_context" ] || { echo "context: $build/bench_context not built (scripts/build.sh)" >&2; exit 1; }
dir=$(mktemp -d /tmp/dw-bench-context.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$build/bench_context" "$dir" 50
if [ "$count" -gt 0 ]; then
	echo
	echo "the guard with $count idle processes over ${hold} s (many.sh):"
	HOLD=$hold "$here/tests/bench/many.sh" "$build" "$count" | grep -E 'after the start-up|guarding|  guard: VmRSS'
fi
