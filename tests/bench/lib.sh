# Shared by the benchmark scripts: a scratch directory removed at exit with
# every process started here, MemSpike started with a command pipe, a median.
# Sourced; the caller has set -euo pipefail.

# bench_init NAME: t = a fresh directory /tmp/NAME.XXXXXX (mode 755, so that
# dumps can be written there by the target's user), pids = (), and the trap
# that kills what was started and removes t.
bench_init() {
	t=$(mktemp -d "/tmp/$1.XXXXXX")
	chmod 755 "$t"
	pids=()
	trap bench_cleanup EXIT
}
bench_cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$t"
}

# bench_app APP [NAME=VALUE...]: starts APP (MemSpike) with those variables
# in its environment, reading commands from fd 3 (the fifo $t/cmd), its output
# in $t/app.out; sets ap; returns once it is ready and its diagnostics socket
# exists.
bench_app() {
	local app=$1
	shift
	rm -f "$t/cmd" "$t/app.out"
	mkfifo "$t/cmd"
	exec 3<>"$t/cmd"
	env "$@" "$app" <"$t/cmd" >"$t/app.out" 2>&1 &
	ap=$!
	pids+=("$ap")
	until grep -q ready "$t/app.out"; do sleep 0.02; done
	until ls /tmp/dotnet-diagnostic-$ap-*-socket >/dev/null 2>&1; do sleep 0.02; done
}

# bench_app_end: tells the app to exit, waits for it, closes fd 3.
bench_app_end() {
	echo "exit" >&3
	wait "$ap" 2>/dev/null || true
	exec 3>&-
}

# bench_shopapi APP: starts ShopApi (tests/apps/ShopApi) pinned to CPU 0 on a
# free-looking port, its output in $t/app.out; sets sp and port; returns once
# it serves and its diagnostics socket exists.
bench_shopapi() {
	port=$((20000 + RANDOM % 20000))
	taskset -c 0 "$1" --urls "http://127.0.0.1:$port" >"$t/app.out" 2>&1 &
	sp=$!
	pids+=("$sp")
	for _ in $(seq 300); do grep -q '^ready' "$t/app.out" && break; sleep 0.1; done
	grep -q '^ready' "$t/app.out" || { echo "ShopApi did not start: $(cat "$t/app.out")" >&2; exit 1; }
	until ls /tmp/dotnet-diagnostic-$sp-*-socket >/dev/null 2>&1; do sleep 0.05; done
}

# cpu_ticks PID: the process's CPU time (utime + stime of all its threads, the
# exited ones too) in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# median: of the numbers on stdin, one per line.
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# bench_dotnet_tool NAME: the path of the dotnet tool NAME (dotnet-gcdump,
# dotnet-dump, dotnet-trace), installed from NuGet once, where and at the
# version the integration tests install it (tests/integration/lib.sh,
# dotnet_tool), so that both share one copy. Sets DOTNET_ROOT for the tool.
DW_DOTNET_TOOLS=${DW_DOTNET_TOOLS:-/tmp/dumpwatch-dotnet-tools}
DW_DOTNET_TOOLS_VERSION=${DW_DOTNET_TOOLS_VERSION:-10.0.750501}
bench_dotnet_tool() {
	local name=$1 dir="$DW_DOTNET_TOOLS/$DW_DOTNET_TOOLS_VERSION"
	command -v dotnet >/dev/null || { echo "no dotnet on PATH to install $name" >&2; return 1; }
	export DOTNET_ROOT=${DOTNET_ROOT:-$(dirname "$(readlink -f "$(command -v dotnet)")")}
	mkdir -p "$dir"
	(
		flock 9
		[ -x "$dir/$name" ] ||
			dotnet tool install --tool-path "$dir" "$name" --version "$DW_DOTNET_TOOLS_VERSION" \
				>"$dir/$name.install.log" 2>&1
	) 9>"$dir/.lock" || { echo "installing $name $DW_DOTNET_TOOLS_VERSION: $(tail -3 "$dir/$name.install.log")" >&2; return 1; }
	echo "$dir/$name"
}
