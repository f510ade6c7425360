# Shared helpers for the integration tests: start the real MemSpike .NET program
# with a command pipe, run the real dumpwatch against it, wait with bounds, and
# clean up every process started here by its pid.
set -euo pipefail

: "${DUMPWATCH:?set by ctest: path of the dumpwatch binary}"
: "${DW_APPS_DIR:?set by ctest: where the .NET test apps are built}"
: "${DW_CORECHECK:?set by ctest: path of corecheck}"
APP="$DW_APPS_DIR/MemSpike/MemSpike"
[ -x "$APP" ] || { echo "FAIL: $APP not built (scripts/build-apps.sh)"; exit 1; }
# The runtime version the apps carry when they are self-contained builds (the
# .NET 8 and 9 variants, DW_RUNTIME=8 or 9: a runtime the host has not
# installed); empty when they run on the host's runtime.
APP_SELF_CONTAINED=$(tr -d ' \n' <"$APP.runtimeconfig.json" |
	sed -n 's/.*"includedFrameworks":\[{"name":"Microsoft.NETCore.App","version":"\([^"]*\)".*/\1/p')

T=$(mktemp -d /tmp/dw-it.XXXXXX)
chmod 0755 "$T"
DUMPS="$T/dumps"
mkdir -p "$DUMPS"
JOURNAL="$T/journal.jsonl"
PIDS=()
USERS_MADE=()

cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	# A runtime killed with SIGKILL leaves its diagnostics socket behind:
	# removed, so that runs do not pile them up in /tmp.
	for p in "${PIDS[@]}"; do [ -d "/proc/$p" ] || rm -f /tmp/dotnet-diagnostic-"$p"-*-socket; done
	# Users made by this test: whatever they still run is the test's too.
	for u in "${USERS_MADE[@]}"; do
		pkill -KILL -U "$u" 2>/dev/null || true
		for _ in 1 2 3 4 5 6 7 8 9 10; do pgrep -U "$u" >/dev/null || break; sleep 0.1; done
		find /tmp -maxdepth 1 -name 'dotnet-diagnostic-*' -user "$u" -delete 2>/dev/null || true
		userdel "$u" 2>/dev/null || true
	done
	exec 3>&- 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT

# grep_q ARGS...: grep -q that reads all of its input. With pipefail, `cmd |
# grep -q` fails at random once cmd writes more than the pipe holds: grep -q
# exits at the first match and cmd dies of SIGPIPE.
grep_q() { grep "$@" >/dev/null; }

fail() {
	echo "FAIL: $*"
	echo "--- dumpwatch output"; cat "$T/dw.out" 2>/dev/null || true
	echo "--- app output"; cat "$T/app.out" 2>/dev/null || true
	echo "--- journal"; cat "$JOURNAL" 2>/dev/null || true
	echo "FAIL: $*" # again, last: a long output is read from its end
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
	check_runtime "$T/app.out"
	# The diagnostics socket appears as the runtime starts; wait for it too.
	wait_for "ls ${SOCKET_DIR:-/tmp}/dotnet-diagnostic-$APP_PID-*-socket >/dev/null 2>&1" 10 ||
		fail "no diagnostics socket"
}

# check_runtime OUTFILE: with DW_RUNTIME set, the app that wrote its ready
# line to OUTFILE must run on that major version of .NET.
check_runtime() {
	[ -z "${DW_RUNTIME:-}" ] || grep -q "^ready .* runtime=$DW_RUNTIME\." "$1" ||
		fail "expected .NET $DW_RUNTIME: $(grep -m1 '^ready' "$1")"
}

# skip REASON: the test cannot run here; ctest reports it as skipped (77).
skip() {
	echo "SKIP: $*"
	exit 77
}

# make_user ROLE: a fresh unprivileged user for this test only, removed (with
# every process it still runs) at exit; sets $ROLE to its name, ${ROLE}_UID
# and ${ROLE}_GID. Needs root.
make_user() {
	local role=$1 name
	[ "$(id -u)" -eq 0 ] || skip "needs root to create a user"
	name="dw${role,,}$$"
	name=${name:0:31}
	useradd --system --no-create-home --shell /usr/sbin/nologin --user-group "$name" ||
		fail "cannot create user $name"
	USERS_MADE+=("$name")
	printf -v "$role" '%s' "$name"
	printf -v "${role}_UID" '%s' "$(id -u "$name")"
	printf -v "${role}_GID" '%s' "$(id -g "$name")"
}

