#!/usr/bin/env bash
# The manual pages: dumpwatch(8) and dumpwatch-rules(5) pass `mandoc -Tlint`
# (only references to pages not installed here are let through: each page's
# to the other, which mandoc resolves once both are installed), and
# dumpwatch(8) agrees with --help: both name the same options, with the same
# short forms; and command by command (the watch and the guard's shared list,
# the watch's, the guard's, and each other command's), the options lists of
# --help and of the page's OPTIONS subsection "Options of ..." hold the same
# options, each with the same short form, the same argument and the same
# defaults ("default VALUE" in its text).
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

"$DUMPWATCH" --help >"$T/main.help" 2>&1 || fail "dumpwatch --help failed"
# The commands, from --help's usage lines ("dumpwatch ps ...").
modes=$(sed -n 's/^\(usage:\|      \) dumpwatch \([a-z][a-z-]*\).*/\2/p' "$T/main.help")
[ "$(echo "$modes" | wc -w)" -ge 10 ] || fail "too few commands in --help: $modes"
cp "$T/main.help" "$T/help"
for mode in $modes; do
	"$DUMPWATCH" "$mode" --help >"$T/$mode.help" 2>&1 || fail "dumpwatch $mode --help failed"
	cat "$T/$mode.help" >>"$T/help"
done
longs() { grep -o -- '--[a-z][a-z0-9-]*' "$1" | sort -u; }
longs "$T/help" >"$T/help.long"
longs "$T/dumpwatch.8.txt" >"$T/man.long"
[ "$(wc -l <"$T/help.long")" -ge 40 ] || fail "too few options read from --help: $(wc -l <"$T/help.long")"
diff "$T/help.long" "$T/man.long" >"$T/diff" || fail "--help and dumpwatch(8) name different options (< --help, > man): $(cat "$T/diff")"
shorts() { grep -o -- '-[a-zA-Z], --[a-z][a-z0-9-]*' "$1" | sort -u; }
shorts "$T/help" >"$T/help.short"
shorts "$T/dumpwatch.8.txt" >"$T/man.short"
diff "$T/help.short" "$T/man.short" >"$T/diff" || fail "short options differ (< --help, > man): $(cat "$T/diff")"

# Command by command. Each list becomes lines "LIST<TAB>ENTRY" (LIST: "the
# watch and the guard", "the watch", "the guard", or a command's name), then
# rows "LIST --option ARG SHORT" and "LIST --option default VALUE".
# --help: "options of LIST (...):" in dumpwatch --help, "options:" in
# dumpwatch CMD --help; an entry is "  -x, --long ARG  text" or
# "      --long ARG  text", its text going on in lines indented further; a
# blank line ends a list.
{
	awk '/^options of / { k = $0; sub(/^options of /, "", k); sub(/ \(.*|:$/, "", k); next }
		/^$/ { k = "" } k != "" { print k "\t" $0 }' "$T/main.help"
	for mode in $modes; do
		awk -v k="$mode" '/^options:$/ { on = 1; next } /^$/ { on = 0 } on { print k "\t" $0 }' "$T/$mode.help"
	done
} >"$T/help.lists"
# dumpwatch(8): the subsections "Options of LIST" of OPTIONS, rendered without
# wrapping: an entry is a line "     -x, --long ARG", its text indented further.
mandoc -Tascii -O width=1000 "$SRC/man/dumpwatch.8" 2>/dev/null | col -bx |
	awk '/^OPTIONS$/ { on = 1; next } /^[A-Z]/ { on = 0 }
		on && /^   Options of / { k = $0; sub(/^   Options of /, "", k); next }
		on && k != "" { print k "\t" $0 }' >"$T/man.lists"
# rows ENTRY-PATTERN < LISTS
rows() {
	awk -F '\t' -v entry="$1" '
		function flush(   n, tok, i, short, name, arg, t, v) {
			if (spec == "")
				return
			n = split(spec, tok, ", ")
			short = "-"
			for (i = 1; i <= n; i++) {
				if (tok[i] ~ /^-[A-Za-z]$/) { short = tok[i]; continue }
				name = tok[i]; arg = ""
				if (index(name, " ")) { arg = substr(name, index(name, " ") + 1); name = substr(name, 1, index(name, " ") - 1) }
				gsub(/ *\| */, "|", arg)
				print key " " name " " (arg == "" ? "-" : arg) " " short
				short = "-"
				t = text
				gsub(/ +/, " ", t)
				while (match(t, /default [^ ;,)]+/)) {
					v = substr(t, RSTART, RLENGTH); gsub(/\$/, "", v)
					print key " " name " " v
					t = substr(t, RSTART + RLENGTH)
				}
			}
			spec = ""
		}
		$2 ~ entry {
			flush(); key = $1; s = $2; sub(/^ +/, "", s)
			i = index(s, "  ")
			if (i) { spec = substr(s, 1, i - 1); text = substr(s, i) } else { spec = s; text = "" }
			next
		}
		$2 ~ /^       / && spec != "" { text = text " " $2; next }
		{ flush() }
		END { flush() }' | sort -u
}
rows '^(  -[A-Za-z]|      --)' <"$T/help.lists" >"$T/help.rows"
rows '^     -' <"$T/man.lists" >"$T/man.rows"
n=$(grep -cE -- ' --[a-z0-9-]+ [^ ]+ -[A-Za-z]?$' "$T/help.rows" || true)
[ "$n" -ge 60 ] || fail "too few options read from the lists of --help: $n"
diff "$T/help.rows" "$T/man.rows" >"$T/diff" ||
	fail "the options lists of --help and dumpwatch(8) differ (LIST --option ARG SHORT, LIST --option default VALUE; < --help, > man): $(cat "$T/diff")"

# Every metric name of the catalog is in dumpwatch-rules(5).
for m in loh-size poh-size gen0-size gen1-size gen2-size heap-size gc-pause gc-count gc-rate alloc-rate \
	loh-alloc-rate appdomain-allocated time-in-gc rss private-memory swap threads fds exception-rate; do
	grep -q -- "$m" "$T/dumpwatch-rules.5.txt" || fail "dumpwatch-rules(5) does not name $m"
done
echo "PASS: man pages lint clean; dumpwatch(8) and --help name the same $(wc -l <"$T/help.long") options, and list the same $n, command by command, with the same arguments and defaults"
