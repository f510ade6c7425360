#!/usr/bin/env bash
# `dumpwatch check` on the shipped examples and on bad files: the exact
# file:line:column messages and exit statuses a user sees.
set -euo pipefail
: "${DUMPWATCH:?set by ctest}"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
DATA="$SRC/tests/data/rules"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; echo "--- output"; cat "$T/out" "$T/err" 2>/dev/null; exit 1; }

cd "$SRC"
"$DUMPWATCH" check examples >"$T/out" 2>"$T/err" || fail "examples/ do not check"
grep -qx 'examples/loh-balloon.json: 1 rule OK' "$T/out" || fail "no OK line for loh-balloon.json"
[ ! -s "$T/err" ] || fail "messages for good files"

expect() { # FILE EXPECTED-LINE...
	local f=$1 rc=0
	shift
	"$DUMPWATCH" check "$f" >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" -eq 1 ] || fail "$f: exit status $rc, expected 1"
	for line in "$@"; do grep -qxF -- "$line" "$T/err" || fail "$f: missing line: $line"; done
	[ "$(wc -l <"$T/err")" -eq "$#" ] || fail "$f: expected $# lines"
}
cd "$DATA"
expect bad-metric.json 'bad-metric.json:5:27: unknown metric "loh-sise"; did you mean "loh-size"?'
expect bad-unit.json 'bad-unit.json:3:44: "above": "500" needs a unit: a size such as 500MB or 1.5GiB'
expect bad-duration.json \
	'bad-duration.json:4:27: "cooldown": unknown duration unit in "5 parsecs": use ms, s, m (or min), h or d'
expect bad-unknown-key.json 'bad-unknown-key.json:4:3: unknown key "limit" in rule; did you mean "limits"?'
expect bad-syntax.json 'bad-syntax.json:4:1: invalid JSON: unexpected character'
expect bad-above-below.json \
	'bad-above-below.json:3:51: condition has both "above" and "below"; give one (two conditions make a range)'

# A name defined in two files of one directory.
mkdir "$T/dir"
cp dup-across-a.json dup-across-b.json "$T/dir/"
rc=0
"$DUMPWATCH" check "$T/dir" >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -eq 1 ] || fail "duplicate across files: exit $rc"
grep -qxF "$T/dir/dup-across-b.json:1:11: rule name \"a\" is also defined at $T/dir/dup-across-a.json:3:15" "$T/err" ||
	fail "duplicate name message"

# Unreadable path: exit 2.
rc=0
"$DUMPWATCH" check "$T/nonexistent.json" >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -eq 2 ] || fail "missing file: exit $rc, expected 2"
echo "PASS: check reports exact positions and exit statuses"
