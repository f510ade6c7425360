#!/usr/bin/env bash
# Attack: root's `dumpwatch report DIR` on a directory a local user owns. The
# user (the attacker) swaps their dumps directory for a symbolic link to a
# directory of root's while the report runs, so that a report that resolves
# DIR again to write the page writes index.html (0644, root's) into root's
# directory, and says it wrote the user's.
#
# The window is made deterministic, not raced: root's report runs with its
# stderr on a pipe the test filled first (one page, F_SETPIPE_SZ). The
# attacker's directory holds a FIFO named like a context; the report opens it
# non-blocking, finds it is not a regular file and warns, and that warning's
# write blocks on the full pipe. The test waits (bounded) until the report is
# blocked in write(2) on fd 2 (/proc/PID/syscall) - by then it has opened DIR
# and read the contexts, and it cannot go on before the pipe is drained.
# Only then does the attacker move the directory aside and put the link in
# its place; the test drains the pipe and the report writes the page.
#
# The page must go into the directory the report opened (now dumps.old), and
# the summary must name that directory; nothing may appear in root's
# directory. A second run with the link already in place before the report
# starts must refuse DIR (a symbolic link is not followed) and again write
# nothing into root's directory.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
make_user ATTACKER

H="$T/home"
ROOTDIR="$T/root-only" # another directory of root's
mkdir -m 0755 "$ROOTDIR" "$H"
echo "root's" >"$ROOTDIR/keep"
mkdir "$H/dumps"
cp "$DW_SOURCE_DIR/tests/data/context/GcLab-4807-20261118T110640Z.json" "$H/dumps/"
mkfifo -m 0644 "$H/dumps/held-0000.json"
chown -R "$ATTACKER:$ATTACKER" "$H"
ROOT_BEFORE=$(ls -A "$ROOTDIR")

# blocked_report DIR SWAP: runs `dumpwatch report DIR` as root with its stderr
# on a full pipe; once it is blocked writing a warning there, runs SWAP as the
# attacker, drains the pipe and waits for the report to end. The report's
# stdout goes to $T/report.out, its stderr to $T/report.err, its exit status to
# $T/report.rc.
blocked_report() {
	$PY - "$DUMPWATCH" "$1" "$ATTACKER_UID" "$ATTACKER_GID" "$2" "$T" <<'EOF'
import fcntl, os, platform, subprocess, sys, time
dw, d, uid, gid, swap, t = sys.argv[1:7]
WRITE = {"x86_64": 1, "aarch64": 64}.get(platform.machine())
if WRITE is None:
    print("SKIP: the write(2) syscall number of %s is not known here" % platform.machine())
    sys.exit(77)
r, w = os.pipe()
fcntl.fcntl(w, 1031, 4096)  # F_SETPIPE_SZ: one page
os.set_blocking(w, False)
try:
    while True:
        os.write(w, b"x" * 512)
except BlockingIOError:
    pass
try:
    while True:
        os.write(w, b"x")
except BlockingIOError:
    pass
os.set_blocking(w, True)
out = open(os.path.join(t, "report.out"), "wb")
p = subprocess.Popen([dw, "report", d], stdin=subprocess.DEVNULL, stdout=out, stderr=w)
os.close(w)

def blocked():
    try:
        f = open("/proc/%d/syscall" % p.pid).read().split()
    except OSError:
        return False
    return len(f) > 1 and f[0] == str(WRITE) and f[1] == "0x2"

# Bounded: the report reaches the warning at once, whatever the load.
deadline = time.monotonic() + 60
while not blocked():
    if p.poll() is not None:
        print("FAIL: the report ended (status %d) without warning on stderr" % p.returncode)
        sys.exit(1)
    if time.monotonic() > deadline:
        p.kill()
        print("FAIL: the report never blocked writing to stderr")
        sys.exit(1)
    time.sleep(0.01)
rc = subprocess.call(["setpriv", "--reuid=" + uid, "--regid=" + gid, "--clear-groups", "sh", "-c", swap])
if rc != 0:
    p.kill()
    print("FAIL: the attacker's swap failed (%d)" % rc)
    sys.exit(1)
err = b""
while True:
    b = os.read(r, 65536)
    if not b:
        break
    err += b
p.wait()
open(os.path.join(t, "report.err"), "wb").write(err.lstrip(b"x"))
open(os.path.join(t, "report.rc"), "w").write(str(p.returncode))
EOF
}

# 1. The swap while the report runs.
SWAP="mv '$H/dumps' '$H/dumps.old' && ln -s '$ROOTDIR' '$H/dumps'"
blocked_report "$H/dumps" "$SWAP" || fail "the blocked report did not run"
[ -L "$H/dumps" ] && [ -d "$H/dumps.old" ] || fail "the attacker's swap did not happen"
echo "report: status $(cat "$T/report.rc"); $(cat "$T/report.out"); stderr: $(cat "$T/report.err")"
[ "$(ls -A "$ROOTDIR")" = "$ROOT_BEFORE" ] ||
	fail "the report wrote into root's directory through the swapped link: $(ls -lA "$ROOTDIR")"
grep_q -F "held-0000.json: not a regular file" "$T/report.err" ||
	fail "the report did not warn about the FIFO: $(cat "$T/report.err")"
[ "$(cat "$T/report.rc")" = 0 ] || fail "the report failed: $(cat "$T/report.err")"
[ -f "$H/dumps.old/index.html" ] || fail "no page in the directory the report opened: $(ls -lA "$H/dumps.old")"
grep_q -F "loh-balloon" "$H/dumps.old/index.html" || fail "the page lacks the attacker's context"
grep_q -Fx "wrote $H/dumps.old/index.html: 1 dump (0 skipped, 0 failed)" "$T/report.out" ||
	fail "the summary does not name the directory written: $(cat "$T/report.out")"

# 2. The link in place before the report starts: refused, nothing written.
rm -f "$H/dumps.old/index.html"
set +e
"$DUMPWATCH" report "$H/dumps" >"$T/report.out" 2>"$T/report.err"
rc=$?
"$DUMPWATCH" report "$H/dumps/" >>"$T/report.out" 2>>"$T/report.err"
rc2=$?
set -e
[ "$(ls -A "$ROOTDIR")" = "$ROOT_BEFORE" ] ||
	fail "the report followed the link into root's directory: $(ls -lA "$ROOTDIR")"
[ "$rc" = 2 ] && [ "$rc2" = 2 ] || fail "a linked DIR: status $rc and $rc2, not 2: $(cat "$T/report.err")"
[ "$(grep -c "a symbolic link, not followed" "$T/report.err")" = 2 ] ||
	fail "a linked DIR is not refused as a link: $(cat "$T/report.err")"
[ ! -e "$H/dumps.old/index.html" ] || fail "a page was written for a refused DIR"
echo "PASS: the page goes into the directory the report opened, named as such; a linked DIR is refused; root's directory untouched"
