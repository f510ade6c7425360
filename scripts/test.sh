#!/usr/bin/env bash
# Sets up, builds with warnings as errors, and runs every test: unit tests and
# integration tests against real .NET processes and the real createdump.
# Integration tests need permission to attach to the processes they start
# (same user, or root) and write dumps under the build directory.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$here/build}
CMAKE_ARGS="-DDUMPWATCH_WERROR=ON ${CMAKE_ARGS:-}" "$here/scripts/build.sh"
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 300 "$@"
