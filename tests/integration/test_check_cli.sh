#!/usr/bin/env bash
# `dumpwatch check` on the shipped examples and on bad files: the exact
# file:line:column messages and exit statuses a user sees; a file others may
# write refused; dump.dir inside the directories given or not.
set -euo pipefail
: "${DUMPWATCH:?set by ctest}"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
DATA="$SRC/tests/data/rules"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; echo "--- output"; cat "$T/out" "$T/err" 2>/dev/null; exit 1; }

# check reads files as the daemon does, through the trust checks (root's or
# ours, writable by no one else, and so every directory above): work on a
# copy, since the source tree may be another user's or group-writable.
mkdir -m 0755 "$T/examples" "$T/rules"
install -m 0644 "$SRC"/examples/*.json "$T/examples/"
install -m 0644 "$DATA"/*.json "$T/rules/"
chmod 0755 "$T"
cd "$T"
"$DUMPWATCH" check examples >"$T/out" 2>"$T/err" || fail "examples/ do not check"
grep -qx 'examples/loh-balloon.json: 1 rule OK' "$T/out" || fail "no OK line for loh-balloon.json"
grep -qx 'examples/meters.json: 4 rules OK' "$T/out" || fail "no OK line for meters.json: $(cat "$T/out")"
grep -qx 'examples/exceptions-and-native-memory.json: 4 rules OK' "$T/out" ||
	fail "no OK line for exceptions-and-native-memory.json"
# The one message for good files: fleet.json's hook programs are not on this
# machine (an example), said as warnings that do not fail the file.
grep -qx 'examples/fleet.json: 2 rules OK' "$T/out" || fail "no OK line for fleet.json"
grep -qx 'examples/fleet.json:4: warning: rule orders-loh: hooks.on-fire will not run: hook /usr/local/bin/page-oncall: No such file or directory' "$T/err" ||
	fail "no warning for fleet.json's on-fire program: $(cat "$T/err")"
grep -qx 'examples/fleet.json:4: warning: rule orders-loh: hooks.on-dump will not run: hook /usr/local/bin/post-incident: No such file or directory' "$T/err" ||
	fail "no warning for fleet.json's on-dump program"
[ "$(wc -l <"$T/err")" -eq 2 ] || fail "messages for good files: $(cat "$T/err")"
# A hook program root may run gives none; one another user could change, a warning.
printf '{"name": "h", "when": "gc-pause > 1s", "hooks": {"on-dump": ["/bin/true", "x"]}}\n' >"$T/hook-ok.json"
"$DUMPWATCH" check "$T/hook-ok.json" >"$T/out" 2>"$T/err" || fail "hook-ok.json does not check"
[ ! -s "$T/err" ] || fail "a warning for /bin/true: $(cat "$T/err")"

expect() { # FILE EXPECTED-LINE...
	local f=$1 rc=0
	shift
	"$DUMPWATCH" check "$f" >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" -eq 1 ] || fail "$f: exit status $rc, expected 1"
	for line in "$@"; do grep -qxF -- "$line" "$T/err" || fail "$f: missing line: $line"; done
	[ "$(wc -l <"$T/err")" -eq "$#" ] || fail "$f: expected $# lines"
}
cd "$T/rules"
expect bad-metric.json 'bad-metric.json:5:27: unknown metric "loh-sise"; did you mean "loh-size"?'
expect bad-unit.json 'bad-unit.json:3:44: "above": "500" needs a unit: a size such as 500MB or 1.5GiB'
expect bad-duration.json \
	'bad-duration.json:4:27: "cooldown": unknown duration unit in "5 parsecs": use ms, s, m (or min), h or d'
expect bad-unknown-key.json 'bad-unknown-key.json:4:3: unknown key "limit" in rule; did you mean "limits"?'
expect bad-syntax.json 'bad-syntax.json:4:1: invalid JSON: unexpected character'
expect bad-exception.json \
	'bad-exception.json:5:5: an exception condition counts in a window: write "in 1m", not "for"'
expect bad-meter.json \
	"bad-meter.json:5:5: a meter's tag filter must end with ']' (values hold no ',' ']' or control character)"
expect bad-meter-object.json \
	'bad-meter-object.json:3:23: a meter condition is written as a string, as in "when": "meter Meter.Name/instrument p99 > 2s for 30s"'
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

# A file others may write: refused, as the daemon refuses it.
mkdir -m 0755 "$T/trust"
install -m 0666 "$T/rules/good-single.json" "$T/trust/open.json"
rc=0
"$DUMPWATCH" check "$T/trust/open.json" >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -eq 1 ] || fail "group/other-writable file: exit $rc, expected 1"
grep -qxF "$T/trust/open.json: refused: file $T/trust/open.json is writable by group or others (mode 0666): only files and directories no one else can change may give dumpwatch orders ('chmod go-w $T/trust/open.json')" "$T/err" ||
	fail "refusal message"
[ ! -s "$T/out" ] || fail "a refused file reported OK"

# dump.dir must lie inside the daemon's --dump-dir or an --allow-dump-dir
# (good-single.json's is /var/lib/dumpwatch/dumps; without options, check
# assumes the installed service's --dump-dir, which is that one).
"$DUMPWATCH" check good-single.json >"$T/out" 2>"$T/err" || fail "dump.dir inside the service's --dump-dir refused"
"$DUMPWATCH" check --dump-dir /srv/dumps --allow-dump-dir /var/lib good-single.json >"$T/out" 2>"$T/err" ||
	fail "dump.dir inside --allow-dump-dir refused"
expect_dirs() { # EXPECTED-LINE CHECK-ARGS...
	local line=$1 rc=0
	shift
	"$DUMPWATCH" check "$@" >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" -eq 1 ] || fail "check $*: exit status $rc, expected 1"
	grep -qxF -- "$line" "$T/err" || fail "check $*: missing line: $line"
}
expect_dirs 'good-single.json:6:36: dump dir "/var/lib/dumpwatch/dumps" is not inside an allowed dump directory (/srv/dumps, /var/lib/dumpwatch/dumps2): dumps go only below the daemon'"'"'s --dump-dir and its --allow-dump-dir directories' \
	--dump-dir /srv/dumps --allow-dump-dir /var/lib/dumpwatch/dumps2 good-single.json

# Unreadable path: exit 2.
rc=0
"$DUMPWATCH" check "$T/nonexistent.json" >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -eq 2 ] || fail "missing file: exit $rc, expected 2"

# A bad command line is a usage error (1), as in every other mode; it was 2,
# which elsewhere means "no such process".
for args in "" "--no-such-option good-single.json" "--dump-dir /srv/../etc good-single.json"; do
	rc=0
	# shellcheck disable=SC2086 # the words of $args are separate arguments
	"$DUMPWATCH" check $args >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" -eq 1 ] || fail "check $args: exit $rc, expected 1 (usage)"
done

# --help, of check and of dumpwatch, ends with the exit-status table.
"$DUMPWATCH" check --help >"$T/out" 2>"$T/err" || fail "check --help failed"
grep -q '^    1 usage    bad command line or rule; check: ' "$T/out" || fail "check --help: no exit status 1"
"$DUMPWATCH" --help >"$T/out" 2>"$T/err" || fail "--help failed"
grep -q '^  130 signal   ' "$T/out" || fail "--help: no exit status 130"
echo "PASS: check reports exact positions and exit statuses"
