#!/usr/bin/env bash
# An unprivileged user tries to forge log lines, drive the operator's terminal
# and break the journal through what dumpwatch reads from its processes:
# - a real MemSpike started through a symlink whose name holds an ANSI CSI and
#   an OSC sequence (comm), with an argv[0] that holds a newline, a forged
#   "<0>dumpwatch: rule X fired" line and terminal escapes, an argument with
#   invalid UTF-8 (\xc3\x28\xff), and a TMPDIR whose name holds the forged
#   line (so its socket path does);
# - two fake runtimes (dw_fakert) run from a file whose name holds the forged
#   line, reporting it in ProcessInfo (entry assembly, runtime version,
#   command line); one reports no entry assembly, so the file name names it.
# The guard (--log journald) with a rule on that user's processes attaches to
# all three and dumps the real one; ps, ps --json, counters and gc (JSON and
# table, by pid and by name), record and watch mode run beside it; then watch
# mode dumps the real one through the exec path (createdump, run by dumpwatch,
# prints the target's comm). Every
# output line must start with dumpwatch's own prefix, hold no control
# character and be valid UTF-8; no line may start with the forged text;
# every journal and JSON line must be strict UTF-8 JSON; and the hostile
# strings must appear, escaped, where they belong.
source "$(dirname "$0")/lib.sh"
: "${DW_FAKERT:?set by ctest: path of dw_fakert}"
make_user ATTACKER
cd "$T"

FORGED='<0>dumpwatch: rule X fired'
CSI=$'\e[31m'
OSC=$'\e]0;pwned\a'
TAG="esc$$"
# .NET crashes when the path it runs from holds a newline, so the newline
# goes into argv[0], and the symlink it runs through holds the escapes.
ARGV0="MemSpike"$'\n'"$FORGED"$'\e[2J'"$OSC"
LINK="MemSpike${CSI}RED${OSC}"
BADARG=$'arg\xc3\x28\xff'
SOCKDIR="$T/tmp"$'\n'"$FORGED$CSI"
ENTRY="EscFake$$"$'\n'"$FORGED$CSI$OSC"
RTVER=$'10.0.0\n'"$FORGED"$'\e[2J'
FCMD="fake --tag $TAG"$'\n'"$FORGED$CSI"$'\xff'
FAKEBIN="$T/fake/dw_fakert"$'\n'"$FORGED$CSI"
# As dumpwatch escapes them for a line of text.
ENTRY_ESC='EscFake'"$$"'\n<0>dumpwatch: rule X fired\x1b[31m\x1b]0;pwned\x07'
RTVER_ESC='10.0.0\n<0>dumpwatch: rule X fired\x1b[2J'
FAKEB_ESC='dw_fakert\n<0>dumpwatch: rule X fired\x1b[31m'
FCMD_ESC='fake --tag '"$TAG"'\n<0>dumpwatch: rule X fired\x1b[31m'

# The real MemSpike, as the attacker, from a copy the attacker can read.
cp -r "$(dirname "$APP")" "$T/app"
chmod -R a+rX "$T/app"
ln -s MemSpike "$T/app/$LINK"
mkdir -m 0700 "$SOCKDIR"
chown "$ATTACKER:$ATTACKER" "$SOCKDIR"
mkfifo -m 0666 "$T/real.cmd"
exec {REAL_FD}<>"$T/real.cmd"
: >"$T/real.out"
chmod 0666 "$T/real.out"
setpriv --reuid="$ATTACKER_UID" --regid="$ATTACKER_GID" --clear-groups env TMPDIR="$SOCKDIR" \
	bash -c 'exec -a "$0" "$1" --tag "$2" "$3"' "$ARGV0" "$T/app/$LINK" "$TAG" "$BADARG" \
	<"$T/real.cmd" >"$T/real.out" 2>&1 &
REAL=$!
PIDS+=("$REAL")
wait_for "grep -q ready '$T/real.out'" 15 || fail "MemSpike did not start as $ATTACKER"
wait_for 'compgen -G "$SOCKDIR/dotnet-diagnostic-$REAL-*-socket" >/dev/null' 10 || fail "no socket in the hostile TMPDIR"
grep -q $'\e' "/proc/$REAL/comm" || fail "comm holds no escape: $(cat -v "/proc/$REAL/comm")"
COMM=$(cat "/proc/$REAL/comm")