# as_user ROLE CMD...: runs CMD as that user, with no supplementary groups.
# In a subshell (a RUNNER of start_app or start_tagged, $(...)) it replaces
# the subshell, so that $! is the program's own pid.
LIB_SUBSHELL=$BASH_SUBSHELL
as_user() {
	local uid_var="${1}_UID" gid_var="${1}_GID"
	shift
	if ((BASH_SUBSHELL > LIB_SUBSHELL)); then
		exec setpriv --reuid="${!uid_var}" --regid="${!gid_var}" --clear-groups "$@"
	fi
	setpriv --reuid="${!uid_var}" --regid="${!gid_var}" --clear-groups "$@"
}

# require_userns ROLE: skips the test when that user may not create a user
# namespace (unshare -Ur), saying why.
require_userns() {
	local why
	why=$(as_user "$1" unshare -Ur true 2>&1) ||
		skip "the kernel refuses unprivileged user namespaces (unshare -Ur as ${!1}: ${why:-refused})"
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

# check_dump [--type T] [--name NAME] CORE PID[,PID...] [MIN_LOH_BYTES]: reads
# CORE with DumpCheck (tests/tools/DumpCheck, ClrMD; DW_DUMPCHECK, default the
# one beside dumpwatch's build, whatever runtime DW_APPS_DIR's apps use) and
# fails unless it is a dump of one of those pids, of a process named NAME
# (default MemSpike's, as the kernel keeps it: 15 bytes), read through a DAC
# of the dump's own runtime build, with a managed thread showing managed
# frames. By dump type T (default withheap): withheap and full hold the heap's
# objects, all of them, and with MIN_LOH_BYTES (the dump was taken on loh-size > that) the
# LOH is at least that and byte[] arrays of 85000 bytes or more make up at
# least that; normal holds the GC's segments (their LOH size checked the same)
# but not their memory; triage holds no heap. Sets CHECK_JSON, the file
# holding DumpCheck's JSON, for a test's own checks (dump_json FILTER).

# dump_json [JQ ARGS] FILTER: jq -r on the last DumpCheck output.
dump_json() { jq -r "$@" "$CHECK_JSON"; }
DW_DUMPCHECK=${DW_DUMPCHECK:-$(dirname "$DUMPWATCH")/tools/DumpCheck/DumpCheck}
CHECKS=0
check_dump() {
	local type=withheap name core pids min got
	name=$(basename "$APP")
	while [ $# -gt 0 ]; do
		case "$1" in
		--type) type=$2; shift 2 ;;
		--name) name=$2; shift 2 ;;
		*) break ;;
		esac
	done
	core=$1 pids=$2 min=${3:-0}
	name=${name:0:15}
	[ -x "$DW_DUMPCHECK" ] || fail "$DW_DUMPCHECK not built (scripts/build-apps.sh)"
	[ -f "$core" ] || fail "check_dump: no dump file '$core'"
	CHECKS=$((CHECKS + 1))
	CHECK_JSON="$T/check-$CHECKS.json"
	# The checker is a .NET 10 program: not under a DOTNET_ROOT a test set for its target.
	env -u DOTNET_ROOT -u DOTNET_ROOT_X64 "$DW_DUMPCHECK" "$core" >"$CHECK_JSON" 2>"$T/check.err" ||
		fail "DumpCheck cannot read $core: $(cat "$T/check.err")"
	got=$(dump_json .pid)
	[[ ",$pids," == *",$got,"* ]] || fail "$core is a dump of pid $got, not of $pids"
	[ "$(dump_json .process_name)" = "$name" ] || fail "$core is a dump of '$(dump_json .process_name)', not of '$name'"
	[ "$(dump_json .runtime.dac_verified)" = true ] || fail "$core: no DAC of its runtime's build ($(dump_json .runtime))"
	[ "$(dump_json '[.threads[] | select(.frames | length > 0)] | length')" -ge 1 ] ||
		fail "$core: no thread with managed frames: $(dump_json -c .threads)"
	case "$type" in
	withheap | full)
		[ "$(dump_json '.heap.objects.complete')" = true ] ||
			fail "$core: a $type dump without all of the heap's memory: $(dump_json -c '.heap_reason // .heap')"
		;;
	normal)
		# A page or two of the heap may come along with what a normal
		# dump holds; the LOH's memory never does.
		[ "$(dump_json '.heap != null and .heap.generations_in_dump.loh == 0 and .heap.objects.complete != true')" = true ] ||
			fail "$core: a normal dump should list the GC's segments without their memory: $(dump_json -c .heap)"
		;;
	triage)
		[ "$(dump_json .heap)" = null ] || fail "$core: a triage dump with a heap: $(dump_json -c .heap)"
		;;
	*) fail "check_dump: unknown dump type '$type'" ;;
	esac
	if [ "$min" -gt 0 ] && [ "$type" != triage ]; then
		[ "$(dump_json .heap.generations.loh)" -ge "$min" ] ||
			fail "$core: LOH $(dump_json .heap.generations.loh) bytes in the dump, the rule fired above $min"
	fi
	if [ "$min" -gt 0 ] && { [ "$type" = withheap ] || [ "$type" = full ]; }; then
		got=$(dump_json '[.heap.objects.large[] | select(.type == "System.Byte[]") | .bytes] | add // 0')
		[ "$got" -ge "$min" ] ||
			fail "$core: byte[] arrays of 85000 bytes or more hold $got bytes, the rule fired above $min"
	fi
	echo "check_dump: $(basename "$core"): pid $(dump_json .pid) $(dump_json .process_name), $type, runtime $(dump_json .runtime.clr_version)," \
		"LOH $(dump_json '.heap.generations.loh // "-"') bytes, large byte[] $(dump_json '[.heap.objects.large[]? | select(.type == "System.Byte[]") | .bytes] | add // "-"')," \
		"$(dump_json '.threads | length') threads, top frame $(dump_json '[.threads[] | select(.frames | length > 0)][0].frames[0]')"
}
# not_context DIR: what DIR holds besides dump contexts (NAME.json and
# NAME.svg, which dumpwatch writes beside a dump taken, skipped or failed).
not_context() {
	local f
	for f in "$1"/* "$1"/.[!.]*; do
		[ -e "$f" ] || [ -L "$f" ] || continue
		case "$f" in
		*.json) [ -f "$f" ] && [ ! -L "$f" ] && jq -e '.dumpwatch_context == 1' "$f" >/dev/null 2>&1 && continue ;;
		*.svg) [ -f "$f" ] && [ ! -L "$f" ] && [ -f "${f%.svg}.json" ] && grep -q '<svg' "$f" && continue ;;
		esac
		echo "${f##*/}"
	done
}
# context_outcomes DIR: the outcome of each context in DIR, one per line, sorted.
context_outcomes() { for f in "$1"/*.json; do [ -f "$f" ] && jq -r 'select(.dumpwatch_context == 1) | .outcome' "$f"; done | sort; }
count_partials() { find "$DUMPS" -maxdepth 1 -name '.*.partial' | wc -l; }
journal_count() { grep -c "\"event\":\"$1\"" "$JOURNAL" 2>/dev/null || true; }

# --- several apps and the guard (dumpwatch --rules-dir) ---

declare -A APP_FD APP_PIDS

# start_tagged TAG [RUNNER...]: starts MemSpike with "--tag TAG" on its command
# line (what rules tell the processes apart by), commands from its own fifo;
# sets APP_PIDS[TAG]. Output in $T/TAG.out.
start_tagged() {
	local tag=$1 fd
	shift
	mkfifo -m 0666 "$T/$tag.cmd"
	exec {fd}<>"$T/$tag.cmd"
	APP_FD[$tag]=$fd
	: >"$T/$tag.out"
	chmod 0666 "$T/$tag.out"
	"$@" "$APP" --tag "$tag" <"$T/$tag.cmd" >"$T/$tag.out" 2>&1 &
	APP_PIDS[$tag]=$!
	PIDS+=("$!")
	wait_for "grep -q ready '$T/$tag.out'" 10 || fail "MemSpike $tag did not start"
	check_runtime "$T/$tag.out"
}

# tagged_cmd TAG COMMAND...: sends a command to that app.
tagged_cmd() {
	local tag=$1
	shift
	echo "$*" >&"${APP_FD[$tag]}"
}

# wait_tagged_done TAG COMMAND SECONDS: until the app has answered COMMAND.
wait_tagged_done() {
	wait_for "grep -qF 'done $2' '$T/$1.out'" "$3" || fail "$1 did not finish '$2'"
}

# start_guard ARGS...: runs `dumpwatch --rules-dir` in the background with
# the test's journal and dump directory; sets DW_PID. Appends to $T/dw.out.
RULES="$T/rules.d"
mkdir -p "$RULES"
start_guard() {
	local before
	before=$(grep -c 'guarding' "$T/dw.out" 2>/dev/null || true)
	"$DUMPWATCH" -v --rules-dir "$RULES" --dump-dir "$DUMPS" --journal "$JOURNAL" "$@" >>"$T/dw.out" 2>&1 &
	DW_PID=$!
	PIDS+=("$DW_PID")
	# dw.out is appended to: wait for this start's line, not an earlier one.
	wait_for "[ \$(grep -c 'guarding' '$T/dw.out') -gt ${before:-0} ]" 15 || fail "dumpwatch --rules-dir did not start"
}

# wait_journal EVENT COUNT SECONDS [FILTER]: until the journal has COUNT records of
# EVENT (containing FILTER, when given).
wait_journal() {
	wait_for "[ \"\$(grep '\"event\":\"$1\"' '$JOURNAL' 2>/dev/null | grep -cF -- '${4:-}')\" -ge $2 ]" "$3"
}

# journal_count_with EVENT TEXT: records of EVENT that contain TEXT.
journal_count_with() { grep "\"event\":\"$1\"" "$JOURNAL" 2>/dev/null | grep -cF -- "$2" || true; }

# dumps_of PID: dump files of that pid.
dumps_of() { find "$DUMPS" -maxdepth 1 -name "*-$1-*.core" | wc -l; }

# stop_guard: SIGTERM, then waits (bounded) for a clean exit; sets DW_RC.
stop_guard() {
	kill -TERM "$DW_PID"
	wait_dw "${1:-15}"
}

# copy_runtime DIR: a private copy of the machine's .NET runtime (host and
# Microsoft.NETCore.App) in DIR, for a target started with DOTNET_ROOT=DIR
# whose createdump a test replaces or whose directories it opens up; sets
# RUNTIME_DIR to the copied framework's version directory. A self-contained
# app carries its runtime: then DIR is a copy of the app, which APP names
# (DOTNET_ROOT does not matter to it), and RUNTIME_DIR is DIR.
copy_runtime() {
	local src
	if [ -n "$APP_SELF_CONTAINED" ]; then
		mkdir -p "$1"
		cp -a "$(dirname "$APP")/." "$1/"
		APP="$1/$(basename "$APP")"
		RUNTIME_DIR=$1
		return
	fi
	src=$(dirname "$(readlink -f "$(command -v dotnet)")")
	mkdir -p "$1/shared"
	cp -a "$src/host" "$1/"
	cp -a "$src/shared/Microsoft.NETCore.App" "$1/shared/"
	RUNTIME_DIR=$(dirname "$(find "$1/shared/Microsoft.NETCore.App" -name libcoreclr.so | head -1)")
}

# user_runtime DIR: a home for a user's own .NET: a copy of the runtime in
# DIR/rt whose createdump is moved aside to createdump.real (for the test to
# replace), and of MemSpike in DIR/app, which APP then names. Sets
# RUNTIME_DIR; the caller hands DIR to the user.
user_runtime() {
	mkdir -p "$1"
	copy_runtime "$1/rt"
	cp -r "$(dirname "$APP")" "$1/app"
	APP="$1/app/$(basename "$APP")"
	mv "$RUNTIME_DIR/createdump" "$RUNTIME_DIR/createdump.real"
}

# dotnet_tool NAME: the path of the .NET diagnostics tool NAME (dotnet-gcdump,
# dotnet-dump, dotnet-trace) at the version the tests compare against,
# installed once from NuGet into DW_TOOLS_DIR (default: beside the apps'
# build); skips the test when it cannot be had.
DW_DOTNET_TOOLS_VERSION=10.0.750501
dotnet_tool() {
	local dir=${DW_TOOLS_DIR:-$(dirname "$DW_APPS_DIR")/dotnet-tools} name=$1
	if [ ! -x "$dir/$name" ]; then
		mkdir -p "$dir"
		DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 dotnet tool install --tool-path "$dir" "$name" \
			--version "$DW_DOTNET_TOOLS_VERSION" >"$T/tool-install.log" 2>&1 ||
			skip "$name $DW_DOTNET_TOOLS_VERSION cannot be installed: $(tail -1 "$T/tool-install.log")"
	fi
	echo "$dir/$name"
}
