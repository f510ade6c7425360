# planter.py LOG KIND:PATH...: plays a user who plants diagnostics sockets,
# for the integration tests. "dead:PATH" binds a socket and closes it (the
# file stays, nobody listens), "live:PATH" listens and logs every connection
# as "connection from PID to PATH: N bytes" (PID from SO_PEERCRED),
# "link:PATH:TARGET" makes a symbolic link. Writes "ready" to LOG once all
# are in place, then serves the live ones until killed.
import os, select, socket, struct, sys
log = open(sys.argv[1], "a", buffering=1)
live = {}
for item in sys.argv[2:]:
    kind, path = item.split(":", 1)
    if kind == "link":
        path, target = path.split(":", 1)
        os.symlink(target, path)
        continue
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    if kind == "dead":
        s.close()
    else:
        s.listen(16)
        live[s] = path
log.write("ready\n")
while live:
    for s in select.select(list(live), [], [])[0]:
        c, _ = s.accept()
        pid = struct.unpack("3i", c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
        c.settimeout(2)
        try:
            data = c.recv(4096)
        except OSError:
            data = b""
        log.write("connection from %d to %s: %d bytes\n" % (pid, live[s], len(data)))
        c.close()
