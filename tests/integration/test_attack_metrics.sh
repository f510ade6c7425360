#!/usr/bin/env bash
# The metrics page, attacked by a local user: 48 slowloris connections from
# 127.0.0.1 to 127.0.0.8 (six from each, so that a limit per address does
# not hold them back), each sending one byte of a request every 4 s, never
# finishing it. While they are held, root scrapes the page ten times: every
# scrape is answered. The guard's own counters say the attacker's share was
# held to 4 connections whatever its addresses (44 refused at once), and
# every connection the attacker opened is closed by the guard, the ones it
# admitted at their age although they never fall silent.
# --metrics-allow: a user not on the list is answered 403, one on it 200; an
# address range lets everyone from it in; a malformed list is refused at
# start.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root: the attacker is another user"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "needs Debian's python3 (/usr/bin/python3) to play the attacker"
make_user ATTACKER
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT/metrics"
mkdir -m 0755 "$T/bin"
mkdir -m 0777 "$T/att"
cat >"$T/bin/slowloris.py" <<'EOF'
# slowloris.py PORT N OUTDIR: N connections from 127.0.0.1-8, one byte of a
# request every 4 s each; OUTDIR/opened once all are open; ends when the
# server has closed every one (or after 120 s) and writes OUTDIR/result:
# "opened N closed M held_longest_s S".
import os, select, socket, sys, time
port, n, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096
conns = []
for i in range(n):
    s = socket.socket()
    s.bind(("127.0.0.%d" % (1 + i % 8), 0))
    s.connect(("127.0.0.1", port))
    s.send(req[:1])
    conns.append({"s": s, "sent": 1, "open": time.monotonic(), "closed": None})
open(os.path.join(out, "opened"), "w").close()
start = time.monotonic()
next_byte = start + 4
while time.monotonic() - start < 120 and any(c["closed"] is None for c in conns):
    live = [c for c in conns if c["closed"] is None]
    r, _, _ = select.select([c["s"] for c in live], [], [], max(0.0, min(1.0, next_byte - time.monotonic())))
    for c in live:
        if c["s"] in r:
            try:
                data = c["s"].recv(65536)
            except OSError:
                data = b""
            if not data:
                c["closed"] = time.monotonic()
    if time.monotonic() >= next_byte:
        for c in conns:
            if c["closed"] is None:
                try:
                    c["s"].send(req[c["sent"]:c["sent"] + 1])
                    c["sent"] += 1
                except OSError:
                    c["closed"] = time.monotonic()
        next_byte += 4
closed = [c for c in conns if c["closed"] is not None]
longest = max((c["closed"] - c["open"] for c in closed), default=0)
with open(os.path.join(out, "result"), "w") as f:
    f.write("opened %d closed %d held_longest_s %.1f\n" % (len(conns), len(closed), longest))
EOF
chmod 0644 "$T/bin/slowloris.py"
# counter NAME RESULT: a sample of the guard's own connection counters.
counter() { curl -s --max-time 60 "$URL" | awk -v r="result=\"$2\"" 'index($0, "'"$1"'{") == 1 && index($0, r) {print $2}'; }

start_guard --metrics-listen "127.0.0.1:$PORT"
wait_for "curl -sf --max-time 60 '$URL' >/dev/null" 30 || fail "the metrics page does not answer"

as_user ATTACKER "$PY" "$T/bin/slowloris.py" "$PORT" 48 "$T/att" &
ATTACK=$!
PIDS+=("$ATTACK")
wait_for "[ -e '$T/att/opened' ]" 60 || fail "the attacker did not open its connections"
ok=0
for i in $(seq 10); do
	if curl -sf --max-time 60 "$URL" -o "$T/scrape.$i"; then
		grep_q '^dumpwatch_processes ' "$T/scrape.$i" && ok=$((ok + 1))
	fi
done
[ "$ok" -eq 10 ] || fail "only $ok of 10 scrapes were answered while the attacker held its connections"
[ -e "$T/att/result" ] && fail "the attacker's connections were all closed before the scrapes: the attack did not hold"
refused=$(counter dumpwatch_metrics_connections_total refused_share)
[ "${refused:-0}" -ge 44 ] || fail "the attacker's share was not held to 4: ${refused:-no} connections refused for it, not 44"
# The attacker ends once the guard has closed all it opened.
wait "$ATTACK" || true
read -r _ opened _ closed _ longest <"$T/att/result"
[ "$opened" -eq 48 ] && [ "$closed" -eq 48 ] ||
	fail "the guard left $((opened - closed)) of the attacker's $opened connections open: $(cat "$T/att/result")"
echo "slowloris: $(cat "$T/att/result")"
cut=$(counter dumpwatch_metrics_connections_total cut)
[ "${cut:-0}" -ge 4 ] || fail "the admitted connections were not cut at their age (cut: ${cut:-none})"
stop_guard

# --metrics-allow.
set +e
"$DUMPWATCH" --rules-dir "$RULES" --dump-dir "$DUMPS" --metrics-listen "127.0.0.1:$PORT" \
	--metrics-allow 'root,10.0.0.0/33' >"$T/bad.out" 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] && grep_q -- '--metrics-allow: "10.0.0.0/33": the prefix is 0 to 32 bits' "$T/bad.out" ||
	fail "a malformed --metrics-allow: exit $rc: $(cat "$T/bad.out")"
start_guard --metrics-listen "127.0.0.1:$PORT" --metrics-allow root
wait_for "curl -sf --max-time 60 '$URL' >/dev/null" 30 || fail "root is not let in with --metrics-allow root"
code=$(as_user ATTACKER curl -s --max-time 60 -o "$T/att/body" -w '%{http_code}' "$URL")
[ "$code" = 403 ] || fail "the attacker was answered $code, not 403, with --metrics-allow root"
! grep_q '^dumpwatch_' "$T/att/body" || fail "the attacker read the page"
stop_guard
start_guard --metrics-listen "127.0.0.1:$PORT" --metrics-allow 127.0.0.0/8
code=$(as_user ATTACKER curl -s --max-time 60 -o /dev/null -w '%{http_code}' "$URL")
[ "$code" = 200 ] || fail "a client of 127.0.0.0/8 was answered $code with --metrics-allow 127.0.0.0/8"
stop_guard
echo "PASS: the metrics page answers scrapes under slowloris, holds a user to its share, cuts connections at their age, and keeps to --metrics-allow"
