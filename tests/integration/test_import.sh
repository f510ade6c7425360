#!/usr/bin/env bash
# dumpwatch import dotnet-monitor: the real binary on tests/data/dotnet-monitor/
# (no .NET needed): the written files pass `dumpwatch check` and say what the
# settings said (jq), the notes name what was not carried over, an existing
# file is kept without --force and replaced with it, a malformed file is one
# line with its position and exit 1.
set -euo pipefail
: "${DUMPWATCH:?set by ctest}"
SRC=${DW_SOURCE_DIR:?set by ctest}
DATA=$SRC/tests/data/dotnet-monitor
T=$(mktemp -d /tmp/dw-import.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v jq >/dev/null || fail "jq is missing"
chmod 0755 "$T"
mkdir -m 0755 "$T/out"

"$DUMPWATCH" import dotnet-monitor "$DATA/all.json" --out "$T/out" >"$T/notes" 2>"$T/err" || fail "import all.json: $(cat "$T/err")"
[ "$(find "$T/out" -name '*.json' | wc -l)" -eq 8 ] || fail "all.json: not 8 files: $(ls "$T/out")"
[ "$(stat -c %a "$T/out/HighCpu.json")" = 644 ] || fail "mode is not 0644"
"$DUMPWATCH" check --dump-dir /tmp "$T/out" >"$T/check" || fail "check: $(cat "$T/check")"
j() { jq -r "$2" "$T/out/$1.json"; }
[ "$(j HighCpu '.when[0]')" = "System.Runtime/cpu-usage > 70% for 10s" ] || fail "HighCpu when: $(j HighCpu '.when')"
[ "$(j HighCpu '.process.name + "|" + .process.cmdline')" = "dotnet|*myapp.dll*" ] || fail "HighCpu process"
[ "$(j HighCpu '.dump.type + "|" + (.limits["max-dumps"]|tostring) + "|" + .limits.window + "|" + .limits.cooldown')" = "full|2|1h|10s" ] || fail "HighCpu dump/limits"
[ "$(j HighCpu '.description')" = "imported from dotnet-monitor rule \"HighCpu\" of $DATA/all.json" ] || fail "description: $(j HighCpu .description)"
[ "$(j HeapBetween '.when | join("|")')" = "System.Runtime/gc-heap-size > 500MB for 90s|System.Runtime/gc-heap-size < 900MB for 90s" ] || fail "HeapBetween"
[ "$(j HeapBetween '.dump.type + "|" + (.limits["max-dumps"]|tostring)')" = "normal|5" ] || fail "HeapBetween dump"
[ "$(j CustomCounter '(.process.pid|tostring) + "|" + .when[0] + "|" + .dump.type')" = "4242|MyCompany-Orders/queue-depth < 2.5 for 1m|triage" ] || fail "CustomCounter"
[ "$(j SlowRequests '.process.name + "|" + .when[0]')" = '*web\[1\]*|meter Microsoft.AspNetCore.Hosting/http.server.request.duration p95 > 2 for 30s' ] || fail "SlowRequests: $(j SlowRequests '.process.name + "|" + .when[0]')"
[ "$(j Gauge '.process.name + "|" + .process.cmdline + "|" + .when[0] + "|" + .dump.type')" = '*Worker*|--urls http://\*:80|meter MyMeter/my.gauge > 20 for 1m|withheap' ] || fail "Gauge"
[ "$(j CpuShortcut '.when[0]')" = "System.Runtime/cpu-usage > 50% for 1m" ] || fail "CPUUsage"
[ "$(j HeapShortcut '.when[0] + "|" + (.limits["max-dumps"]|tostring) + "|" + .limits.cooldown')" = "System.Runtime/gc-heap-size > 1024MB for 5m|1|5m" ] || fail "GCHeapSize"
[ "$(j threadpool_starved '.name + "|" + .when[0]')" = "threadpool_starved|System.Runtime/threadpool-queue-length > 200 for 1d" ] || fail "ThreadpoolQueueLength"
grep -qx "$DATA/all.json: rule HighCpu: action 0: egress provider \"artifacts\" not carried over: .*" "$T/notes" || fail "egress note: $(cat "$T/notes")"
grep -q 'rule threadpool starved: written as rule "threadpool_starved"' "$T/notes" || fail "rename note"
tail -n 1 "$T/notes" | grep -qx "$DATA/all.json: 8 of 8 collection rules written to $T/out, [0-9]* notes" || fail "summary: $(tail -n 1 "$T/notes")"

# Unsupported parts: one line each, and only the one rule that can be is written.
mkdir -m 0755 "$T/u"
"$DUMPWATCH" import dotnet-monitor "$DATA/unsupported.json" --out "$T/u" >"$T/unotes" 2>&1 || fail "unsupported.json: $(cat "$T/unotes")"
[ "$(ls "$T/u")" = "Mixed.json" ] || fail "unsupported.json wrote $(ls "$T/u")"
"$DUMPWATCH" check --dump-dir /tmp "$T/u" >/dev/null || fail "check Mixed.json"
[ "$(jq -r .dump.type "$T/u/Mixed.json")" = withheap ] || fail "Mixed: not the largest dump type"
for want in 'rule RequestCount: not imported: trigger AspNetRequestCount' \
	'rule RequestDuration: not imported: trigger AspNetRequestDuration' \
	'rule ResponseStatus: not imported: trigger AspNetResponseStatus' \
	'rule TraceOnly: not imported: its Actions hold no CollectDump' \
	'rule Percentile90: not imported: EventMeter: HistogramPercentile 90' \
	'rule TwoNames: not imported: filters give process.name both' \
	'rule Mixed: action 0 (CollectGCDump) not carried over' \
	'rule Mixed: action 3 (Execute) not carried over' \
	'rule Mixed: 2 CollectDump actions' \
	'rule Mixed: Limits.RuleDuration not carried over' \
	'the Egress providers are not imported' \
	'1 of 7 collection rules written'; do
	grep -qF "$DATA/unsupported.json: $want" "$T/unotes" || fail "no note \"$want\": $(cat "$T/unotes")"
done
grep -q 'Microsoft.AspNetCore.Hosting/http.server.request.duration' "$T/unotes" || fail "no meter suggestion"

# The ConfigMap form.
mkdir -m 0755 "$T/cm"
"$DUMPWATCH" import dotnet-monitor "$DATA/configmap.json" --out "$T/cm" >/dev/null || fail "configmap.json"
[ "$(jq -r '.when[0] + "|" + .dump.type + "|" + (.limits["max-dumps"]|tostring)' "$T/cm/HighCpuRule.json")" = "System.Runtime/cpu-usage > 70% for 10s|triage|3" ] || fail "configmap rule"

# An existing file is kept, and nothing written, unless --force.
echo '{"keep": 1}' >"$T/out/HighCpu.json"
rm "$T/out/Gauge.json"
rc=0
"$DUMPWATCH" import dotnet-monitor "$DATA/all.json" --out "$T/out" >/dev/null 2>"$T/err" || rc=$?
[ "$rc" -eq 1 ] || fail "overwrite: exit $rc, not 1"
grep -q "HighCpu.json exists: nothing written (--force replaces it)" "$T/err" || fail "overwrite message: $(cat "$T/err")"
[ "$(cat "$T/out/HighCpu.json")" = '{"keep": 1}' ] || fail "an existing file was replaced"
[ ! -e "$T/out/Gauge.json" ] || fail "a file was written although another exists"
"$DUMPWATCH" import dotnet-monitor "$DATA/all.json" --out "$T/out" --force >/dev/null || fail "--force"
[ "$(jq -r .name "$T/out/HighCpu.json")" = HighCpu ] || fail "--force did not replace"
[ -e "$T/out/Gauge.json" ] || fail "--force did not write Gauge.json"
[ -z "$(find "$T/out" -name '.*')" ] || fail "temporary files left: $(ls -a "$T/out")"

# A malformed file: one line with its position, exit 1, nothing written.
mkdir -m 0755 "$T/m"
rc=0
"$DUMPWATCH" import dotnet-monitor "$DATA/malformed.json" --out "$T/m" >"$T/mout" 2>"$T/merr" || rc=$?
[ "$rc" -eq 1 ] || fail "malformed: exit $rc"
[ "$(wc -l <"$T/merr")" -eq 1 ] || fail "malformed: not one line: $(cat "$T/merr")"
grep -qx "$DATA/malformed.json: line 4, column 1: not JSON: .*" "$T/merr" || fail "malformed message: $(cat "$T/merr")"
[ -z "$(ls "$T/m")" ] || fail "malformed: something written"

# Usage errors and a missing file.
rc=0; "$DUMPWATCH" import dotnet-monitor "$DATA/all.json" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "no --out: exit $rc"
rc=0; "$DUMPWATCH" import other "$DATA/all.json" --out "$T/m" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "unknown source: exit $rc"
rc=0; "$DUMPWATCH" import dotnet-monitor "$T/nope.json" --out "$T/m" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "missing file: exit $rc"
"$DUMPWATCH" import --help | grep -q -- '--force' || fail "import --help"
echo "PASS: import wrote rules that check accepts, said what it left out, kept existing files, refused a malformed one"