# The fake runtimes, as the attacker.
mkdir "$T/fake"
cp "$DW_FAKERT" "$FAKEBIN"
cp "$DW_SOURCE_DIR/tests/data/gc-alloc-counters.nettrace" "$T/trace.nettrace"
chmod -R a+rX "$T/fake" "$T/trace.nettrace"
FAKES=()
start_fake() { # NAME ARGS...
	local name=$1
	shift
	: >"$T/fake.$name.out"
	chmod 0666 "$T/fake.$name.out"
	setpriv --reuid="$ATTACKER_UID" --regid="$ATTACKER_GID" --clear-groups env -u TMPDIR \
		"$FAKEBIN" --mode replay --trace "$T/trace.nettrace" "$@" >"$T/fake.$name.out" 2>&1 &
	PIDS+=("$!")
	FAKES+=("$!")
	wait_for "grep -q ready '$T/fake.$name.out'" 10 || fail "fake $name did not start: $(cat "$T/fake.$name.out")"
}
trap 'for p in "${FAKES[@]}"; do rm -f /tmp/dotnet-diagnostic-$p-*-socket; done; cleanup' EXIT
start_fake a --entry "$ENTRY" --runtime-version "$RTVER" --cmdline "$FCMD"
FAKE_A=${FAKES[0]}
start_fake b --entry "" --runtime-version "$RTVER"
FAKE_B=${FAKES[1]}

# The guard, under journald's conventions; its -v lines go to stdout.
cat >"$RULES/attacker.json" <<JSON
{ "rules": [ { "name": "attacker-loh", "process": { "user": "$ATTACKER" },
               "when": "loh-size > 200MB", "dump": { "type": "triage" } } ] }
JSON
"$DUMPWATCH" -v --log journald --rules-dir "$RULES" --dump-dir "$DUMPS" --journal "$JOURNAL" \
	>"$T/guard.stdout" 2>"$T/dw.out" &
DW_PID=$!
PIDS+=("$DW_PID")
wait_for "grep -q guarding '$T/dw.out'" 15 || fail "dumpwatch --rules-dir did not start"
# grep -a: a journal that is not text must reach the checks below, not stop here.
journal_has() { grep -a "\"event\":\"$1\"" "$JOURNAL" 2>/dev/null | grep -aqF -- "$2"; }
for p in "$REAL" "$FAKE_A" "$FAKE_B"; do
	wait_for "journal_has attach '\"pid\":$p,'" 15 || fail "pid $p not attached"
done

# The operator's commands, beside the guard.
run() { # NAME CMD...: stdout in $T/NAME.out, stderr in $T/NAME.err
	local name=$1
	shift
	set +e
	timeout -s INT 30 "$@" >"$T/$name.out" 2>"$T/$name.err"
	echo $? >"$T/$name.rc"
	set -e
}
run ps "$DUMPWATCH" ps
run psjson "$DUMPWATCH" ps --json
run counters_json "$DUMPWATCH" counters --pid "$FAKE_A" --format json --duration 3s
run counters_table "$DUMPWATCH" counters --pid "$FAKE_A" --format table --duration 3s
run counters_name "$DUMPWATCH" counters --name "EscFake$$*" --format json --duration 3s
run gc_json "$DUMPWATCH" gc --pid "$FAKE_A" --format json --duration 3s
run gc_table "$DUMPWATCH" gc --name "EscFake$$*" --format table --duration 3s
run record "$DUMPWATCH" record --pid "$REAL" --out "$T/real.nettrace" --duration 1s
set +e
timeout -s INT 3 "$DUMPWATCH" -v --pid "$FAKE_B" --when 'loh-size > 10GB' --dump-dir "$T" >"$T/watch.out" 2>"$T/watch.err"
set -e

# The real process is dumped.
echo "loh 300" >&"$REAL_FD"
wait_for "journal_has dump '\"pid\":$REAL,'" 60 || fail "the attacker's real process was not dumped"
check_dump --type triage --name "$COMM" "$(find "$DUMPS" -maxdepth 1 -name "*-$REAL-*.core")" "$REAL"
stop_guard
[ "$DW_RC" -eq 0 ] || fail "guard exit status $DW_RC"

