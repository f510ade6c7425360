#!/usr/bin/env bash
# A process that grew before the attach: its sizes are known from the first
# System.Runtime sample, without waiting for (or inducing) a GC.
#  - holding 350 MB of LOH: `--when 'loh-size > 300MiB'` and `PID 300` each
#    dump it within 2 s of the attach, and the dump holds that LOH;
#  - holding 250 MB: neither dumps it, once its sizes are known;
#  - until a size is known no condition on it holds: `loh-size < 100MB` does
#    not fire at the attach on a zero that means "not known yet";
#  - the attach record lists the rules' metrics as unknown, a metrics-known
#    record follows with each value and how it is known;
#  - `counters --format json` prints null for a size not known yet.
source "$(dirname "$0")/lib.sh"

# seconds_between FILE EVENT1 EVENT2: from the first EVENT1 to the first EVENT2 record.
seconds_between() {
	python3 - "$@" <<'EOF'
import datetime, json, sys
path, a, b = sys.argv[1:4]
t = {}
for line in open(path):
    r = json.loads(line)
    if r["event"] in (a, b) and r["event"] not in t:
        t[r["event"]] = datetime.datetime.fromisoformat(r["time"].replace("Z", "+00:00"))
print("%.3f" % (t[b] - t[a]).total_seconds() if a in t and b in t else "none")
EOF
}

# known_value FILE METRIC: the value of METRIC in the metrics-known record.
known_value() {
	python3 - "$@" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["event"] == "metrics-known" and sys.argv[2] in r["metrics"]:
        m = r["metrics"][sys.argv[2]]
        print("%d %s" % (m["value"], m["basis"]))
        break
else:
    print("none")
EOF
}

# watch_until_known JOURNAL ARGS...: runs dumpwatch ARGS with that journal
# until it journals metrics-known, and half a second more (a fire comes with
# the evaluation that made the metric known), then stops it; sets DW_RC
# (130: it was still watching).
watch_until_known() {
	local j=$1
	shift
	"$DUMPWATCH" -v --journal "$j" "$@" >"$T/dw.out" 2>&1 &
	DW_PID=$!
	PIDS+=("$DW_PID")
	wait_for "grep -q '\"event\":\"metrics-known\"' '$j' 2>/dev/null || ! kill -0 $DW_PID 2>/dev/null" 15 ||
		fail "no metrics-known record within 15 s: $*"
	sleep 0.5
	kill -INT "$DW_PID" 2>/dev/null || true
	wait_dw 15
}

start_tagged big
tagged_cmd big "loh 350"
start_tagged small
tagged_cmd small "loh 250"
wait_tagged_done big "loh 350" 60
wait_tagged_done small "loh 250" 60
BIG=${APP_PIDS[big]}
SMALL=${APP_PIDS[small]}
sleep 1 # both idle: nothing but what they hold

# 1. The rule on a grown process: one dump within 2 s of the attach.
J1="$T/when.jsonl"
timeout 30 "$DUMPWATCH" -v --pid "$BIG" --when 'loh-size > 300MiB' --dump-dir "$DUMPS" --journal "$J1" \
	>"$T/dw.out" 2>&1 || fail "dumpwatch --when exited $?"
grep '"event":"attach"' "$J1" | grep_q '"unknown":\["loh-size"\]' || fail "the attach record does not list loh-size as unknown"
read -r v basis <<<"$(known_value "$J1" loh-size)"
[ "$basis" = counters ] || fail "loh-size not known from the counters before a GC (basis $basis)"
((v >= 350000000 && v < 380000000)) || fail "loh-size right after the attach is $v, the process holds 350 MB"
d=$(seconds_between "$J1" attach fire)
[ "$d" != none ] || fail "the rule did not fire"
python3 -c "import sys; sys.exit(0 if float('$d') <= 2.0 else 1)" || fail "fired $d s after the attach, not within 2 s"
[ "$(grep -c '"event":"dump"' "$J1")" -eq 1 ] || fail "expected one dump record"
core=$(grep '"event":"dump"' "$J1" | sed 's/.*"path":"\([^"]*\)".*/\1/')
"$DW_CORECHECK" "$core" "$BIG" || fail "$core is not a core of pid $BIG"
check_dump "$core" "$BIG" $((300 * 1048576)) # what fired it: over 300 MiB of LOH, in byte[]
echo "rule: loh-size known as $v ($basis), fired ${d} s after the attach"
rm -f "$core"

