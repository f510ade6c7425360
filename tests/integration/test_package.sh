#!/usr/bin/env bash
# The Debian packages (scripts/package.sh), dumpwatch and dumpwatch-desktop:
# lintian finds nothing in either but the two tags explained below; the core
# binary links no libunity, GLib, GIO, ICU or libstdc++ (neither the build's
# nor the package's), which only the launcher helper of dumpwatch-desktop
# does, and each package's dependencies say so; installed with dpkg, both lay
# down what install.sh lays down with the prefix /usr (file for file, the
# directories with their modes), the binary runs, checks the installed
# examples and finds the installed launcher helper; removing
# dumpwatch-desktop leaves dumpwatch working without it; removing dumpwatch
# leaves rules and dumps, purging removes them.
#
# Tags left, at lintian's pedantic and experimental levels (both "I:"):
# - binary-has-unneeded-section .comment: the compilers' version strings
#   (gcc's and those of the C runtime's start files); harmless.
# - package-supports-alternative-init-but-no-init.d-script: dumpwatch ships a
#   systemd unit only; without systemd it is started by hand (README).
# dumpwatch-desktop overrides desktop-command-not-in-package: its desktop
# file runs dumpwatch's program, of the package it depends on
# (scripts/debian/dumpwatch-desktop.lintian-overrides).
set -euo pipefail
: "${DUMPWATCH:?set by ctest}"
SRC=${DW_SOURCE_DIR:?set by ctest}
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (dpkg -i)"; exit 77; }
T=$(mktemp -d /tmp/dw-pkg.XXXXXX)
INSTALLED=0
cleanup() {
	((INSTALLED)) && dpkg -P dumpwatch-desktop dumpwatch >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
! dpkg -s dumpwatch >/dev/null 2>&1 || fail "a dumpwatch package is installed here already; remove it first"
! dpkg -s dumpwatch-desktop >/dev/null 2>&1 || fail "a dumpwatch-desktop package is installed here already; remove it first"

# The root daemon loads none of the desktop's libraries.
GUI_LIBS='lib(unity|glib-2\.0|gio-2\.0|gobject-2\.0|icu[a-z]*|stdc\+\+)\.so'
no_gui_libs() {
	! ldd "$1" | grep -E "$GUI_LIBS" >"$T/gui-libs" || fail "$1 links $(tr '\n' ' ' <"$T/gui-libs")"
}
# A sanitizer build's runtime (libasan, libubsan) brings libstdc++ of its
# own: then only the package's binary, built without it, is checked (below).
if ! ldd "$DUMPWATCH" | grep -E 'lib(a|ub)san' >/dev/null; then
	no_gui_libs "$DUMPWATCH"
fi
[ ! -e /etc/dumpwatch ] && [ ! -e /var/lib/dumpwatch ] ||
	fail "/etc/dumpwatch or /var/lib/dumpwatch exists (an install.sh install?): the test would mix with it"

debs=$(DW_PACKAGE_BUILD="$T/build" "$SRC/scripts/package.sh" 2>"$T/package.err") ||
	{ cat "$T/package.err"; fail "package.sh failed"; }
deb=$(grep '/dumpwatch_[^/]*\.deb$' <<<"$debs") || fail "no package dumpwatch: $debs"
desk=$(grep '/dumpwatch-desktop_[^/]*\.deb$' <<<"$debs") || fail "no package dumpwatch-desktop: $debs"
[ -f "$deb" ] && [ -f "$desk" ] || fail "no packages: $debs"
dpkg-deb -f "$deb" Depends | grep -q 'libjson-c5' || fail "Depends does not come from the libraries: $(dpkg-deb -f "$deb" Depends)"
dpkg-deb -f "$deb" Depends | grep -q 'libcurl4' || fail "Depends lacks libcurl4"
! dpkg-deb -f "$deb" Depends | grep -E 'libunity|libglib|libicu|libstdc' ||
	fail "dumpwatch depends on the desktop's libraries: $(dpkg-deb -f "$deb" Depends)"
dpkg-deb -f "$desk" Depends | grep -q 'libunity9' || fail "dumpwatch-desktop's Depends lacks libunity9: $(dpkg-deb -f "$desk" Depends)"
dpkg-deb -f "$desk" Depends | grep -q 'libglib2.0-0' || fail "dumpwatch-desktop's Depends lacks libglib2.0-0"
dpkg-deb -f "$desk" Depends | grep -q "dumpwatch (= $(dpkg-deb -f "$deb" Version))" ||
	fail "dumpwatch-desktop does not depend on dumpwatch of its version: $(dpkg-deb -f "$desk" Depends)"
dpkg-deb -c "$deb" >"$T/deb.list"
dpkg-deb -c "$desk" >"$T/desk.list"
! grep -E 'dumpwatch-launcher|\.desktop$|\.svg$' "$T/deb.list" || fail "dumpwatch holds the desktop's files"
grep -q ' \./usr/libexec/dumpwatch/dumpwatch-launcher$' "$T/desk.list" || fail "dumpwatch-desktop lacks the helper"

for d in "$deb" "$desk"; do
	lintian -I -E --pedantic --tag-display-limit 0 "$d" 2>/dev/null >"$T/lintian" || true
	grep -v -e 'binary-has-unneeded-section .comment' -e 'package-supports-alternative-init-but-no-init.d-script' \
		"$T/lintian" | grep -E '^[EWIPX]:' >"$T/tags" || true
	[ ! -s "$T/tags" ] || fail "lintian $(basename "$d"): $(cat "$T/tags")"
done

# What install.sh lays down with the same prefix, to compare.
DW_INSTALL_BUILD="$T/build-install" "$SRC/scripts/install.sh" --root "$T/stage" --prefix /usr >"$T/install.out" 2>&1 ||
	{ cat "$T/install.out"; fail "install.sh failed"; }

dpkg -i "$deb" "$desk" >"$T/dpkg.out" 2>&1 || { cat "$T/dpkg.out"; fail "dpkg -i failed"; }
INSTALLED=1
/usr/sbin/dumpwatch --version | grep -q '^dumpwatch ' || fail "the installed binary does not run"
no_gui_libs /usr/sbin/dumpwatch
/usr/sbin/dumpwatch --version | grep -qx 'desktop launcher entry: dumpwatch-launcher at /usr/libexec/dumpwatch/dumpwatch-launcher' ||
	fail "the installed binary does not find the installed helper: $(/usr/sbin/dumpwatch --version)"
# The daemon links none of the libraries an optional feature needs: the
# upload helper links libcurl and libcrypto, libmicrohttpd is loaded with
# --metrics-listen.
[ -x /usr/libexec/dumpwatch/dumpwatch-upload ] || fail "the upload helper is not installed in /usr/libexec/dumpwatch"
! ldd /usr/sbin/dumpwatch | grep -E 'libcurl|libssl|libcrypto|libmicrohttpd|libgnutls' || fail "the daemon links a network library"
ldd /usr/libexec/dumpwatch/dumpwatch-upload | grep libcurl >/dev/null || fail "the upload helper does not link libcurl"
/usr/sbin/dumpwatch check /usr/share/dumpwatch/examples >"$T/check.out" 2>&1 ||
	{ cat "$T/check.out"; fail "dumpwatch check of the installed examples"; }
mode() { stat -c '%a %U' "$1"; }
[ "$(mode /etc/dumpwatch/rules.d)" = "755 root" ] || fail "rules.d: $(mode /etc/dumpwatch/rules.d)"
[ "$(mode /var/lib/dumpwatch)" = "711 root" ] || fail "state dir: $(mode /var/lib/dumpwatch)"
[ "$(mode /var/lib/dumpwatch/dumps)" = "711 root" ] || fail "dump dir: $(mode /var/lib/dumpwatch/dumps)"
grep -q '^ExecStart=/usr/sbin/dumpwatch --rules-dir' /lib/systemd/system/dumpwatch.service ||
	fail "the unit does not start /usr/sbin/dumpwatch"
zcat /usr/share/man/man8/dumpwatch.8.gz | grep -q '^\.Dt DUMPWATCH 8' || fail "dumpwatch(8) not installed"
[ -f /usr/share/bash-completion/completions/dumpwatch ] || fail "no bash completion"

# The same files as install.sh's: the package's, less its doc files and with
# the man pages' .gz dropped; the unit in /lib (Debian's place) for install.sh's
# PREFIX/lib.
dpkg -L dumpwatch dumpwatch-desktop | while read -r f; do [ -f "$f" ] && echo "$f"; done |
	sed -e 's/\.gz$//' -e 's|^/lib/systemd|/usr/lib/systemd|' |
	grep -v -E -e '^/usr/share/doc/dumpwatch(-desktop)?/(changelog|copyright)$' \
		-e '^/usr/share/lintian/overrides/dumpwatch-desktop$' | sort >"$T/pkg.files"
(cd "$T/stage" && find . -type f | sed 's|^\.||') | sort >"$T/stage.files"
diff "$T/stage.files" "$T/pkg.files" >"$T/diff" || fail "the package and install.sh lay down different files (< install.sh, > package): $(cat "$T/diff")"
for d in /etc/dumpwatch/rules.d /var/lib/dumpwatch /var/lib/dumpwatch/dumps; do
	[ "$(stat -c %a "$T/stage$d")" = "$(stat -c %a "$d")" ] || fail "$d: install.sh gives $(stat -c %a "$T/stage$d")"
done

# Without dumpwatch-desktop: no helper, said in one line; the rest works.
dpkg -r dumpwatch-desktop >"$T/dpkg.out" 2>&1 || { cat "$T/dpkg.out"; fail "dpkg -r dumpwatch-desktop failed"; }
[ ! -e /usr/libexec/dumpwatch/dumpwatch-launcher ] && [ ! -e /usr/share/applications/dumpwatch.desktop ] ||
	fail "dpkg -r dumpwatch-desktop left its files"
/usr/sbin/dumpwatch --version | grep -q '^desktop launcher entry: none: the helper program dumpwatch-launcher is not installed' ||
	fail "without the helper: $(/usr/sbin/dumpwatch --version)"
/usr/sbin/dumpwatch check /usr/share/dumpwatch/examples >"$T/check.out" 2>&1 ||
	{ cat "$T/check.out"; fail "dumpwatch check without dumpwatch-desktop"; }

# Remove: rules and dumps stay. Purge: they go.
echo '{"name": "kept", "when": "loh-size > 1GB"}' >/etc/dumpwatch/rules.d/kept.json
echo core >/var/lib/dumpwatch/dumps/x.core
dpkg -r dumpwatch >"$T/dpkg.out" 2>&1 || { cat "$T/dpkg.out"; fail "dpkg -r failed"; }
[ ! -e /usr/sbin/dumpwatch ] || fail "the binary is left after dpkg -r"
[ -f /etc/dumpwatch/rules.d/kept.json ] && [ -f /var/lib/dumpwatch/dumps/x.core ] || fail "dpkg -r removed rules or dumps"
dpkg -P dumpwatch-desktop dumpwatch >"$T/dpkg.out" 2>&1 || { cat "$T/dpkg.out"; fail "dpkg -P failed"; }
INSTALLED=0
[ ! -e /etc/dumpwatch ] && [ ! -e /var/lib/dumpwatch ] || fail "dpkg -P left /etc/dumpwatch or /var/lib/dumpwatch"
[ ! -e /usr/libexec/dumpwatch ] || fail "dpkg -P left /usr/libexec/dumpwatch"
echo "PASS: the packages dumpwatch and dumpwatch-desktop: lintian, no desktop libraries in the daemon, the layout of install.sh, dumpwatch check, the helper found, remove keeps rules and dumps, purge removes them"
