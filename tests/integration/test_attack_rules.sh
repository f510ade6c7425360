#!/usr/bin/env bash
# A hostile local user against the rule files of the guard (docs/security.md "Trust and
# dump safety"). Each attack, were it taken, would make root act for the
# attacker: write a root-owned file holding a process's memory where the
# attacker likes ($CROND stands for /etc/cron.d: root's, 0755), or copy a
# root-only file's keys and values into the log and journal.
#   a) a rule file the attacker owns, in root's rules directory
#   b) a file of root's that others can write; a file below a directory the
#      attacker owns (a second guard)
#   c) a good file whose owner then becomes the attacker: withdrawn
#   d) dump.dir outside --dump-dir/--allow-dump-dir: file:line:column; inside
#      an --allow-dump-dir: the dump lands there; a link the attacker put in
#      an allowed directory others may write is not followed
#   e) a link to a rule file in the attacker's directory: refused; a
#      Kubernetes ConfigMap layout of root's links: taken, and its ..data swap
#      takes effect
#   f) a link to a root-only JSON file: planted by the attacker in a sticky
#      rules directory (a third guard), refused; made by root, rejected without
#      quoting it; in neither case does its content reach the log or journal
source "$(dirname "$0")/lib.sh"

make_user ATTACKER
CROND="$T/crond"
STAGE="$T/stage" # files are made here and renamed in: one event each
ATKDIR="$T/atk"  # the attacker's own directory
mkdir -m 0755 "$CROND" "$STAGE" "$T/allowed" "$T/allowed/sub" "$T/elsewhere"
mkdir -m 1777 "$T/shared" # an allowed directory that others may write in
install -d -m 0755 -o "$ATTACKER" -g "$ATTACKER" "$ATKDIR"
SECRETS=(aws_secret_access_key wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY password hunter2-Sup3rS3cret 'prod db')
install -m 0600 /dev/null "$T/secret.json"
cat >"$T/secret.json" <<'JSON'
{ "aws_secret_access_key": "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY", "password": "hunter2-Sup3rS3cret",
  "name": "prod db" }
JSON

# rule NAME TAG [DUMP-JSON] [WHEN]: a rule for the MemSpike tagged TAG.
rule() {
	local dump=${3:-}
	[ -n "$dump" ] || dump='{ "type": "triage" }'
	printf '{ "name": "%s", "process": { "cmdline": "*--tag %s" }, "when": "%s",\n  "dump": %s,\n  "limits": { "max-dumps": 0, "cooldown": "1s" } }\n' \
		"$1" "$2" "${4:-loh-size > 150MB}" "$dump"
}
# put_rule FILE TEXT: written in the stage and renamed into the rules directory.
put_rule() {
	printf '%s\n' "$2" >"$STAGE/$1"
	mv "$STAGE/$1" "$RULES/$1"
}
N=0
# spike TAG: a 250 MB LOH spike, then a pause; returns when the app has done both.
spike() {
	N=$((N + 1))
	tagged_cmd "$1" "spike 250 400"
	tagged_cmd "$1" "sleep $((800 + N))"
	wait_tagged_done "$1" "sleep $((800 + N))" 20
	sleep 1 # a dump that was started would be journaled by now
}
# settled FILE [JOURNAL]: until FILE has been loaded or rejected.
settled() {
	wait_for "grep -E '\"event\":\"rules-(loaded|rejected)\"' '${2:-$JOURNAL}' | grep_q -F '$1'" 10 ||
		fail "no rules-loaded or rules-rejected record for $1"
}
# taken FILE TAG WHAT [JOURNAL]: when FILE was loaded, fails saying what the
# attack achieved (with TAG: what a spike of that app then leads to).
taken() {
	local j=${4:-$JOURNAL}
	if grep '"event":"rules-loaded"' "$j" | grep_q -F "$1"; then
		if [ -n "$2" ]; then
			spike "$2"
			wait_journal dump 1 30 "\"pid\":${APP_PIDS[$2]}" || true
		fi
		fail "ATTACK TAKEN: $1 was loaded: $3; files written as root outside the store:" \
			"$(find "$CROND" "$T/elsewhere" "$T/allowed" -type f -printf '%p (%u %m) ' 2>/dev/null)"
	fi
}
# refused_once FILE OUT WHAT: exactly one "FILE: refused: WHAT..." line in OUT.
refused_once() {
	local n
	n=$(grep -cF "$1: refused: " "$2" || true)
	[ "$n" -eq 1 ] || fail "$n 'refused' lines for $1 in $2, expected 1"
	grep -F "$1: refused: " "$2" | grep_q -F "$3" || fail "the refusal of $1 does not say: $3"
}
# rejected_record FILE JOURNAL: the rules-rejected record of a refusal, nothing kept.
rejected_record() {
	grep '"event":"rules-rejected"' "$2" | grep -F "$1" | grep -F '"refused":true' |
		grep -qF '"kept_last_good":false' || fail "no rules-rejected record with refused and kept_last_good false for $1"
}
crond_empty() {
	[ -z "$(ls -A "$CROND")" ] || fail "ATTACK WORKED: root wrote into $CROND: $(ls -l "$CROND")"
}

