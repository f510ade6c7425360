#!/usr/bin/env bash
# What each dump type costs and holds (docs/dumps.md): for each of normal,
# withheap, triage and full, MemSpike allocates MB megabytes of 1 MB arrays on
# the LOH and keeps them, dumpwatch is attached with 'loh-size > MB/2' and an
# induced GC fires it; then the file's size, the time dumpwatch journaled for
# writing it, and what DumpCheck (ClrMD) sees in it. Not a test: figures only.
#   usage: tests/bench/dump_types.sh [BUILD_DIR] [MB] [TYPES...]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
mb=${2:-400}
shift $(($# > 2 ? 2 : $#))
types=("$@")
((${#types[@]})) || types=(normal withheap triage full)
check=${DW_DUMPCHECK:-$build/tools/DumpCheck/DumpCheck}
command -v jq >/dev/null || { echo "dump_types: needs jq" >&2; exit 1; }
t=$(mktemp -d /tmp/dw-dumptypes.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$t"' EXIT
printf '%-9s %10s %9s %9s  %s\n' type "file MB" "write s" "check s" "what DumpCheck sees"
for type in "${types[@]}"; do
	rm -rf "$t/d" "$t/cmd"
	mkdir -p "$t/d"
	mkfifo "$t/cmd"
	exec 3<>"$t/cmd"
	"$build/apps/MemSpike/MemSpike" <"$t/cmd" >"$t/app.out" 2>&1 &
	ap=$!
	pids+=("$ap")
	until grep -q ready "$t/app.out"; do sleep 0.05; done
	until ls /tmp/dotnet-diagnostic-$ap-*-socket >/dev/null 2>&1; do sleep 0.05; done
	echo "loh $mb" >&3
	until grep -q "done loh" "$t/app.out"; do sleep 0.05; done
	"$build/dumpwatch" --pid "$ap" --when "loh-size > $((mb / 2))MB" --dump-type "$type" \
		--dump-dir "$t/d" --journal "$t/j.jsonl" >"$t/dw.out" 2>&1 &
	dp=$!
	pids+=("$dp")
	for _ in $(seq 150); do grep -q 'watching pid' "$t/dw.out" && break; sleep 0.1; done
	# A GC end reports the LOH size; "watching" may come before the
	# session's first events, so a GC is induced until one is seen.
	while kill -0 "$dp" 2>/dev/null; do
		grep -q 'fired' "$t/dw.out" || echo "gc 0" >&3
		sleep 0.3
	done
	wait "$dp" || { cat "$t/dw.out"; exit 1; }
	rec=$(grep '"event":"dump"' "$t/j.jsonl" | tail -1)
	core=$(echo "$rec" | jq -r .path)
	t0=$(date +%s.%N)
	"$check" "$core" >"$t/check.json"
	t1=$(date +%s.%N)
	seen=$(jq -r '
		(if .heap == null then "heap: none (" + .heap_reason + ")"
		 else "heap: \([.heap.generations[]] | add / 1e6 | floor) MB (LOH \(.heap.generations.loh / 1e6 | floor) MB), " +
			"\([.heap.generations_in_dump[]] | add / 1e3 | floor) KB of it in the dump, " +
			(if .heap.objects == null then "no objects"
			 else "\(.heap.objects.count) objects, byte[] >= 85000: " +
				([.heap.objects.large[] | select(.type == "System.Byte[]")] |
				 if length == 0 then "none" else "\(.[0].count) = \(.[0].bytes / 1e6 | floor) MB" end)
			 end)
		 end) + "; threads: \(.threads | length), with managed frames: \([.threads[] | select(.frames | length > 0)] | length)"
		' "$t/check.json")
	printf '%-9s %10.1f %9.2f %9.2f  %s\n' "$type" "$(echo "$rec" | jq '.bytes / 1e6')" \
		"$(echo "$rec" | jq '.duration_ms / 1000')" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$seen"
	kill -9 "$ap"
	wait "$ap" 2>/dev/null || true
	exec 3>&-
	rm -f "$core"
done
