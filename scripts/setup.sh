#!/usr/bin/env bash
# Installs what dumpwatch needs to build and test on Debian 12: a C toolchain,
# cmake, pkg-config, json-c, libinotifytools, libcurl (uploads), libmicrohttpd
# (the metrics endpoint), binutils, libunity (the desktop launcher helper; dbus and
# python3-gi for its test; plank, xvfb, imagemagick, dbus-x11 and python3-pil
# for its test on a real dock), prometheus and curl (promtool and the scrapes
# of the metrics test), python3-yaml (the Kubernetes manifest's test); and checks
# for the .NET SDK, which the test programs need
# (it is not installed here).
set -euo pipefail
pkgs=(build-essential cmake pkg-config libjson-c-dev libinotifytools0-dev libcurl4-openssl-dev libssl-dev libmicrohttpd-dev prometheus curl python3-yaml time inotify-tools binutils procps jq python3 valgrind clang libclang-rt-14-dev mandoc lintian dpkg-dev passwd util-linux libunity-dev dbus python3-gi desktop-file-utils chromium libxml2-utils python3-jsonschema python3-pil plank xvfb imagemagick dbus-x11)
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
	$sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# --no-dotnet: only what building and installing dumpwatch needs (install.sh).
if [ "${1:-}" = "--no-dotnet" ]; then
	echo "setup: build dependencies present"
	exit 0
fi
if ! command -v dotnet >/dev/null 2>&1; then
	echo "setup: the .NET SDK (dotnet) is not on PATH. dumpwatch itself needs no .NET, but its demo and" >&2
	echo "setup: integration tests run .NET programs: install the .NET SDK 8 or newer and run again." >&2
	exit 1
fi
echo "setup: dependencies present (dotnet $(dotnet --version))"
