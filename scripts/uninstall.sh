#!/usr/bin/env bash
# Removes what scripts/install.sh installed. Rule files, the journal and the
# dumps stay unless --purge is given.
# usage: scripts/uninstall.sh [--prefix DIR] [--root DIR] [--purge]
set -euo pipefail
prefix=/usr/local root="" purge=0
while (($#)); do
	case $1 in
	--prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
	--root) root=${2:?--root needs a directory}; shift 2 ;;
	--purge) purge=1; shift ;;
	*) echo "uninstall: unknown argument $1" >&2; exit 1 ;;
	esac
done
if [ -z "$root" ] && [ -d /run/systemd/system ]; then
	systemctl disable --now dumpwatch.service 2>/dev/null || true
fi
rm -f "$root$prefix/sbin/dumpwatch" "$root$prefix/lib/systemd/system/dumpwatch.service"
rm -rf "$root$prefix/share/dumpwatch" "$root$prefix/share/doc/dumpwatch" "$root$prefix/libexec/dumpwatch"
rm -f "$root$prefix/share/applications/dumpwatch.desktop" "$root$prefix/share/icons/hicolor/scalable/apps/dumpwatch.svg"
rm -f "$root$prefix/share/man/man8/dumpwatch.8" "$root$prefix/share/man/man5/dumpwatch-rules.5" \
	"$root$prefix/share/bash-completion/completions/dumpwatch"
if [ -z "$root" ] && [ -d /run/systemd/system ]; then
	systemctl daemon-reload
fi
if ((purge)); then
	rm -rf "$root/etc/dumpwatch" "$root/var/lib/dumpwatch"
	echo "uninstall: removed dumpwatch, its rules, journal, state and dumps"
else
	echo "uninstall: removed dumpwatch; kept $root/etc/dumpwatch and $root/var/lib/dumpwatch (--purge removes them)"
fi
