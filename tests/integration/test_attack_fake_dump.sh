#!/usr/bin/env bash
# Attack: something else than a dump is published. A process of an
# unprivileged user is dumped through the runtime's dump command, so the
# createdump that writes the dump is that user's to choose: here a script of
# the user's, on a copy of the runtime, that writes what the test says:
#   sparse   a 100 GB sparse file (no ELF header)
#   bigcore  a sparse 100 GB file under an ELF core header that covers it
#   notcore  an executable instead of a core
#   open     a real dump, with a writer left holding it open
#   real     a real dump
# Only the real dump may reach the store (root's, 0600); every other one is
# journaled as dump-failed with the reason and removed: nothing of it stays in
# the store or in the staging directory. Both staging places are tried: the
# store's .incoming/UID (a process in our mount namespace) and a directory in
# the process's own TMPDIR (a process in its own user and mount namespace).
source "$(dirname "$0")/lib.sh"
make_user ATTACKER
require_userns ATTACKER

H="$T/home"
user_runtime "$H"
cat >"$H/createdump" <<SH
#!/bin/sh
# The attacker's createdump: the runtime runs it as "createdump --name PATH --TYPE PID".
name=""; prev=""
for a in "\$@"; do
	if [ "\$prev" = "--name" ] || [ "\$prev" = "-f" ]; then name=\$a; fi
	prev=\$a
done
mode=\$(cat "$H/mode")
echo "\$mode \$*" >>"$H/log"
case "\$mode" in
sparse) truncate -s 100G "\$name" ;;
bigcore) /usr/bin/python3 "$H/bigcore.py" "\$name" ;;
notcore) cp /bin/true "\$name" ;;
open)
	"$RUNTIME_DIR/createdump.real" "\$@" || exit 1
	# A writer that holds the dump open; it keeps none of the runtime's
	# descriptors, so the runtime sees createdump end.
	# It has the file open before this script ends.
	rm -f "\$name.held"
	/usr/bin/python3 -c 'import os, sys, time; os.closerange(0, 65536); f = open(sys.argv[1], "ab"); open(sys.argv[1] + ".held", "w"); time.sleep(60)' "\$name" &
	while [ ! -e "\$name.held" ]; do sleep 0.01; done
	rm -f "\$name.held"
	;;
*) exec "$RUNTIME_DIR/createdump.real" "\$@" ;;
esac
exit 0
SH
cat >"$H/bigcore.py" <<'PY'
# An ELF core header (a note and one 100 GB load segment) over a sparse file.
import struct, sys
size = 100 << 30
ehdr = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, 0, 0, 64, 56, 2, 0, 0, 0)
note = struct.pack("<IIQQQQQQ", 4, 0, 176, 0, 0, 0, 0, 4)
load = struct.pack("<IIQQQQQQ", 1, 4, 4096, 0, 0, size - 4096, size - 4096, 4096)
with open(sys.argv[1], "wb") as f:
    f.write(ehdr + note + load)
    f.truncate(size)
PY
chmod 0755 "$H/createdump"
cp "$H/createdump" "$RUNTIME_DIR/createdump"
echo real >"$H/mode"
: >"$H/log"
chown -R "$ATTACKER:$ATTACKER" "$H"
chmod 0755 "$H"

cat >"$RULES/attack.json" <<JSON
{ "rules": [ { "name": "loh-atk", "process": { "cmdline": "*--tag atk$$-*" },
               "when": "loh-size > 200MB", "dump": { "type": "triage" },
               "limits": { "max-dumps": 0, "cooldown": "1s" } } ] }
JSON
start_guard
chmod 0711 "$DUMPS"

# try TAG MODE REASON: the next dumps of TAG's process are made by MODE;
# waits for a dump-failed record with REASON, or for a dump when REASON is "".
try() {
	local tag=$1 mode=$2 reason=$3 pid=${APP_PIDS[$1]} before
	echo "$mode" >"$H/mode"
	if [ -z "$reason" ]; then
		before=$(journal_count_with dump "\"pid\":$pid")
		wait_for "[ \$(journal_count_with dump '\"pid\":$pid') -gt $before ]" 60 || fail "$tag: no dump in mode $mode"
		return
	fi
	before=$(journal_count_with dump-failed "$reason")
	wait_for "[ \$(grep '\"event\":\"dump-failed\"' '$JOURNAL' | grep '\"pid\":$pid' | grep -cF -- '$reason') -gt $before ]" 60 ||
		fail "$tag: mode $mode did not give a dump-failed with '$reason'"
}

