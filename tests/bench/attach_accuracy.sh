#!/usr/bin/env bash
# How exact the sizes are right after the attach, before any GC, and how soon
# they are known. For each scenario a MemSpike process grows, goes idle, and
# then:
#  - `dumpwatch --pid P --when 'loh-size > 100GB'` (never fires) journals
#    metrics-known: when the sizes became known after the attach;
#  - `dumpwatch counters` prints the sizes from the first System.Runtime
#    sample (the estimate), then the process runs a gen0 GC, which leaves LOH
#    and POH as they are and reports them exactly (the truth).
# Figures only, never pass/fail.
#   usage: tests/bench/attach_accuracy.sh [BUILD_DIR] [APPS_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
apps=${2:-$build/apps}
app="$apps/MemSpike/MemSpike"
T=$(mktemp -d /tmp/dw-acc.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT

scenario() {
	local name=$1 commands=$2 p
	rm -f "$T/cmd"
	mkfifo "$T/cmd"
	exec 3<>"$T/cmd"
	"$app" <"$T/cmd" >"$T/app.out" 2>&1 &
	p=$!
	pids+=("$p")
	until grep -q ready "$T/app.out"; do sleep 0.1; done
	local runtime
	runtime=$(sed -n 's/.*runtime=\([^ ]*\).*/\1/p' "$T/app.out")
	IFS=';' read -ra cmds <<<"$commands"
	for c in "${cmds[@]}"; do
		echo "$c" >&3
		until grep -qF "done $c" "$T/app.out"; do sleep 0.1; done
	done
	sleep 1
	timeout 4 "$build/dumpwatch" --pid "$p" --when 'loh-size > 100GB' --dump-dir "$T" --journal "$T/j.jsonl" \
		>/dev/null 2>&1 || true
	timeout 15 "$build/dumpwatch" counters --pid "$p" --format json --interval 1s --duration 5s >"$T/view.out" 2>&1 &
	local view=$!
	sleep 2.6
	echo "gc 0" >&3
	wait "$view" || true
	python3 - "$name" "$runtime" "$T/j.jsonl" "$T/view.out" <<'EOF'
import json, sys
name, runtime, journal, view = sys.argv[1:5]
after = next((r["after_attach_ms"] for r in map(json.loads, open(journal)) if r["event"] == "metrics-known"), None)
lines = [json.loads(l)["metrics"] for l in open(view) if l.startswith("{")]
seed = next((m for m in lines if m.get("loh-size") is not None), None)
truth = lines[-1]
def mb(v):
    return "%.2f" % (v / 1e6) if v is not None else "-"
def err(a, b):
    return "%+.2f" % ((a - b) / 1e6) if a is not None and b is not None else "-"
print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
    name, runtime, "%.0f" % after if after is not None else "-",
    mb(seed and seed["loh-size"]), mb(truth["loh-size"]), err(seed and seed["loh-size"], truth["loh-size"]),
    mb(seed and seed["poh-size"]), mb(truth["poh-size"]), err(seed and seed["poh-size"], truth["poh-size"])))
EOF
	kill -9 "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
	exec 3>&-
	rm -f "$T/j.jsonl"
}

echo "| scenario | runtime | known after attach (ms) | loh-size at attach (MB) | LOH after a gen0 GC (MB) | error (MB) | poh-size at attach (MB) | POH after (MB) | error (MB) |"
echo "|---|---|---|---|---|---|---|---|---|"
scenario "loh 350, idle" "loh 350"
scenario "loh 60 (no GC yet)" "loh 60"
scenario "loh 350 with 50 MB/s of garbage" "churn 50;loh 350"
scenario "loh 200, then soh 100 held" "loh 200;soh 100"
scenario "loh 100, then poh 50" "loh 100;poh 50"