# 2. The classic form, PID MB (heap-size > MB).
J2="$T/pidmb.jsonl"
timeout 30 "$DUMPWATCH" -v --dump-dir "$DUMPS" --journal "$J2" --dump-type triage "$BIG" 300 >"$T/dw.out" 2>&1 ||
	fail "dumpwatch PID 300 exited $?"
read -r v basis <<<"$(known_value "$J2" heap-size)"
((v >= 350000000 && v < 380000000)) || fail "heap-size right after the attach is $v, the process holds 350 MB"
d=$(seconds_between "$J2" attach fire)
[ "$d" != none ] || fail "PID 300 did not fire"
python3 -c "import sys; sys.exit(0 if float('$d') <= 2.0 else 1)" || fail "PID 300 fired $d s after the attach"
[ "$(grep -c '"event":"dump"' "$J2")" -eq 1 ] || fail "expected one dump record for PID 300"
core=$(grep '"event":"dump"' "$J2" | sed 's/.*"path":"\([^"]*\)".*/\1/')
check_dump --type triage "$core" "$BIG"
echo "PID 300: heap-size known as $v ($basis), fired ${d} s after the attach"
find "$DUMPS" -name '*.core' -delete

# 3. 250 MB: known, and below both thresholds: no dump from either form.
J3="$T/small.jsonl"
watch_until_known "$J3" --pid "$SMALL" --when 'loh-size > 300MiB' --dump-dir "$DUMPS"
[ "$DW_RC" -eq 130 ] || fail "dumpwatch on the 250 MB process ended with $DW_RC instead of watching on"
read -r v basis <<<"$(known_value "$J3" loh-size)"
((v >= 250000000 && v < 300 * 1048576)) || fail "loh-size of the 250 MB process known as '$v'"
J4="$T/small-pidmb.jsonl"
watch_until_known "$J4" --dump-dir "$DUMPS" "$SMALL" 300
[ "$DW_RC" -eq 130 ] || fail "dumpwatch PID 300 on the 250 MB process ended with $DW_RC"
read -r v4 basis <<<"$(known_value "$J4" heap-size)"
((v4 >= 250000000 && v4 < 300000000)) || fail "heap-size of the 250 MB process known as '$v4'"
[ "$(cat "$J3" "$J4" | grep -c '"event":"fire"')" -eq 0 ] || fail "the 250 MB process fired"
[ "$(count_dumps)" -eq 0 ] || fail "the 250 MB process was dumped"
echo "250 MB: loh-size $v, heap-size $v4, no fire"

# 4. A "below" condition does not fire on a size not known yet.
J5="$T/below.jsonl"
watch_until_known "$J5" --pid "$BIG" --when 'loh-size < 100MB' --dump-dir "$DUMPS"
[ "$DW_RC" -eq 130 ] || fail "the below rule ended dumpwatch with $DW_RC"
[ "$(grep -c '"event":"fire"' "$J5")" -eq 0 ] || fail "loh-size < 100MB fired on a process holding 350 MB"
[ "$(known_value "$J5" loh-size)" != none ] || fail "loh-size never became known"

# 5. The counters view: every size is printed, null while not known, never a
# stand-in zero; the figure once known.
set +e
timeout 15 "$DUMPWATCH" counters --pid "$BIG" --format json --interval 1s --duration 3s >"$T/view.out" 2>"$T/view.err"
set -e
python3 - "$T/view.out" <<'EOF' || fail "counters view: $(cat "$T/view.out" "$T/view.err")"
import json, sys
lines = [json.loads(l)["metrics"] for l in open(sys.argv[1]) if l.strip()]
assert lines, "no output"
for m in lines:
    for k in ("loh-size", "heap-size", "alloc-rate"):
        assert k in m, "%s missing: %r" % (k, m)
    assert m["loh-size"] is None or m["loh-size"] >= 350e6, "loh-size %r" % m["loh-size"]
assert lines[-1]["loh-size"] is not None, "loh-size never known"
print("counters view: %d line(s), %d with loh-size null" % (len(lines), sum(m["loh-size"] is None for m in lines)))
EOF
echo "PASS: a grown process is known from the first sample and dumped within 2 s; 250 MB is not"