A="atk$$"
start_tagged "$A"
PA=${APP_PIDS[$A]}

# (a) The operator handed a rule file to a user; that user sends the dumps of
# a process to a root-owned directory of their choosing, under their name.
: >"$STAGE/team.json"
chown "$ATTACKER:" "$STAGE/team.json"
mv "$STAGE/team.json" "$RULES/team.json"
rule team-loh "$A" "{ \"type\": \"triage\", \"dir\": \"$CROND\", \"name\": \"x\" }" |
	as_user ATTACKER tee "$RULES/team.json" >/dev/null
start_guard --allow-dump-dir "$T/allowed" --allow-dump-dir "$T/shared"
settled team.json
taken team.json "$A" "the attacker chooses where root writes a dump"
spike "$A"
crond_empty
refused_once "$RULES/team.json" "$T/dw.out" "file $RULES/team.json is owned by uid $ATTACKER_UID, not by root"
rejected_record team.json "$JOURNAL"
[ "$(journal_count_with attach "\"pid\":$PA")" -eq 0 ] || fail "attached to pid $PA for a refused rule"

# (b) A file of root's that others can write; the attacker rewrites it.
printf '%s\n' "$(rule shared-loh "$A" '{ "type": "triage" }' 'loh-size > 5GB')" >"$STAGE/shared.json"
chmod 0666 "$STAGE/shared.json"
mv "$STAGE/shared.json" "$RULES/shared.json"
settled shared.json
taken shared.json "" "a file others can write"
refused_once "$RULES/shared.json" "$T/dw.out" "file $RULES/shared.json is writable by group or others (mode 0666)"
rejected_record shared.json "$JOURNAL"
rule shared-loh "$A" "{ \"type\": \"triage\", \"dir\": \"$CROND\", \"name\": \"x\" }" |
	as_user ATTACKER tee "$RULES/shared.json" >/dev/null
wait_for "[ \$(grep -cF '$RULES/shared.json: refused: ' '$T/dw.out') -ge 2 ]" 10 ||
	fail "the attacker's rewrite of shared.json was not refused"
taken shared.json "$A" "the attacker's rewrite of a world-writable file"
spike "$A"
crond_empty

# (b) A rules directory below a directory the attacker owns (they could move
# it away and put their own in its place): a second guard.
G2="$ATKDIR/rules.d"
install -d -m 0755 "$G2"
rule below-loh "$A" >"$G2/below.json"
"$DUMPWATCH" -v --rules-dir "$G2" --dump-dir "$DUMPS" --journal "$T/j2.jsonl" >"$T/dw2.out" 2>&1 &
G2_PID=$!
PIDS+=("$G2_PID")
settled below.json "$T/j2.jsonl"
taken below.json "" "a file below the attacker's directory" "$T/j2.jsonl"
refused_once "$G2/below.json" "$T/dw2.out" "directory $ATKDIR is owned by uid $ATTACKER_UID, not by root"
rejected_record below.json "$T/j2.jsonl"
kill -TERM "$G2_PID"
wait "$G2_PID" || fail "the second guard did not stop cleanly"

# (e) A link, made by root, to a rule file in the attacker's directory.
rule linked-loh "$A" "{ \"type\": \"triage\", \"dir\": \"$CROND\", \"name\": \"x\" }" |
	as_user ATTACKER tee "$ATKDIR/r.json" >/dev/null
ln -s "$ATKDIR/r.json" "$STAGE/linked.json"
mv "$STAGE/linked.json" "$RULES/linked.json"
settled linked.json
taken linked.json "$A" "a link to a file in the attacker's directory"
spike "$A"
crond_empty
refused_once "$RULES/linked.json" "$T/dw.out" "directory $ATKDIR is owned by uid $ATTACKER_UID, not by root"
rejected_record linked.json "$JOURNAL"
[ "$(journal_count_with attach "\"pid\":$PA")" -eq 0 ] || fail "attached to pid $PA for a refused rule"
tagged_cmd "$A" "exit"

