#!/usr/bin/env bash
# The main job, end to end: builds dumpwatch and MemSpike (a .NET program that
# balloons its large object heap to 600 MB for one second every few seconds),
# starts MemSpike, and runs `dumpwatch PID 500` against it, the classic
# "dump when the GC heap passes 500 MB" launch. dumpwatch prints the metrics as
# they arrive, takes one heap dump at the spike, and exits; the demo then
# shows the dump file and the journal, explains the dump (`dumpwatch show`)
# and writes the page of the dumps (`dumpwatch report`).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
# Only what the demo needs: the daemon's build dependencies, dumpwatch itself,
# and MemSpike for the host's .NET (scripts/test.sh installs and builds the
# rest).
"$here/scripts/setup.sh" --demo
mkdir -p "$build"
if ! { cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
	cmake --build "$build" --target dumpwatch -j"$(nproc)"; } >"$build/demo-build.log" 2>&1; then
	cat "$build/demo-build.log" >&2
	echo "demo: building dumpwatch failed (log above, also in $build/demo-build.log)" >&2
	exit 1
fi
echo "demo: built $build/dumpwatch"
DW_APP_RUNTIMES=10 DW_APPS=MemSpike "$here/scripts/build-apps.sh" "$build/apps"
out=$(mktemp -d /tmp/dumpwatch-demo.XXXXXX)
chmod 0755 "$out"
app="$build/apps/MemSpike/MemSpike"

"$app" demo 600 3000 >"$out/memspike.log" 2>&1 &
app_pid=$!
# Its runtime leaves its diagnostics socket behind when killed: removed too.
trap 'kill "$app_pid" 2>/dev/null || true; wait "$app_pid" 2>/dev/null || true
rm -f /tmp/dotnet-diagnostic-"$app_pid"-*-socket' EXIT
for _ in $(seq 50); do grep -q ready "$out/memspike.log" && break; sleep 0.1; done

echo
echo "== MemSpike is pid $app_pid; dumpwatch $app_pid 500 (heap dump when its GC heap passes 500 MB)"
echo
cd "$out"
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo_cmd=sudo
set +e
timeout 120 $sudo_cmd "$build/dumpwatch" "$app_pid" 500 --journal "$out/journal.jsonl" -v
rc=$?
set -e
echo
echo "== dumpwatch exited with status $rc; dumps in $out:"
ls -l "$out"/*.core 2>/dev/null || echo "(no dump)"
for f in "$out"/*.core; do
	[ -e "$f" ] && readelf -h "$f" | grep -E 'Type:' | sed "s|^|$(basename "$f"): |"
done
echo
echo "== journal ($out/journal.jsonl):"
cat "$out/journal.jsonl"
for f in "$out"/*.core; do
	[ -e "$f" ] || continue
	echo
	echo "== why it was taken: dumpwatch show $(basename "$f")  (beside it: ${f%.core}.json and .svg)"
	$sudo_cmd "$build/dumpwatch" show "$f"
done
if ls "$out"/*.json >/dev/null 2>&1; then
	echo
	echo "== dumpwatch report $out"
	$sudo_cmd "$build/dumpwatch" report "$out"
fi
exit "$rc"
