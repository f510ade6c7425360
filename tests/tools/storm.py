#!/usr/bin/env python3
"""A storm of planted diagnostics-socket names, for the guard's tests and
benchmarks: what a local user can do to a socket directory anyone may write
(/tmp, or a 1777 directory that is someone's TMPDIR).

  storm.py DIR [--names N] [--churn PER_S] [--young PER_S] [--life S] [--seconds S] [--ready FILE]

- plants N listener-less socket files named dotnet-diagnostic-{pid}-{key}-socket
  for the next N pids to be handed out (random keys);
- then, for S seconds, replaces PER_S of them a second (the oldest removed, a
  new one planted, alternately for a pid about to be used and for a pid that
  exists now);
- and starts PER_S young processes a second (sleep --life, default 1 s, with
  TMPDIR=DIR), so that their pids, some named by planted sockets, come and go.
Writes "ready" to FILE once the first N names are planted, then "done" with
counts at the end. Removes what it planted when it ends."""
import argparse
import collections
import os
import random
import socket
import subprocess
import time

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--names", type=int, default=20000)
ap.add_argument("--churn", type=float, default=0)
ap.add_argument("--young", type=float, default=0)
ap.add_argument("--life", type=float, default=1.0)
ap.add_argument("--seconds", type=float, default=10)
ap.add_argument("--ready")
a = ap.parse_args()

pid_max = int(open("/proc/sys/kernel/pid_max").read())
planted = collections.deque()
rng = random.Random(1)


def last_pid():
    return int(open("/proc/loadavg").read().split()[-1])


def plant(pid):
    path = "%s/dotnet-diagnostic-%d-%d-socket" % (a.dir, pid, rng.randrange(1, 1 << 31))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(path)
        planted.append(path)
    except OSError:
        pass
    s.close()


def live_pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def note(text):
    if a.ready:
        with open(a.ready, "a") as f:
            f.write(text + "\n")


base = last_pid()
for i in range(a.names):
    plant((base + 1 + i) % pid_max or 1)
note("ready %d" % len(planted))

env = dict(os.environ, TMPDIR=a.dir)
young = []
started = replaced = 0
t0 = time.monotonic()
next_churn = next_young = t0
pids = live_pids()
next_pids = t0 + 1
while time.monotonic() - t0 < a.seconds:
    now = time.monotonic()
    if a.churn and now >= next_churn:
        if planted:
            try:
                os.unlink(planted.popleft())
            except OSError:
                pass
        if replaced % 2 == 0:
            plant((last_pid() + 1 + rng.randrange(64)) % pid_max or 1)
        else:
            plant(rng.choice(pids))
        replaced += 1
        next_churn += 1 / a.churn
    if a.young and now >= next_young:
        young.append(subprocess.Popen(["/bin/sleep", str(a.life)], env=env, stdin=subprocess.DEVNULL))
        started += 1
        next_young += 1 / a.young
    if now >= next_pids:
        pids = live_pids()
        next_pids = now + 1
        young = [p for p in young if p.poll() is None]
    waits = [t for t in (next_churn if a.churn else None, next_young if a.young else None, next_pids) if t]
    time.sleep(max(0, min(waits) - time.monotonic()))
for p in young:
    p.wait()
for path in planted:
    try:
        os.unlink(path)
    except OSError:
        pass
note("done young=%d replaced=%d" % (started, replaced))