# (c) A good file, in force and dumping; its owner becomes the attacker: its
# rules are withdrawn at once, not kept as its last good version.
C="own$$"
start_tagged "$C"
PC=${APP_PIDS[$C]}
put_rule good.json "$(rule good-loh "$C")"
wait_journal rules-loaded 1 10 good.json || fail "good.json not loaded"
wait_journal attach 1 10 "\"pid\":$PC" || fail "pid $PC not attached for good.json"
spike "$C"
wait_journal dump 1 30 "\"pid\":$PC" || fail "good.json's rule did not dump"
chown "$ATTACKER" "$RULES/good.json"
wait_for "grep -qF '$RULES/good.json: refused: ' '$T/dw.out'" 10 ||
	fail "good.json still in force after its owner became uid $ATTACKER_UID"
refused_once "$RULES/good.json" "$T/dw.out" "file $RULES/good.json is owned by uid $ATTACKER_UID, not by root"
rejected_record good.json "$JOURNAL"
grep '"event":"rules-rejected"' "$JOURNAL" | grep -F good.json | grep_q -F '"withdrawn_rules":1' ||
	fail "the refusal of good.json does not say its rule was withdrawn"
wait_journal detach 1 10 "\"pid\":$PC" || fail "pid $PC not let go when its only rule was withdrawn"
spike "$C"
[ "$(journal_count_with dump "\"pid\":$PC")" -eq 1 ] || fail "dumped by a withdrawn rule"
tagged_cmd "$C" "exit"

# (d) dump.dir: outside the allowed directories (beside one, a prefix of a
# name, or through ".."), an error at its file:line:column; inside an
# --allow-dump-dir, the dump lands there.
D="dirs$$"
start_tagged "$D"
PD=${APP_PIDS[$D]}
put_rule dirs.json "{ \"rules\": [
$(rule d-elsewhere "$D" "{ \"type\": \"triage\", \"dir\": \"$T/elsewhere\" }"),
$(rule d-prefix "$D" "{ \"type\": \"triage\", \"dir\": \"$T/allowed2\" }"),
$(rule d-dotdot "$D" "{ \"type\": \"triage\", \"dir\": \"$T/allowed/../crond\" }")
] }"
settled dirs.json
taken dirs.json "$D" "dump directories outside --dump-dir and --allow-dump-dir"
allowed="($DUMPS, $T/allowed, $T/shared): dumps go only below the daemon's --dump-dir and its --allow-dump-dir directories"
for want in "$RULES/dirs.json:3:38: dump dir \"$T/elsewhere\" is not inside an allowed dump directory $allowed" \
	"$RULES/dirs.json:6:38: dump dir \"$T/allowed2\" is not inside an allowed dump directory $allowed" \
	"$RULES/dirs.json:9:38: dump dir \"$T/allowed/../crond\" has a \"..\" component; write the directory it means"; do
	grep -qF -- "$want" "$T/dw.out" || fail "missing: $want"
done
grep '"event":"rules-rejected"' "$JOURNAL" | grep -F dirs.json | grep_q -F '"kept_last_good":false' ||
	fail "dirs.json: no rules-rejected record"
put_rule allowed.json "$(rule d-allowed "$D" "{ \"type\": \"triage\", \"dir\": \"$T/allowed/sub\" }")"
wait_journal rules-loaded 1 10 allowed.json || fail "allowed.json (dump.dir inside --allow-dump-dir) not loaded"
wait_journal attach 1 10 "\"pid\":$PD" || fail "pid $PD not attached for allowed.json"
spike "$D"
wait_journal dump 1 30 "\"pid\":$PD" || fail "d-allowed did not dump"
[ -n "$(find "$T/allowed/sub" -maxdepth 1 -name "*-$PD-d-allowed-*.core")" ] ||
	fail "the dump is not in $T/allowed/sub: $(ls -A "$T/allowed/sub")"