# The exec path: the createdump dumpwatch runs itself names the target by its
# comm, which holds the escapes.
mkdir -m 0700 "$T/execdumps"
"$DUMPWATCH" --pid "$REAL" --when 'loh-size > 200MB' --dump-via exec --dump-type triage --dump-dir "$T/execdumps" \
	>"$T/watchexec.out" 2>"$T/watchexec.err" &
DW_PID=$!
PIDS+=("$DW_PID")
wait_for "grep -q 'watching pid' '$T/watchexec.err'" 15 || fail "watch mode did not attach: $(cat "$T/watchexec.err")"
echo "gc" >&"$REAL_FD" # the LOH size is known at the next GC
wait_dw 60
[ "$DW_RC" -eq 0 ] || fail "exec path: exit $DW_RC: $(cat "$T/watchexec.err")"
[ -n "$(find "$T/execdumps" -name '*.core')" ] || fail "exec path: no dump"
check_dump --type triage --name "$COMM" "$(find "$T/execdumps" -name '*.core')" "$REAL"
for f in ps psjson counters_json counters_table counters_name gc_json gc_table record; do
	[ "$(cat "$T/$f.rc")" -eq 0 ] || fail "$f: exit $(cat "$T/$f.rc"): $(cat "$T/$f.err")"
done

# Every line of every output, and what it must hold.
export ENTRY RTVER FCMD SOCKDIR ARGV0 FAKE_A FAKE_B REAL T
python3 - <<'PY' || fail "outputs are not safe (above)"
import json, os, re, sys

env = os.environb
T = env[b"T"]
bad = []

def lines_of(name):
    data = open(T + b"/" + name, "rb").read()
    try:
        text = data.decode("utf-8", "strict")
    except UnicodeDecodeError as e:
        bad.append(f"{name.decode()}: not UTF-8: {e}")
        return []
    for ch in set(text):
        o = ord(ch)
        if (o < 0x20 and ch != "\n") or 0x7F <= o <= 0x9F or ch in "\u2028\u2029\u061c\u200e\u200f" or \
           0x202A <= o <= 0x202E or 0x2066 <= o <= 0x2069:
            bad.append(f"{name.decode()}: holds U+{o:04X}")
    if text and not text.endswith("\n"):
        bad.append(f"{name.decode()}: last line unfinished")
    return text.split("\n")[:-1] if text else []

def strict_json(s):
    def no_constant(c):
        raise ValueError(f"not JSON: {c}")
    return json.loads(s, parse_constant=no_constant)

PREFIX = {
    "log": r"(<[3-7]>|dumpwatch: )",   # dumpwatch's priorities are 3, 4, 6, 7
    "journald": r"<[3-7]>",
    "verbose": r" *-?[0-9]+\.[0-9]{3}s pid [0-9]+: ",
    "watchverbose": r" *-?[0-9]+\.[0-9]{3}s ",
    "ps": r"(PID +NAME|[0-9]+ )",
    "table": r"(pid [0-9]+  |  |$)",
    "gctable": r"[0-9]+ #[0-9]",
    "none": r"$^",
}

def check(name, kind):
    out = []
    for i, l in enumerate(lines_of(name)):
        if l.startswith("<0>") or l.startswith("dumpwatch: rule X fired"):
            bad.append(f"{name.decode()}:{i + 1}: a forged line: {l!r}")
        if kind == "json":
            try:
                out.append(strict_json(l))
            except ValueError as e:
                bad.append(f"{name.decode()}:{i + 1}: {e}: {l!r}")
        elif not re.match(PREFIX[kind], l):
            bad.append(f"{name.decode()}:{i + 1}: not dumpwatch's prefix: {l!r}")
    return out

check(b"dw.out", "journald")
check(b"guard.stdout", "verbose")
journal = check(b"journal.jsonl", "json")
check(b"ps.out", "ps")
ps = check(b"psjson.out", "json")
cj = check(b"counters_json.out", "json")
check(b"counters_table.out", "table")
cn = check(b"counters_name.out", "json")
gj = check(b"gc_json.out", "json")
check(b"gc_table.out", "gctable")
check(b"record.out", "none")
check(b"watch.out", "watchverbose")
check(b"watchexec.out", "none")
for e in [b"ps.err", b"psjson.err", b"counters_json.err", b"counters_table.err", b"counters_name.err",
          b"gc_json.err", b"gc_table.err", b"record.err", b"watch.err", b"watchexec.err"]:
    check(e, "log")

