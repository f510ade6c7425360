#!/usr/bin/env bash
# What shipping a dump costs: SHA-256 throughput (every part is hashed before
# it is sent), then dw_s3put (the upload helper's S3 client) sending a
# SIZE-MiB file to s3rver on loopback, as one multipart upload of 64 MiB
# parts and of 5 MiB parts: wall time, MB/s, the child's peak RSS. s3rver
# (node, writing to disk) bounds these figures, not the network.
#   usage: tests/bench/upload.sh [BUILD_DIR] [SIZE_MIB] [RUNS]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
size=${2:-512}
runs=${3:-3}
source "$here/tests/bench/lib.sh"
bench_init dw-bench-upload
"$build/bench_sha256" 256 6
DUMPWATCH=$build/dumpwatch
. "$here/tests/integration/s3lib.sh"
trap 's3rver_stop; bench_cleanup' EXIT
s3rver_install
s3rver_start "$t" dumps
head -c $((size << 20)) /dev/urandom >"$t/file"
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
for part in 64 5; do
	walls=()
	for i in $(seq 1 "$runs"); do
		/usr/bin/time -f '%e %M' -o "$t/time" "$build/dw_s3put" --endpoint "$S3_ENDPOINT" --bucket dumps \
			--part-size $((part << 20)) "$t/file" "bench-$part-$i.core" >/dev/null
		read -r wall rss <"$t/time"
		walls+=("$wall")
		echo "  $size MiB in $part MiB parts, run $i: $wall s, $(awk -v s="$size" -v w="$wall" 'BEGIN{printf "%.0f", s*1.048576/w}') MB/s, peak RSS $rss KB"
	done
	echo "upload $size MiB, $part MiB parts: median $(printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}') s over $runs runs"
done
