#!/usr/bin/env bash
# The .gcdump writer against the real reader: the heap graph of a recorded
# .NET 10 heap walk (tests/data/heap-net10.nettrace) written by gcdump_write
# (test_gcdump --write) is read by dotnet-gcdump report, which must list every
# type with the count and bytes the graph held, and the totals.
# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/lib.sh"

WRITER="$(dirname "$DUMPWATCH")/test_gcdump"
[ -x "$WRITER" ] || fail "$WRITER not built"
"$WRITER" --write "$T" || fail "test_gcdump --write failed"
report_table "$T/sample.gcdump" "$T/report"
echo "--- dotnet-gcdump report"
cat "$T/report.raw"

sort "$T/sample.expected" >"$T/want"
sort "$T/report" >"$T/got"
diff -u "$T/want" "$T/got" || fail "dotnet-gcdump report differs from the graph written"
# The module column: a path's file name, or the made-up name of an unknown module.
grep_q -F 'System.Byte[] (Bytes > 100K)  [System.Private.CoreLib.dll]' "$T/report.raw" ||
	fail "no module name in the report"
grep_q -E '^ +40,000 +1,000  HeapNode  \[Module\(0x[0-9a-f]+\)\]$' "$T/report.raw" || fail "no made-up module name in the report"
n=$(grep -vc '^total' "$T/want")
[ "$n" -ge 50 ] || fail "only $n types expected: the sample is not what this test was written for"
echo "PASS: dotnet-gcdump report read the gcdump: $n types, $(grep "^total" "$T/want")"
