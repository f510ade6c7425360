#!/usr/bin/env bash
# Builds the fuzz targets (tests/fuzz/fuzz_*.c) with clang's libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer, and runs each for a time:
#
#   scripts/fuzz.sh [--time SECONDS] [TARGET...]   default 60 s each, all targets
#   scripts/fuzz.sh --ci                           15 s each (what CI runs)
#
# Targets: nettrace (the stream parser + decoders), events (the payload
# decoders), rulefile (the rule-file parser), when (the --when grammar, and
# meter conditions read from series made of the input),
# journal (the JSON-lines writer of the journal, views, ps and state),
# context (a dump context read back: show's text and the plot), procstat (the
# /proc/PID/status parser), cgroup (the /proc/PID/cgroup parser), s3resp
# (what the daemon reads of an S3 server's answer), heapgraph (the heap-walk
# decoders, the graph assembly and the heap summary), clrmeta (the assembly
# metadata reader: the classes of a heap snapshot's statics).
# Corpora grow in build-fuzz/corpus/TARGET, seeded from tests/data, examples
# and tests/fuzz/seeds; a crash, leak, timeout or sanitizer report is written
# to build-fuzz/findings/TARGET/ and makes the script exit 1. Copy a finding
# into tests/fuzz/regressions/TARGET/ once fixed: ctest replays it for good.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${FUZZ_BUILD_DIR:-$here/build-fuzz}
secs=60
targets=()
while (($#)); do
	case $1 in
	--time) secs=$2; shift 2 ;;
	--ci) secs=15; shift ;;
	-h | --help) sed -n '2,15p' "$0"; exit 0 ;;
	*) targets+=("$1"); shift ;;
	esac
done
((${#targets[@]})) || targets=(nettrace events rulefile when journal context procstat cgroup s3resp heapgraph clrmeta)
"$here/scripts/setup.sh" --no-dotnet >/dev/null
command -v clang >/dev/null || { echo "fuzz: clang is not installed (scripts/setup.sh installs it)" >&2; exit 1; }

mkdir -p "$out/obj"
flags=(-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE
	-std=gnu11 -I/usr/include/json-c -DDW_TEST_DATA="\"$here/tests/data\"")
for d in "$here"/include/[0-9]-*; do flags+=(-I"$d"); done
objs=()
# The daemon's layers; the helper programs link libraries no target needs.
for src in $(find "$here/src" -path "$here/src/helpers" -prune -o -name "*.c" -print | sort); do
	[ "$(basename "$src")" = main.c ] && continue
	o="$out/obj/$(basename "$src" .c).o"
	if [ ! -e "$o" ] || [ "$src" -nt "$o" ] || [ -n "$(find "$here/include" -newer "$o" -name '*.h' | head -1)" ]; then
		clang "${flags[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$o"
	fi
	objs+=("$o")
done
libs=(-ljson-c -linotifytools -lm)

seeds_of() {
	case $1 in
	nettrace) echo "$here/tests/data" ;;
	events) echo "$here/tests/data/payloads" ;;
	rulefile) echo "$here/tests/data/rules $here/examples" ;;
	when) echo "$here/tests/fuzz/seeds/when" ;;
	journal) echo "$here/tests/fuzz/seeds/journal" ;;
	context) echo "$here/tests/data/context" ;;
	procstat) echo "$here/tests/data/proc" ;;
	cgroup) echo "$here/tests/fuzz/seeds/cgroup" ;;
	s3resp) echo "$here/tests/fuzz/seeds/s3resp" ;;
	heapgraph) echo "$here/tests/fuzz/seeds/heapgraph" ;;
	clrmeta) echo "$here/tests/data/assemblies" ;;
	esac
}

status=0
summary=()
for t in "${targets[@]}"; do
	src="$here/tests/fuzz/fuzz_$t.c"
	[ -f "$src" ] || { echo "fuzz: no target $t" >&2; exit 1; }
	bin="$out/fuzz_$t"
	clang "${flags[@]}" -fsanitize=fuzzer "$src" "${objs[@]}" "${libs[@]}" -o "$bin"
	corpus="$out/corpus/$t"
	findings="$out/findings/$t"
	mkdir -p "$corpus" "$findings"
	log="$out/fuzz_$t.log"
	# shellcheck disable=SC2046
	set +e
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -max_len=262144 -print_final_stats=1 \
		-artifact_prefix="$findings/" "$corpus" $(seeds_of "$t") >"$log" 2>&1
	rc=$?
	set -e
	runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
	speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
	cov=$(grep -oE '^#[0-9]+.*cov: [0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+' | grep -oE '[0-9]+' || echo 0)
	found=$(find "$findings" -type f | wc -l)
	line=$(printf '%-9s %4ss  %10s runs  %7s/s  cov %5s  corpus %5s  findings %s' "$t" "$secs" "$runs" "$speed" \
		"$cov" "$(find "$corpus" -type f | wc -l)" "$found")
	summary+=("$line")
	if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
		status=1
		echo "fuzz: $t: FINDING (exit $rc); log $log, inputs in $findings" >&2
		grep -E "ERROR|SUMMARY|runtime error" "$log" | head -5 >&2 || true
	fi
done
echo "fuzz: $(date -u +%FT%TZ), $(clang --version | head -1)"
printf '%s\n' "${summary[@]}"
exit $status
