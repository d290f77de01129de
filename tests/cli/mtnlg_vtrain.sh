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
python3 - "$dir/points.csv" "$dir/in-node/points.csv" <<'PY'
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
