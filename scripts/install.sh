#!/usr/bin/env bash
# Builds dumpwatch and installs it as a systemd service:
#   PREFIX/sbin/dumpwatch, PREFIX/lib/systemd/system/dumpwatch.service,
#   PREFIX/libexec/dumpwatch/ (its helper programs),
#   PREFIX/share/dumpwatch/examples/ (example rules and their JSON Schema),
#   PREFIX/share/applications/dumpwatch.desktop and its icon (the launcher
#   entry a watch started with sudo shows its dumps on; with the launcher
#   helper, when libunity-dev is installed),
#   /etc/dumpwatch/rules.d/ (the rule files the service watches),
#   /var/lib/dumpwatch/ (journal, state) and /var/lib/dumpwatch/dumps/.
# usage: scripts/install.sh [--prefix DIR] [--root DIR] [--example NAME]... [--enable]
#   --prefix DIR    where the program goes (default /usr/local)
#   --root DIR      stage everything under DIR instead of / (packaging, tests);
#                   systemctl is not run
#   --example NAME  also copy examples/NAME.json into the rules directory
#                   (e.g. loh-balloon); existing files are never overwritten
#   --enable        systemctl enable --now dumpwatch
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
prefix=/usr/local root="" enable=0 examples=()
while (($#)); do
	case $1 in
	--prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
	--root) root=${2:?--root needs a directory}; shift 2 ;;
	--example) examples+=("${2:?--example needs a name}"); shift 2 ;;
	--enable) enable=1; shift ;;
	-h | --help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "install: unknown argument $1 (--help)" >&2; exit 1 ;;
	esac
done
case $prefix in /*) ;; *) echo "install: --prefix must be absolute" >&2; exit 1 ;; esac
if [ -n "$root" ]; then
	mkdir -p "$root"
	root=$(cd "$root" && pwd)
	[ "$root" != / ] || root=""
fi
for n in "${examples[@]}"; do
	[ -f "$here/examples/$n.json" ] || { echo "install: no example $n (see examples/)" >&2; exit 1; }
done
if [ -z "$root" ] && [ "$(id -u)" -ne 0 ]; then
	echo "install: run as root (sudo scripts/install.sh), or stage with --root DIR" >&2
	exit 1
fi

"$here/scripts/setup.sh" --no-dotnet
build=${DW_INSTALL_BUILD:-$here/build-install} # DW_INSTALL_BUILD: tests build elsewhere
mkdir -p "$build"
if ! { cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX="$prefix" &&
	cmake --build "$build" --target dumpwatch -j"$(nproc)" &&
	cmake --build "$build" --target dumpwatch_helpers -j"$(nproc)" &&
	DESTDIR="$root" cmake --install "$build"; } >"$build/install.log" 2>&1; then
	cat "$build/install.log" >&2
	echo "install: build or install failed (log above, also in $build.log)" >&2
	exit 1
fi

# The rules directory is root's: whoever can write a rule decides what is
# dumped. The dump store is root's and only root writes it; the runtime,
# which writes a dump as the user of each process, gets a directory of that
# user's own below it (dumps/.incoming/UID, made by dumpwatch) and only
# passes through the store and its parent (0711).
install -d -m 0755 "$root/etc/dumpwatch" "$root/etc/dumpwatch/rules.d"
install -d -m 0711 "$root/var/lib/dumpwatch"
install -d -m 0711 "$root/var/lib/dumpwatch/dumps"
if [ "$(id -u)" -eq 0 ]; then
	chown root:root "$root/etc/dumpwatch" "$root/etc/dumpwatch/rules.d" "$root/var/lib/dumpwatch" \
		"$root/var/lib/dumpwatch/dumps"
fi
for n in "${examples[@]}"; do
	if [ -e "$root/etc/dumpwatch/rules.d/$n.json" ]; then
		echo "install: $root/etc/dumpwatch/rules.d/$n.json exists; left as it is"
	else
		install -m 0644 "$here/examples/$n.json" "$root/etc/dumpwatch/rules.d/$n.json"
	fi
done
bin="$root$prefix/sbin/dumpwatch"
if compgen -G "$root/etc/dumpwatch/rules.d/*.json" >/dev/null; then
	"$bin" check "$root/etc/dumpwatch/rules.d" || echo "install: fix the rule files above; the service skips bad ones"
fi
echo "install: $bin, $root$prefix/lib/systemd/system/dumpwatch.service, rules in $root/etc/dumpwatch/rules.d"

if [ -n "$root" ]; then
	echo "install: staged under $root; systemctl not run"
	exit 0
fi
if [ ! -d /run/systemd/system ]; then
	echo "install: systemd is not running here; start it by hand:"
	echo "  $prefix/sbin/dumpwatch --rules-dir /etc/dumpwatch/rules.d --dump-dir /var/lib/dumpwatch/dumps --journal /var/lib/dumpwatch/journal.jsonl"
	exit 0
fi
systemctl daemon-reload
if ((enable)); then
	systemctl enable --now dumpwatch.service
	systemctl --no-pager status dumpwatch.service | head -5 || true
else
	echo "install: start it with: systemctl enable --now dumpwatch"
fi
