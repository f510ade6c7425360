#!/usr/bin/env bash
# Sets up, builds with warnings as errors, and runs every test: unit tests and
# integration tests against real .NET processes and the real createdump.
# Integration tests need permission to attach to the processes they start
# (same user, or root) and write dumps under the build directory.
#
#   scripts/test.sh [CTEST ARGS...]             build/ , the whole suite
#   scripts/test.sh --sanitize [CTEST ARGS...]  build-asan/: the same suite with
#                                               dumpwatch and the unit tests built
#                                               with AddressSanitizer + UBSan,
#                                               on .NET 10 only
#   scripts/test.sh --all                       both, then valgrind memcheck on the
#                                               unit tests and a short fuzzing pass
#                                               (what CI runs)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = "--all" ]; then
	shift
	"$here/scripts/test.sh" "$@"
	"$here/scripts/test.sh" --sanitize "$@"
	BUILD_DIR=$here/build "$here/scripts/memcheck.sh"
	if [ -x "$here/scripts/fuzz.sh" ]; then "$here/scripts/fuzz.sh" --ci; fi
	exit 0
fi
if [ "${1:-}" = "--sanitize" ]; then
	shift
	export BUILD_DIR=${BUILD_DIR:-$here/build-asan}
	# The .NET 8 and 9 runs of the runtime scenarios are left to the normal
	# pass (and their apps not built here): their streams have the layouts of
	# .NET 10's, whose runs are here, and the unit tests decode recordings of
	# all three under the sanitizers.
	CMAKE_ARGS="-DDUMPWATCH_SANITIZE=ON -DDUMPWATCH_TEST_OLDER_RUNTIMES=OFF ${CMAKE_ARGS:-}"
	export DW_APP_RUNTIMES=${DW_APP_RUNTIMES:-10}
	# Any report fails the test that triggered it: a leak at exit, any
	# undefined behaviour, a use after free.
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=86}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=87}
	# The packaging tests build and install their own release tree; nothing
	# of the sanitized build runs in them, so the normal pass covers them.
	set -- -E '^(test_package|test_install)$' "$@"
fi
export BUILD_DIR=${BUILD_DIR:-$here/build}
CMAKE_ARGS="-DDUMPWATCH_WERROR=ON ${CMAKE_ARGS:-}" "$here/scripts/build.sh"
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 300 "$@"
