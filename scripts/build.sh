#!/usr/bin/env bash
# Sets up dependencies, then builds dumpwatch and the .NET test programs.
#   BUILD_DIR (default build)  CMAKE_ARGS (extra cmake arguments)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
"$here/scripts/setup.sh"
mkdir -p "$build"
if ! { cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-} &&
	cmake --build "$build" -j"$(nproc)"; } >"$build/build.log" 2>&1; then
	cat "$build/build.log" >&2
	echo "build: failed (log above, also in $build/build.log)" >&2
	exit 1
fi
echo "build: built dumpwatch and its tests in $build"
"$here/scripts/build-apps.sh" "$build/apps"