check_dump --type triage "$(find "$T/allowed/sub" -maxdepth 1 -name "*-$PD-d-allowed-*.core")" "$PD"
[ -z "$(ls -A "$T/elsewhere")" ] && [ ! -e "$T/allowed2" ] || fail "a dump went outside the allowed directories"
crond_empty
# An allowed directory others may write in: the attacker puts a link there,
# under the name a rule of root's sends dumps to; the dump does not follow it.
as_user ATTACKER ln -s "$CROND" "$T/shared/team"
put_rule shared.json "$(rule d-shared "$D" "{ \"type\": \"triage\", \"dir\": \"$T/shared/team\" }")"
wait_journal rules-loaded 1 10 shared.json || fail "shared.json not loaded"
spike "$D"
wait_journal dump-failed 1 30 "a symbolic link is on the way" || fail "the dump in $T/shared/team did not fail"
crond_empty
tagged_cmd "$D" "exit"

# (e) A Kubernetes ConfigMap volume: cm.json -> ..data/cm.json, ..data -> the
# timestamped directory of the version; an update writes a new one and
# renames ..data_tmp over ..data. Version 1 cannot fire, version 2 can.
F="cm$$"
start_tagged "$F"
PF=${APP_PIDS[$F]}
cm_version() { # TIMESTAMP TEXT
	mkdir -m 0755 "$RULES/..$1"
	printf '%s\n' "$2" >"$RULES/..$1/cm.json"
	ln -s "..$1" "$RULES/..data_tmp"
	mv -T "$RULES/..data_tmp" "$RULES/..data"
}
cm_version 2026_11_23_10_00_00.1 "$(rule cm-v1 "$F" '{ "type": "triage" }' 'loh-size > 5GB')"
ln -s ..data/cm.json "$RULES/cm.json"
wait_journal rules-loaded 1 10 cm.json || fail "the ConfigMap's cm.json (a link) not loaded"
wait_journal attach 1 10 "\"pid\":$PF" || fail "pid $PF not attached for cm-v1"
cm_version 2026_11_23_10_05_00.2 "$(rule cm-v2 "$F")"
rm -rf "$RULES/..2026_11_23_10_00_00.1"
wait_journal rules-loaded 2 10 cm.json || fail "the ConfigMap update (..data swap) not loaded"
spike "$F"
wait_journal dump 1 30 "\"pid\":$PF" || fail "the updated ConfigMap rule did not dump"
grep '"event":"dump"' "$JOURNAL" | grep -F "\"pid\":$PF" | grep_q -F '"rule":"cm-v2"' || fail "not dumped by cm-v2"
! grep -qF "$RULES/cm.json: refused" "$T/dw.out" || fail "the ConfigMap's links were refused"
tagged_cmd "$F" "exit"

# (f) A link to a root-only JSON file. Made by root: trusted, but not a rule
# file, so nothing of it is shown.
ln -s "$T/secret.json" "$STAGE/secret-link.json"
mv "$STAGE/secret-link.json" "$RULES/secret-link.json"
settled secret-link.json
grep -qF "$RULES/secret-link.json:1:1: this does not look like a rule file" "$T/dw.out" ||
	fail "no generic diagnostic for a JSON file that is not a rule file"
# Planted by the attacker in a sticky rules directory (a third guard): refused.
PUB="$T/pub"
mkdir -m 1777 "$PUB"
"$DUMPWATCH" -v --rules-dir "$PUB" --dump-dir "$DUMPS" --journal "$T/j3.jsonl" >"$T/dw3.out" 2>&1 &
G3_PID=$!
PIDS+=("$G3_PID")
wait_for "grep -q guarding '$T/dw3.out'" 15 || fail "the third guard did not start"
as_user ATTACKER sh -c "ln -s '$T/secret.json' '$ATKDIR/steal.json' && mv '$ATKDIR/steal.json' '$PUB/steal.json'"
settled steal.json "$T/j3.jsonl"
refused_once "$PUB/steal.json" "$T/dw3.out" "symbolic link $PUB/steal.json is owned by uid $ATTACKER_UID, not by root"
rejected_record steal.json "$T/j3.jsonl"
kill -TERM "$G3_PID"
wait "$G3_PID" || fail "the third guard did not stop cleanly"
for s in "${SECRETS[@]}"; do
	for f in "$T/dw.out" "$JOURNAL" "$T/dw3.out" "$T/j3.jsonl"; do
		! grep -qF -- "$s" "$f" || fail "ATTACK WORKED: the root-only file's \"$s\" is in $f"
	done
done

crond_empty
stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC after SIGTERM"
echo "PASS: rule files of others, writable by others, below others' directories or linked there are refused" \
	"(and withdrawn); dump.dir stays inside the allowed directories; ConfigMap links and updates work;" \
	"nothing of a non-rule file is quoted"
