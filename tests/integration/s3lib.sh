# Shared helpers for the tests against a real S3-compatible server: s3rver
# (npm), installed once into the build directory (node/) and reused, started
# on a free loopback port with a temporary directory and its buckets, and
# stopped by the pid this script started. s3rver's account is S3RVER/S3RVER.
#
#   s3rver_install           sets S3RVER_JS (skips the test, 77, without node and npm)
#   s3rver_start DIR BUCKET  sets S3RVER_PID, S3RVER_PORT, S3_ENDPOINT; DIR/s3rver.log has its output
#   s3rver_stop              kills it (by its pid) and waits for it
#
# The caller's EXIT trap calls s3rver_stop.

S3RVER_VERSION=3.7.1
S3RVER_PID=
: "${DUMPWATCH:?set by ctest: path of the dumpwatch binary}"
S3_NODE_DIR=${DW_BUILD_DIR:-$(dirname "$DUMPWATCH")}/node

s3rver_install() {
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		echo "SKIP: node and npm are needed to run s3rver"
		exit 77
	fi
	S3RVER_JS=$S3_NODE_DIR/node_modules/s3rver/bin/s3rver.js
	mkdir -p "$S3_NODE_DIR"
	# One install at a time when tests run side by side.
	(
		flock -w 300 9 || { echo "FAIL: waited 300 s for $S3_NODE_DIR/.lock"; exit 1; }
		if [ -f "$S3RVER_JS" ] &&
			grep -q "\"version\": \"$S3RVER_VERSION\"" "$S3_NODE_DIR/node_modules/s3rver/package.json"; then
			exit 0
		fi
		timeout 300 npm install --prefix "$S3_NODE_DIR" --no-audit --no-fund --loglevel=error \
			"s3rver@$S3RVER_VERSION" >"$S3_NODE_DIR/npm.log" 2>&1 ||
			{ echo "FAIL: npm install s3rver@$S3RVER_VERSION failed:"; cat "$S3_NODE_DIR/npm.log"; exit 1; }
	) 9>"$S3_NODE_DIR/.lock"
	[ -f "$S3RVER_JS" ] || { echo "FAIL: $S3RVER_JS missing after npm install"; exit 1; }
}

s3rver_start() { # DIR BUCKET
	local dir=$1 bucket=$2
	mkdir -p "$dir/data"
	# Port 0: the kernel picks a free port, and s3rver says which.
	node "$S3RVER_JS" -d "$dir/data" -a 127.0.0.1 -p 0 -s --configure-bucket "$bucket" \
		>"$dir/s3rver.log" 2>&1 &
	S3RVER_PID=$!
	S3RVER_PORT=
	for _ in $(seq 1 200); do
		S3RVER_PORT=$(sed -n 's/^S3rver listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$dir/s3rver.log")
		[ -n "$S3RVER_PORT" ] && break
		kill -0 "$S3RVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ -z "$S3RVER_PORT" ]; then
		echo "FAIL: s3rver did not start within 20 s:"
		cat "$dir/s3rver.log"
		exit 1
	fi
	S3_ENDPOINT=http://127.0.0.1:$S3RVER_PORT
	for _ in $(seq 1 100); do
		curl -s -o /dev/null --max-time 2 "$S3_ENDPOINT/" && return 0
		sleep 0.1
	done
	echo "FAIL: s3rver on $S3_ENDPOINT does not answer"
	exit 1
}

s3rver_stop() {
	if [ -n "$S3RVER_PID" ]; then
		kill "$S3RVER_PID" 2>/dev/null || true
		wait "$S3RVER_PID" 2>/dev/null || true
		S3RVER_PID=
	fi
}
