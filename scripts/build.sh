#!/usr/bin/env bash
# Sets up dependencies, then builds dumpwatch and the .NET test programs.
#   BUILD_DIR (default build)  CMAKE_ARGS (extra cmake arguments)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
"$here/scripts/setup.sh"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
"$here/scripts/build-apps.sh" "$build/apps"
