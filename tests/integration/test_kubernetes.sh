#!/usr/bin/env bash
# The Kubernetes deployment without a cluster: deploy/kubernetes/dumpwatch.yaml
# parses as YAML and agrees with the rest of the project (the unit's
# capabilities, the mounts its args point at, the metrics port); then the
# image's entry command (Containerfile ENTRYPOINT + the DaemonSet's args) runs
# on the host, the volumes' paths mapped to directories laid out as the
# kubelet lays them out (..data swapped by rename, a link per key): it loads
# the ConfigMap's rules, takes an update of them once, dumps, uploads with the
# Secret's credentials under the node's prefix, answers a scrape, and stops.
source "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
trap 's3rver_stop; cleanup' EXIT
SRC=${DW_SOURCE_DIR:?set by ctest}
PY=/usr/bin/python3
$PY -c 'import yaml' 2>/dev/null || fail "python3-yaml is missing (scripts/setup.sh installs it)"
K="$T/k8s"
mkdir -p "$K"

# 1. The manifest, checked against the unit and the Containerfile; what the
# smoke run needs is written out: the args, the ConfigMap's files, the Secret's.
$PY - "$SRC/deploy/kubernetes/dumpwatch.yaml" "$SRC/scripts/dumpwatch.service.in" "$SRC/Containerfile" "$K" <<'EOF' ||
import json, os, re, sys, yaml
manifest, unit, containerfile, out = sys.argv[1:]
docs = [d for d in yaml.safe_load_all(open(manifest)) if d]
kinds = {d["kind"]: d for d in docs}
def need(cond, what):
    if not cond:
        print("manifest: " + what); sys.exit(1)
need({"Namespace", "ConfigMap", "Secret", "DaemonSet"} <= set(kinds), "kinds are %s" % sorted(kinds))
ds = kinds["DaemonSet"]; spec = ds["spec"]["template"]["spec"]
need(spec.get("hostPID") is True, "hostPID is not true")
c = spec["containers"][0]
args = c["args"]
def arg(name):
    need(name in args, "no %s in the args" % name); return args[args.index(name) + 1]
caps = set(c["securityContext"]["capabilities"]["add"])
need(c["securityContext"]["capabilities"]["drop"] == ["ALL"], "capabilities not dropped first")
m = re.search(r"^CapabilityBoundingSet=(.*)$", open(unit).read(), re.M)
unit_caps = {x[len("CAP_"):] for x in m.group(1).split()}
need(caps == unit_caps, "capabilities %s differ from the unit's %s" % (sorted(caps), sorted(unit_caps)))
need(c["securityContext"].get("privileged") is False and c["securityContext"].get("allowPrivilegeEscalation") is False,
     "privileged or escalating")
mounts = {v["mountPath"]: v["name"] for v in c["volumeMounts"]}
vols = {v["name"]: v for v in spec["volumes"]}
def vol_at(path):
    need(path in mounts, "nothing mounted at %s" % path); return vols[mounts[path]]
need(vol_at(arg("--rules-dir")).get("configMap", {}).get("name") == kinds["ConfigMap"]["metadata"]["name"],
     "the rules dir is not the ConfigMap")
