#!/usr/bin/env bash
# Attack: a container and a pod claimed by a name. systemd hands every user
# a cgroup subtree of their own (user.slice/user-UID.slice/user@UID.service,
# the directory and its cgroup.procs, cgroup.subtree_control and
# cgroup.threads chowned to the user). Root lays that out in the cgroup2
# hierarchy and moves the user's .NET process into it, as systemd does for
# the user's manager; then the user, unprivileged, names cgroups beneath it
# as the kubelet and Docker name theirs,
#   .../user@UID.service/kubepods-besteffort-pod0badc0de_..._.slice/docker-feedface....scope
# and moves their own process in. The guard, with a rule that dumps the
# process and runs a hook, must not take it for container feedface... of pod
# 0badc0de-...: no container or pod in its journal records, in the dump's
# name ({container} and {pod} in the rule's template), in the hook's
# environment or in the metrics' labels.
# The control: where the kubelet makes them (/kubepods.slice/..., made and
# entered by root), the same kind of names label a second process.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip "curl not installed"

make_user ATTACKER

# The cgroup2 hierarchy: /sys/fs/cgroup on a unified system,
# /sys/fs/cgroup/unified on a hybrid one. dumpwatch reads every line of
# /proc/PID/cgroup, so the v2 line alone carries the attack.
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[ -n "$CG2" ] || skip "no cgroup2 hierarchy is mounted (/proc/self/mounts)"
awk -v m="$CG2" '$2 == m && $3 == "cgroup2" { split($4, o, ","); exit o[1] != "rw" }' /proc/self/mounts ||
	skip "the cgroup2 hierarchy at $CG2 is mounted read-only"

