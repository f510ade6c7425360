#!/usr/bin/env bash
# The manual pages: dumpwatch(8) and dumpwatch-rules(5) pass `mandoc -Tlint`
# (only references to pages not installed here are let through: each page's
# to the other, which mandoc resolves once both are installed), and dumpwatch(8) names exactly the options
# that `--help` of every mode names, with the same short forms.
set -euo pipefail
: "${DUMPWATCH:?set by ctest}"
SRC=${DW_SOURCE_DIR:?set by ctest}
T=$(mktemp -d /tmp/dw-man.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v mandoc >/dev/null || fail "mandoc is missing (scripts/setup.sh installs it)"

for page in "$SRC/man/dumpwatch.8" "$SRC/man/dumpwatch-rules.5"; do
	mandoc -Tlint "$page" >"$T/lint" 2>&1 || true
	# Whether a page referred to is installed, and mandoc's database, are
	# the machine's, not the page's.
	grep -v -e 'STYLE: referenced manual not found: Xr' -e 'outdated mandoc.db' "$T/lint" >"$T/left" || true
	[ ! -s "$T/left" ] || fail "mandoc -Tlint $(basename "$page"): $(cat "$T/left")"
	mandoc -Tascii "$page" 2>/dev/null | col -b >"$T/$(basename "$page").txt"
	[ -s "$T/$(basename "$page").txt" ] || fail "$(basename "$page") renders empty"
done

{
	"$DUMPWATCH" --help
	for mode in ps record check counters gc status show report import; do
		"$DUMPWATCH" "$mode" --help || fail "dumpwatch $mode --help failed"
	done
} >"$T/help" 2>&1
longs() { grep -o -- '--[a-z][a-z0-9-]*' "$1" | sort -u; }
longs "$T/help" >"$T/help.long"
longs "$T/dumpwatch.8.txt" >"$T/man.long"
[ "$(wc -l <"$T/help.long")" -ge 40 ] || fail "too few options read from --help: $(wc -l <"$T/help.long")"
diff "$T/help.long" "$T/man.long" >"$T/diff" || fail "--help and dumpwatch(8) name different options (< --help, > man): $(cat "$T/diff")"
shorts() { grep -o -- '-[a-zA-Z], --[a-z][a-z0-9-]*' "$1" | sort -u; }
shorts "$T/help" >"$T/help.short"
shorts "$T/dumpwatch.8.txt" >"$T/man.short"
diff "$T/help.short" "$T/man.short" >"$T/diff" || fail "short options differ (< --help, > man): $(cat "$T/diff")"
# Every metric name of the catalog is in dumpwatch-rules(5).
for m in loh-size poh-size gen0-size gen1-size gen2-size heap-size gc-pause gc-count gc-rate alloc-rate \
	loh-alloc-rate appdomain-allocated time-in-gc rss private-memory swap threads fds exception-rate; do
	grep -q -- "$m" "$T/dumpwatch-rules.5.txt" || fail "dumpwatch-rules(5) does not name $m"
done
echo "PASS: man pages lint clean; dumpwatch(8) and --help name the same $(wc -l <"$T/help.long") options"