cred_dir = os.path.dirname(arg("--upload-credentials"))
sec = vol_at(cred_dir)
need(sec.get("secret", {}).get("secretName") == kinds["Secret"]["metadata"]["name"], "the credentials are not the Secret")
need(sec["secret"].get("defaultMode") == 0o400, "the Secret's files are not 0400")
need(vol_at("/tmp").get("hostPath", {}).get("path") == "/tmp", "the node's /tmp is not mounted")
state = os.path.dirname(arg("--journal"))
need(vol_at(state).get("hostPath") is not None, "the state is not on the node")
need(arg("--dump-dir").startswith(state + "/"), "the dumps are not in the node's state directory")
port = arg("--metrics-listen").rsplit(":", 1)[1]
ann = ds["spec"]["template"]["metadata"]["annotations"]
need(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == port, "scrape annotations")
need([p["containerPort"] for p in c["ports"]] == [int(port)], "the container port is not the metrics port")
need(any(e["name"] == "NODE_NAME" and e["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName" for e in c["env"]),
     "NODE_NAME is not the node's name")
ep = re.search(r"^ENTRYPOINT (\[.*\])$", open(containerfile).read(), re.M)
need(ep, "no ENTRYPOINT in the Containerfile")
json.dump({"entrypoint": json.loads(ep.group(1)), "args": args, "rules": arg("--rules-dir"),
           "creds_dir": cred_dir, "creds_file": os.path.basename(arg("--upload-credentials")), "state": state},
          open(os.path.join(out, "run.json"), "w"))
os.makedirs(os.path.join(out, "configmap")); os.makedirs(os.path.join(out, "secret"))
for k, v in kinds["ConfigMap"]["data"].items():
    open(os.path.join(out, "configmap", k), "w").write(v)
for k, v in kinds["Secret"]["stringData"].items():
    open(os.path.join(out, "secret", k), "w").write(v)
EOF
	fail "the manifest does not hold together"
for f in "$K"/configmap/*.json; do
	"$DUMPWATCH" check "$f" >/dev/null || fail "the ConfigMap's $(basename "$f") is not a good rule file"
done

# 2. Volumes as the kubelet writes them: VOL/..TS/files, VOL/..data -> ..TS
# (swapped by renaming ..data_tmp), VOL/KEY -> ..data/KEY.
kubelet_volume() { # VOL SRCDIR TS MODE
	local vol=$1 src=$2 ts=$3 mode=$4 f old
	old=$(readlink "$vol/..data" 2>/dev/null || true)
	mkdir -p "$vol/..$ts"
	for f in "$src"/*; do install -m "$mode" "$f" "$vol/..$ts/"; done
	ln -s "..$ts" "$vol/..data_tmp"
	mv -T "$vol/..data_tmp" "$vol/..data"
	for f in "$src"/*; do [ -L "$vol/$(basename "$f")" ] || ln -s "..data/$(basename "$f")" "$vol/$(basename "$f")"; done
	[ -z "$old" ] || rm -rf "${vol:?}/$old"
}
s3rver_install
s3rver_start "$T/s3" dumps
printf 'AWS_ACCESS_KEY_ID=S3RVER\nAWS_SECRET_ACCESS_KEY=S3RVER\n' >"$K/secret/credentials"
RULESV="$K/vol/rules"
CREDSV="$K/vol/s3"
STATEV="$K/vol/state"
mkdir -p "$RULESV" "$CREDSV" "$STATEV/dumps"
chmod 0711 "$STATEV" "$STATEV/dumps"
kubelet_volume "$RULESV" "$K/configmap" 2026_11_26_10_00_00.1 0644
kubelet_volume "$CREDSV" "$K/secret" 2026_11_26_10_00_00.1 0400
[ -L "$CREDSV/credentials" ] || fail "the Secret's file is not a link as the kubelet makes it"

# 3. The entry command with the volumes' paths mapped, NODE_NAME expanded
# as the kubelet expands $(VAR) in args, the endpoint and port local.
MPORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mapfile -t CMD < <($PY - "$K/run.json" "$DUMPWATCH" "$RULESV" "$CREDSV" "$STATEV" "$S3_ENDPOINT" "$MPORT" <<'EOF'
import json, sys
run = json.load(open(sys.argv[1]))
dumpwatch, rules, creds, state, endpoint, port = sys.argv[2:]
cmd = [dumpwatch if a == "/usr/sbin/dumpwatch" else a for a in run["entrypoint"]]
args = list(run["args"])
for i, a in enumerate(args):
    a = a.replace("$(NODE_NAME)", "node-a")
    for frm, to in ((run["rules"], rules), (run["creds_dir"], creds), (run["state"], state)):
        if a == frm or a.startswith(frm + "/"):
            a = to + a[len(frm):]
    if i > 0 and args[i - 1] == "--upload-endpoint":
        a = endpoint
    if i > 0 and args[i - 1] == "--metrics-listen":
        a = "127.0.0.1:" + port
    args[i] = a
print("\n".join(cmd + args))
EOF
)
[ "${CMD[0]}" = "$DUMPWATCH" ] || fail "the entry point is not dumpwatch: ${CMD[*]}"
JOURNAL="$STATEV/journal.jsonl"
DUMPS="$STATEV/dumps"
start_app
"${CMD[@]}" -v >"$T/dw.out" 2>&1 &
DW_PID=$!
PIDS+=("$DW_PID")
wait_for "grep -q guarding '$T/dw.out'" 15 || fail "the entry command did not start: ${CMD[*]}"
wait_journal rules-loaded 2 10 || fail "the ConfigMap's two rule files were not loaded"
wait_journal attach 1 15 "\"pid\":$APP_PID" || fail "MemSpike was not attached (loh-balloon matches every process)"
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$T/scrape.txt" || fail "no answer on the metrics port"
grep_q "pid=\"$APP_PID\"" "$T/scrape.txt" || fail "the scrape has no series of MemSpike"
promtool check metrics <"$T/scrape.txt" >/dev/null 2>&1 || fail "promtool refuses the scrape: $(promtool check metrics <"$T/scrape.txt" 2>&1 | head -5)"

# 4. The ConfigMap is edited: loh-balloon's threshold lowered. Applied once;
# then a spike is dumped and uploaded under the node's prefix.
sed -i 's/loh-size > 1GiB for 10s/loh-size > 200MB/; s/"type": "withheap"/"type": "triage"/' "$K/configmap/loh-balloon.json"
kubelet_volume "$RULESV" "$K/configmap" 2026_11_26_10_05_00.2 0644
wait_journal rules-loaded 2 10 loh-balloon.json || fail "the ConfigMap update was not applied"
sleep 1
[ "$(journal_count_with rules-loaded loh-balloon.json)" -eq 2 ] || fail "the update was applied more than once"
[ "$(journal_count_with rules-loaded orders-api.json)" -eq 1 ] || fail "an unchanged file was reloaded"
app_cmd "spike 300 1500"
wait_journal upload 1 60 || fail "the dump was not uploaded"
name=$(basename "$(grep '"event":"dump"' "$JOURNAL" | head -1 | jq -r .path)")
curl -sf -o /dev/null "$S3_ENDPOINT/dumps/node-a/$name" || fail "node-a/$name is not in the bucket"
[ ! -e "$DUMPS/$name" ] || fail "the local dump is kept despite --upload-keep no"
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$T/scrape2.txt" || fail "no answer on the metrics port after the dump"
grep_q '^dumpwatch_dumps_total{result="taken"} 1$' "$T/scrape2.txt" || fail "the dump is not counted: $(grep dumps_total "$T/scrape2.txt")"
grep_q '^dumpwatch_uploads_total{result="ok"} 1$' "$T/scrape2.txt" || fail "the upload is not counted: $(grep uploads_total "$T/scrape2.txt")"

kill -TERM "$DW_PID"
wait_dw 30
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC after SIGTERM"
echo "PASS: the DaemonSet's manifest holds together, and its entry command guards, reloads, dumps, uploads and serves metrics"