for where in ${ATTACK_PLACES:-ns plain}; do
	TAG="atk$$-$where"
	if [ "$where" = ns ]; then
		# Its tree does not show our store (a tmpfs over it): the dump
		# is staged in its own TMPDIR.
		start_tagged "$TAG" as_user ATTACKER env DOTNET_ROOT="$H/rt" unshare -Ur --mount -- \
			sh -c 'mount -t tmpfs tmpfs "$0" && exec "$@"' "$DUMPS"
	else
		start_tagged "$TAG" as_user ATTACKER env DOTNET_ROOT="$H/rt"
	fi
	PID=${APP_PIDS[$TAG]}
	wait_journal attach 1 20 "\"pid\":$PID" || fail "$TAG not attached"
	tagged_cmd "$TAG" "loh 300"
	try "$TAG" sparse "is not published: it is not an ELF file (107374182400 bytes)"
	try "$TAG" bigcore "is not published: it is 107.4GB, more than a dump of that process can be"
	try "$TAG" notcore "is not published: it is an ELF file but not a 64-bit core"
	try "$TAG" open "is still open for writing by a process of uid $ATTACKER_UID; not published"
	try "$TAG" real ""
	echo stop >"$H/mode" # anything but the modes above: real dumps
	tagged_cmd "$TAG" "release"
	sleep 1.5
done
stop_guard
[ "$DW_RC" -eq 0 ] || fail "guard exit $DW_RC"

# Only real dumps were published, each a core of its process, root 0600.
n=0
for f in "$DUMPS"/*.core; do
	[ -e "$f" ] || continue
	n=$((n + 1))
	pid=$(basename "$f" | sed -E 's/^MemSpike-([0-9]+)-.*/\1/')
	"$DW_CORECHECK" "$f" "$pid" >/dev/null || fail "published file is not a core of $pid: $f"
	check_dump --type triage "$f" "$pid"
	[ "$(stat -c '%U %a %h' "$f")" = "root 600 1" ] || fail "$f is $(stat -c '%U %a %h' "$f")"
	[ "$(stat -c %s "$f")" -lt $((1 << 30)) ] || fail "$f is $(stat -c %s "$f") bytes"
done
[ "$n" -eq "$(journal_count dump)" ] || fail "$n files for $(journal_count dump) dump records"
[ "$n" -ge 2 ] || fail "expected a real dump of each process, found $n"
if grep '"event":"dump"' "$JOURNAL" | grep_q '"bytes":[0-9]\{10,\}'; then fail "a huge dump was journaled"; fi
# The store holds the real dumps, and dump contexts (of the refused fakes too).
[ -z "$(not_context "$DUMPS" | grep -v -e '\.core$' -e '^\.incoming$')" ] || fail "left in the store: $(ls -laR "$DUMPS")"
[ -z "$(find "$DUMPS" -mindepth 2 -not -path "$DUMPS/.incoming/*")" ] || fail "left in the store: $(ls -laR "$DUMPS")"
[ "$(context_outcomes "$DUMPS" | grep -c failed)" -eq "$(journal_count dump-failed)" ] ||
	fail "$(journal_count dump-failed) refused fakes, contexts: $(context_outcomes "$DUMPS" | tr '\n' ' ')"
[ -z "$(find "$DUMPS/.incoming" -type f 2>/dev/null)" ] || fail "left in .incoming: $(find "$DUMPS/.incoming" -type f)"
[ -z "$(find /tmp -maxdepth 1 -name '.dumpwatch-*' -uid "$ATTACKER_UID")" ] || fail "staging left in /tmp"
echo "PASS: $(journal_count dump-failed) fakes refused (sparse, 100 GB core header, executable, open writer) in both staging places; $n real dumps published"
