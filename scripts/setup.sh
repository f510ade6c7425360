#!/usr/bin/env bash
# Installs what dumpwatch needs on Debian 12, no more than the caller asks for:
#
#   scripts/setup.sh            everything the tests use (scripts/test.sh)
#   scripts/setup.sh --demo     building the daemon, and the .NET SDK checked
#                               (scripts/demo.sh)
#   scripts/setup.sh --no-dotnet  building the daemon and its helper programs,
#                               installing and packaging them (install.sh,
#                               package.sh, fuzz.sh); no .NET
#
# Building: a C toolchain, cmake, pkg-config, json-c, libinotifytools, and the
# headers of what the helpers and the metrics endpoint use (libcurl and
# libssl for the upload helper, libmicrohttpd, loaded when the endpoint is
# on); libunity for the desktop launcher helper when installing or
# packaging. The tests add: valgrind, clang (sanitizers, fuzzing), mandoc and
# lintian (the man pages, the package), dbus, python3-gi, plank, xvfb,
# imagemagick, dbus-x11 and python3-pil (the launcher on a bus and on a real
# dock), prometheus and curl (promtool and scrapes), python3-yaml (the
# Kubernetes manifest), chromium (the report page), wrk (load on the test web
# service, tests/bench/wrk), jq, and the tools they call. The .NET SDK is
# checked, not installed.
set -euo pipefail
build=(build-essential cmake pkg-config libjson-c-dev libinotifytools0-dev libcurl4-openssl-dev libssl-dev
	libmicrohttpd-dev)
packaging=(libunity-dev dpkg-dev binutils)
tests=(prometheus curl python3-yaml time inotify-tools procps jq python3 valgrind clang libclang-rt-14-dev mandoc
	lintian passwd util-linux dbus python3-gi desktop-file-utils chromium libxml2-utils python3-jsonschema
	python3-pil plank xvfb imagemagick dbus-x11 wrk)
mode=${1:-}
case $mode in
--demo) pkgs=("${build[@]}") ;;
--no-dotnet) pkgs=("${build[@]}" "${packaging[@]}") ;;
"") pkgs=("${build[@]}" "${packaging[@]}" "${tests[@]}") ;;
*) echo "setup: unknown argument $mode (--demo, --no-dotnet or none)" >&2; exit 1 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}"
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
		sudo=sudo
	fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	# The demo takes no recommended package: it builds one program and runs it.
	norec=()
	[ "$mode" != --demo ] || norec=(--no-install-recommends)
	$sudo apt-get install -y -qq "${norec[@]}" "${missing[@]}" >/dev/null
fi
if [ "$mode" = --no-dotnet ]; then
	echo "setup: build dependencies present"
	exit 0
fi
if ! command -v dotnet >/dev/null 2>&1; then
	echo "setup: the .NET SDK (dotnet) is not on PATH. dumpwatch itself needs no .NET, but its demo and" >&2
	echo "setup: integration tests run .NET programs: install the .NET SDK 8 or newer and run again." >&2
	exit 1
fi
echo "setup: dependencies present (dotnet $(dotnet --version))"
