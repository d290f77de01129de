#!/usr/bin/env bash
# scripts/mtnlg_vtrain.py (docs/case-studies.md section 1): vTrain's 294-point
# space is simulated whole; TP 16 runs across two DGX nodes as vTrain runs it
# (and is refused as wider than the node with --tp-in-node); the baseline
# TP8 PP35 DP12 fits; and for one token budget on one GPU type
# cost x MFU is the same for every feasible plan (the relation the section's
# explanation rests on: utilisation and cost move together).
#   mtnlg_vtrain.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
build=$(dirname "$(dirname "$bin")")
python3 "$src/scripts/mtnlg_vtrain.py" --build "$build" --out "$dir" \
    --no-plots >"$dir/out.txt" || { cat "$dir/out.txt"; exit 1; }
python3 "$src/scripts/mtnlg_vtrain.py" --build "$build" --out "$dir/in-node" --tp-in-node \
    --no-plots >"$dir/in-node.txt" || { cat "$dir/in-node.txt"; exit 1; }
python3 - "$dir/points.csv" "$dir/in-node/points.csv" <<'PY' || exit 1
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
inn = list(csv.DictReader(open(sys.argv[2])))
ok = [r for r in rows if r["feasible"] == "1"]
fails = []
if len(rows) != 294: fails.append(f"{len(rows)} points, expected 294")
tp16 = [r for r in inn if r["tp"] == "16"]
if len(tp16) != 98 or any("scale-up" not in r["reason"] for r in tp16):
    fails.append("--tp-in-node: TP 16 points not all refused as wider than the node")
if not any(r["tp"] == "16" for r in ok):
    fails.append("no TP 16 point feasible across two nodes")
if any("scale-up" in r["reason"] for r in rows):
    fails.append("TP 16 refused although the study lets it span nodes")
same = {(r["tp"], r["pp"], r["dp"]): r["iteration_time_s"] for r in inn if r["tp"] != "16"}
if any(same[(r["tp"], r["pp"], r["dp"])] != r["iteration_time_s"] for r in rows if r["tp"] != "16"):
    fails.append("TP 4 / 8 points differ with TP 16 allowed")
if not any((r["tp"], r["pp"], r["dp"]) == ("8", "35", "12") for r in ok):
    fails.append("baseline infeasible")
k = [float(r["cost_usd"]) * float(r["mfu"]) for r in ok]
if max(k) / min(k) - 1 > 1e-4: fails.append(f"cost x MFU varies: {min(k)} .. {max(k)}")
print("\n".join(fails) or f"ok: {len(ok)} feasible of {len(rows)}")
sys.exit(1 if fails else 0)
PY
# the key itself: refused without it, simulated with it as a system key or
# the root key, and the result (which echoes it) simulates again to the same
# time, as a plan copied from plans.json does
python3 - "$bin" "$dir" <<'PY'
import json, subprocess, sys
bin_, d = sys.argv[1], sys.argv[2]
run = {"model": "mt-nlg-530b", "system": "dgx-a100-80gb",
       "parallel": {"tp": 16, "pp": 35, "dp": 6, "micro_batch": 1, "recompute": "full",
                    "zero": 0, "sequence_parallel": False},
       "training": {"global_batch": 1920, "precision": "fp16", "flash_attention": False},
       "framework": "megatron-deepspeed"}
def sim(r):
    with open(f"{d}/run.json", "w") as f:
        json.dump(r, f)
    p = subprocess.run([bin_, "simulate", f"{d}/run.json", "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)
fails = []
a = sim(run)
if a["feasible"] or "scale-up" not in a["reason"]: fails.append(f"TP 16 not refused: {a['reason']}")
b = sim(dict(run, system={"preset": "dgx-a100-80gb", "tp_across_nodes": True}))
c = sim(dict(run, tp_across_nodes=True))
if not b["feasible"] or b.get("tp_across_nodes") is not True: fails.append("system key: not feasible or not echoed")
if c.get("iteration_time_s") != b.get("iteration_time_s"): fails.append("root key differs from the system key")
e = sim(b)
if e.get("iteration_time_s") != b["iteration_time_s"]: fails.append("the echoed result does not simulate again alike")
# Transformer Engine's userbuffers join the TP group over NVLink: TP overlap
# across nodes is refused, not priced
f = sim(dict(run, tp_across_nodes=True, framework={"name": "megatron", "tp_overlap": True}))
if f["feasible"] or "framework.tp_overlap" not in f["reason"]: fails.append(f"tp_overlap across nodes: {f['reason']}")
print("\n".join(fails) or "ok: tp_across_nodes refused / system key / root key / round trip")
sys.exit(1 if fails else 0)
PY