def s(k):
    return env[k].decode("utf-8", "surrogateescape")
ENTRY, RTVER, FAKE_A, FAKE_B, REAL = s(b"ENTRY"), s(b"RTVER"), int(s(b"FAKE_A")), int(s(b"FAKE_B")), int(s(b"REAL"))
FCMD = env[b"FCMD"].decode("utf-8", "replace")
FAKEB_NAME = "dw_fakert\n<0>dumpwatch: rule X fired\x1b[31m"

def one(records, what, **match):
    got = [r for r in records if all(r.get(k) == v for k, v in match.items())]
    if not got:
        bad.append(f"no {what}")
        return {}
    return got[0]

# The journal keeps the strings, as JSON escapes; invalid bytes are U+FFFD.
a = one(journal, "attach record of the real process", event="attach", pid=REAL)
cl = a.get("command_line", "")
if "arg\ufffd(\ufffd" not in cl or "\x1b[2J" not in cl or "<0>dumpwatch: rule X fired" not in cl:
    bad.append(f"real process's command line journaled as {cl!r}")
a = one(journal, "attach record of fake a", event="attach", pid=FAKE_A)
if a.get("process") != ENTRY or a.get("runtime_version") != RTVER:
    bad.append(f"fake a journaled as {a.get('process')!r}, {a.get('runtime_version')!r}")
one(journal, "attach record of fake b named by its file", event="attach", pid=FAKE_B, process=FAKEB_NAME)
one(journal, "dump of the real process", event="dump", pid=REAL)

# ps --json: exact strings.
one(ps, "ps --json line of fake a", pid=FAKE_A, entry_assembly=ENTRY, runtime_version=RTVER, command_line=FCMD)
one(ps, "ps --json line of fake b", pid=FAKE_B, name=FAKEB_NAME, entry_assembly=None)
r = one(ps, "ps --json line of the real process", pid=REAL)
if not r.get("socket", "").startswith(s(b"SOCKDIR") + f"/dotnet-diagnostic-{REAL}-"):
    bad.append(f"real process's socket listed as {r.get('socket')!r}")

one(cj, "counters JSON line", pid=FAKE_A, process=ENTRY)
one(cn, "counters --name JSON line", pid=FAKE_A, process=ENTRY)
if any(r.get("pid") != FAKE_A for r in cn):
    bad.append("counters --name followed another process")
one(gj, "gc JSON line", pid=FAKE_A, process=ENTRY)

for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
PY

# The escaped forms, where people read them.
grep -qF "<6>attached to pid $FAKE_A ($ENTRY_ESC, .NET $RTVER_ESC) for rules attacker-loh" "$T/dw.out" ||
	fail "guard: no escaped attach line for fake a"
grep -qF "<6>attached to pid $FAKE_B ($FAKEB_ESC, .NET $RTVER_ESC)" "$T/dw.out" ||
	fail "guard: no escaped attach line for fake b"
grep -qF "<6>rule attacker-loh fired for pid $REAL (MemSpike)" "$T/dw.out" || fail "guard: no fire line"
grep -E "^$FAKE_A +" "$T/ps.out" | grep_q -F "$FCMD_ESC" || fail "ps: fake a's command not escaped: $(cat "$T/ps.out")"
grep -E "^$FAKE_B +" "$T/ps.out" | grep_q -F 'dw_fakert\n<0>dum...' || fail "ps: fake b's name not escaped"
grep -qF "pid $FAKE_A  $ENTRY_ESC  .NET $RTVER_ESC  (following for" "$T/counters_table.out" ||
	fail "counters table: no escaped heading"
grep -qE "^$FAKE_A #" "$T/gc_table.out" || fail "gc table: no GC of fake a"
grep -qF "watching pid $FAKE_B ($FAKEB_ESC, .NET $RTVER_ESC)" "$T/watch.err" || fail "watch mode: no escaped line"
echo "PASS: hostile names, versions, command lines and paths escaped in every line; the journal strict UTF-8 JSON;" \
	"the attacker's real process dumped"
