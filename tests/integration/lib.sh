# Shared helpers for the integration tests: start the real MemSpike .NET program
# with a command pipe, run the real dumpwatch against it, wait with bounds, and
# clean up every process started here by its pid.
set -euo pipefail

: "${DUMPWATCH:?set by ctest: path of the dumpwatch binary}"
: "${DW_APPS_DIR:?set by ctest: where the .NET test apps are built}"
: "${DW_CORECHECK:?set by ctest: path of corecheck}"
APP="$DW_APPS_DIR/MemSpike/MemSpike"
[ -x "$APP" ] || { echo "FAIL: $APP not built (scripts/build-apps.sh)"; exit 1; }

T=$(mktemp -d /tmp/dw-it.XXXXXX)
chmod 0755 "$T"
DUMPS="$T/dumps"
mkdir -p "$DUMPS"
JOURNAL="$T/journal.jsonl"
PIDS=()

cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	exec 3>&- 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	echo "--- dumpwatch output"; cat "$T/dw.out" 2>/dev/null || true
	echo "--- app output"; cat "$T/app.out" 2>/dev/null || true
	echo "--- journal"; cat "$JOURNAL" 2>/dev/null || true
	exit 1
}

# start_app [RUNNER...]: starts MemSpike reading commands from fd 3, run
# through RUNNER when given (e.g. setpriv to change user, env to change the
# runtime); sets APP_PID.
start_app() {
	mkfifo -m 0666 "$T/cmd"
	exec 3<>"$T/cmd"
	: >"$T/app.out"
	chmod 0666 "$T/app.out"
	"$@" "$APP" <"$T/cmd" >"$T/app.out" 2>&1 &
	APP_PID=$!
	PIDS+=("$APP_PID")
	wait_for "grep -q ready '$T/app.out'" 10 || fail "MemSpike did not start"
	# The diagnostics socket appears as the runtime starts; wait for it too.
	wait_for "ls ${SOCKET_DIR:-/tmp}/dotnet-diagnostic-$APP_PID-*-socket >/dev/null 2>&1" 10 ||
		fail "no diagnostics socket"
}

# as_nobody: the RUNNER that starts a program as the unprivileged user nobody.
as_nobody() { exec setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

app_cmd() { echo "$*" >&3; }

# start_dw ARGS...: runs dumpwatch in the background; sets DW_PID.
start_dw() {
	# -v: on failure, the output shows which events arrived.
	"$DUMPWATCH" -v "$@" >"$T/dw.out" 2>&1 &
	DW_PID=$!
	PIDS+=("$DW_PID")
}

# wait_attached: until dumpwatch says it is watching.
wait_attached() {
	wait_for "grep -q 'watching pid' '$T/dw.out'" 15 || fail "dumpwatch did not attach"
}

# wait_dw SECONDS: waits for dumpwatch to exit; sets DW_RC.
wait_dw() {
	local deadline=$((SECONDS + $1))
	while kill -0 "$DW_PID" 2>/dev/null; do
		((SECONDS < deadline)) || fail "dumpwatch still running after $1 s"
		sleep 0.1
	done
	set +e
	wait "$DW_PID"
	DW_RC=$?
	set -e
}

# wait_for CONDITION SECONDS
wait_for() {
	local deadline=$((SECONDS + $2))
	until eval "$1"; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}

count_dumps() { find "$DUMPS" -maxdepth 1 -name '*.core' | wc -l; }
count_partials() { find "$DUMPS" -maxdepth 1 -name '.*.partial' | wc -l; }
journal_count() { grep -c "\"event\":\"$1\"" "$JOURNAL" 2>/dev/null || true; }
