#!/usr/bin/env bash
# Builds the Debian packages of dumpwatch with CPack:
# - dumpwatch: the binary in /usr/sbin, its helpers in /usr/libexec/dumpwatch,
#   the systemd unit, the man pages, the bash completion, the examples and
#   their JSON Schema; maintainer scripts that make /etc/dumpwatch/rules.d
#   (0755) and /var/lib/dumpwatch{,/dumps} (0711), leave them at removal and
#   delete them at purge;
# - dumpwatch-desktop: the desktop launcher helper (the only program linking
#   libunity) in /usr/libexec/dumpwatch, the desktop entry and its icon;
#   it depends on dumpwatch of the same version.
# Each one's dependencies are computed from the libraries its programs link
# (dpkg-shlibdeps). Installing both gives the layout of scripts/install.sh
# with the prefix /usr; it does not enable the service.
#   usage: scripts/package.sh     prints the paths of the .debs it built, one a line
#   DW_PACKAGE_BUILD: the build directory (default build-package)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${DW_PACKAGE_BUILD:-$here/build-package}
"$here/scripts/setup.sh" --no-dotnet >&2
mkdir -p "$build"
# Debian's hardening flags, all of them (bindnow too), as dpkg-buildpackage
# would pass them.
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
CFLAGS="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
LDFLAGS="$(dpkg-buildflags --get LDFLAGS)"
export CFLAGS LDFLAGS
rm -f "$build/CMakeCache.txt" # the flags are read at the first configure only
if ! { cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
	-DDUMPWATCH_PACKAGE=ON -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON -DDUMPWATCH_LAUNCHER=on &&
	cmake --build "$build" --target dumpwatch package_files -j"$(nproc)" &&
	cmake --build "$build" --target dumpwatch_helpers -j"$(nproc)" &&
	(cd "$build" && rm -f ./*.deb && cpack -G DEB); } >"$build/package.log" 2>&1; then
	cat "$build/package.log" >&2
	echo "package: failed (log above, also in $build/package.log)" >&2
	exit 1
fi
debs=$(ls "$build"/dumpwatch_*.deb "$build"/dumpwatch-desktop_*.deb)
echo "package: built" $debs >&2
echo "$debs"