POD_UID=0badc0de-1111-4222-8333-444455556666
CTR_ID=feedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedface
MADE_CGROUPS=() # made here, outermost first; removed innermost first
DELEGATED=""
# Where the test itself runs: its processes go back there.
HOME_CG="$CG2$(sed -n 's/^0:://p' "/proc/$$/cgroup")"
[ -w "$HOME_CG/cgroup.procs" ] || HOME_CG=$CG2
# move_out DIR: every process in DIR to HOME_CG (a cgroup with a process in
# it cannot be removed).
move_out() {
	local p
	while read -r p; do echo "$p" >"$HOME_CG/cgroup.procs" 2>/dev/null || true; done <"$1/cgroup.procs"
}
cgroups_cleanup() {
	local d i
	# What the attacker made under their subtree, innermost first.
	if [ -n "$DELEGATED" ] && [ -d "$DELEGATED" ]; then
		while read -r d; do
			move_out "$d"
			wait_for "rmdir '$d' 2>/dev/null" 10 || echo "cleanup: cannot remove $d: $(rmdir "$d" 2>&1)"
		done < <(find "$DELEGATED" -mindepth 1 -depth -type d)
	fi
	for ((i = ${#MADE_CGROUPS[@]} - 1; i >= 0; i--)); do
		d=${MADE_CGROUPS[i]}
		[ -d "$d" ] || continue
		# One that another run of this test uses too is left to it.
		if [ -n "$(find "$d" -mindepth 1 -maxdepth 1 -type d)" ]; then
			echo "cleanup: $d holds cgroups made by another, left to it"
			continue
		fi
		move_out "$d"
		# The processes just moved out may take a moment to leave.
		wait_for "rmdir '$d' 2>/dev/null" 10 || echo "cleanup: cannot remove $d: $(rmdir "$d" 2>&1)"
	done
}
trap 'cgroups_cleanup || true; cleanup' EXIT

# make_cgroup DIR: makes DIR (root) and records it for the cleanup; an
# existing DIR (user.slice on a systemd host) is used as it is.
make_cgroup() {
	local why
	[ -d "$1" ] && return 0
	why=$(mkdir "$1" 2>&1) || skip "the kernel refuses to make a cgroup at $1: ${why#mkdir: }"
	MADE_CGROUPS+=("$1")
}

# 1. The user's delegated subtree, as systemd makes it for user@UID.service.
make_cgroup "$CG2/user.slice"
make_cgroup "$CG2/user.slice/user-$ATTACKER_UID.slice"
make_cgroup "$CG2/user.slice/user-$ATTACKER_UID.slice/user@$ATTACKER_UID.service"
DELEGATED="$CG2/user.slice/user-$ATTACKER_UID.slice/user@$ATTACKER_UID.service"
chown "$ATTACKER_UID:$ATTACKER_GID" "$DELEGATED" "$DELEGATED"/cgroup.{procs,subtree_control,threads}

# 2. The attacker's .NET process, run from a copy anyone may read (the
# checkout may sit where the attacker cannot), moved by root into the
# subtree as systemd moves the user's manager.
cp -r "$(dirname "$APP")" "$T/app-copy"
chmod -R a+rX "$T/app-copy"
APP="$T/app-copy/$(basename "$APP")"
start_app as_user ATTACKER
[ "$(stat -c %u "/proc/$APP_PID")" = "$ATTACKER_UID" ] || fail "MemSpike does not run as the attacker"
echo "$APP_PID" >"$DELEGATED/cgroup.procs" || fail "root cannot move pid $APP_PID into $DELEGATED"

# 3. The attack, as the attacker: cgroups named like a pod's and a
# container's under their own subtree, and their own process moved there.
FORGED="$DELEGATED/kubepods-besteffort-pod${POD_UID//-/_}.slice/docker-$CTR_ID.scope"
why=$(as_user ATTACKER sh -c 'mkdir -p "$1" && echo "$2" >"$1/cgroup.procs"' _ "$FORGED" "$APP_PID" 2>&1) ||
	skip "the kernel refuses cgroup delegation to an unprivileged user: $why"
line=$(grep '^0::' "/proc/$APP_PID/cgroup") || fail "no cgroup2 line in /proc/$APP_PID/cgroup"
[ "${line#0::}" = "${FORGED#"$CG2"}" ] || fail "the attacker's process is not in the forged cgroup: $line"
echo "the attacker's process: $line"

# 3b. The control, when this hierarchy has no kubepods.slice of its own (a
# Kubernetes node's is left alone): root makes a pod's slice and a
# container's scope where the kubelet and containerd make them.
CTL_POD=7e57c0de-aaaa-4bbb-8ccc-dddddddddddd
CTL_ID=c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00
CTL=""
if [ ! -e "$CG2/kubepods.slice" ]; then
	make_cgroup "$CG2/kubepods.slice"
	make_cgroup "$CG2/kubepods.slice/kubepods-burstable.slice"
	make_cgroup "$CG2/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${CTL_POD//-/_}.slice"
	make_cgroup "$CG2/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${CTL_POD//-/_}.slice/cri-containerd-$CTL_ID.scope"
	CTL="ctl$$"
	start_tagged "$CTL"
	echo "${APP_PIDS[$CTL]}" >"${MADE_CGROUPS[-1]}/cgroup.procs" || fail "root cannot move the control process"
fi

# 4. The guard: a rule that matches the process, dumps it under a name that
# shows {container} and {pod}, and runs a hook that prints what it is told.
HOOKS="$T/hooks"
mkdir -m 0755 "$HOOKS"
cat >"$HOOKS/ident.sh" <<'SH'
#!/bin/sh
echo "container=[${DUMPWATCH_CONTAINER-unset}] pod=[${DUMPWATCH_POD-unset}]"
SH
chmod 0755 "$HOOKS/ident.sh"
cat >"$RULES/claim.json" <<JSON
{ "name": "claim", "process": { "pid": $APP_PID }, "when": "loh-size > 100MB",
  "dump": { "type": "triage", "name": "{name}-c{container}-p{pod}-{pid}.core" },
  "limits": { "max-dumps": 1 }, "hooks": { "on-dump": ["$HOOKS/ident.sh"] } }
JSON
[ -z "$CTL" ] || cat >"$RULES/control.json" <<JSON
{ "name": "control", "process": { "pid": ${APP_PIDS[$CTL]} }, "when": "loh-size > 100GB" }
JSON
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start_guard --metrics-listen "127.0.0.1:$PORT"
wait_journal attach 1 30 "\"pid\":$APP_PID," || fail "the attacker's process was not attached"

# The journal: the attach record carries neither.
rec=$(grep '"event":"attach"' "$JOURNAL" | grep -F "\"pid\":$APP_PID,")
[ "$(jq -r 'has("container") or has("pod")' <<<"$rec")" = false ] ||
	fail "the attacker's process was labelled by the cgroup names it chose: $rec"

# The metrics: its series carry pid and process, no container or pod.
curl -sS --max-time 10 "http://127.0.0.1:$PORT/metrics" >"$T/scrape.txt" || fail "no answer on the metrics port"
series=$(grep "^dumpwatch_process_attached{.*pid=\"$APP_PID\"" "$T/scrape.txt") ||
	fail "no dumpwatch_process_attached series of pid $APP_PID: $(grep process_attached "$T/scrape.txt")"
! grep_q 'container=\|pod=' <<<"$series" || fail "the metrics label the attacker's process: $series"

# The dump's name and the hook's environment.
app_cmd "loh 150"
wait_journal dump 1 60 "\"pid\":$APP_PID," || fail "the attacker's process was not dumped"
core=$(grep '"event":"dump"' "$JOURNAL" | grep -F "\"pid\":$APP_PID," | head -1 | jq -r .path)
[ "$(basename "$core")" = "MemSpike-c-p-$APP_PID.core" ] ||
	fail "the dump's name carries a container or pod: $(basename "$core")"
wait_journal hook 1 30 || fail "the on-dump hook did not run: $(grep '"event":"hook' "$JOURNAL")"
grep '"event":"hook"' "$JOURNAL" | grep_q -F '"output":"container=[unset] pod=[unset]"' ||
	fail "the hook was told a container or pod: $(grep '"event":"hook"' "$JOURNAL")"

# Nowhere, in any form: the full ids, the short id, the pod uid.
for s in "$CTR_ID" "${CTR_ID:0:12}" "$POD_UID"; do
	! grep_q -F "$s" "$JOURNAL" || fail "the journal names $s: $(grep -F "$s" "$JOURNAL" | head -3)"
	! grep_q -F "$s" "$T/scrape.txt" || fail "the metrics name $s"
	[ -z "$(find "$DUMPS" -name "*$s*")" ] || fail "a file in the store is named after $s: $(ls "$DUMPS")"
done

# The control: the kubelet's layout is labelled, in the journal and the metrics.
if [ -n "$CTL" ]; then
	pid=${APP_PIDS[$CTL]}
	wait_journal attach 1 30 "\"pid\":$pid," || fail "the control process was not attached"
	rec=$(grep '"event":"attach"' "$JOURNAL" | grep -F "\"pid\":$pid,")
	[ "$(jq -r '"\(.container) \(.pod)"' <<<"$rec")" = "$CTL_ID $CTL_POD" ] ||
		fail "the control process in the kubelet's layout is not labelled container $CTL_ID, pod $CTL_POD: $rec"
	curl -sS --max-time 10 "http://127.0.0.1:$PORT/metrics" >"$T/scrape2.txt" || fail "no answer on the metrics port"
	grep_q -F "dumpwatch_process_attached{pid=\"$pid\",process=\"MemSpike\",container=\"$CTL_ID\",pod=\"$CTL_POD\"}" \
		"$T/scrape2.txt" || fail "the control's metrics: $(grep "pid=\"$pid\"" "$T/scrape2.txt" | head -3)"
	echo "control: pid $pid in /kubepods.slice/.../cri-containerd-${CTL_ID:0:12}....scope is container ${CTL_ID:0:12}, pod $CTL_POD"
else
	echo "control: skipped, this hierarchy has a kubepods.slice of its own"
fi

stop_guard
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC after SIGTERM"
echo "PASS: a user's cgroups named like a pod's and a container's under user@$ATTACKER_UID.service label nothing:" \
	"journal, dump name ($(basename "$core")), hook environment, metrics"
