#!/usr/bin/env bash
# A sweep with the root key tp_across_nodes (issue #15, vTrain's TP 16 on
# 8-GPU nodes): "tp": "auto" goes past the node, a TP 16 plan is priced over
# the network and comes back with the key, simulate gives the plan's time
# again from the plan object, and without the key TP 16 is refused.
source "$(dirname "$0")/lib.bash" "$@"

cat >"$SCRATCH/sweep.json" <<'JSON'
{"model": "gpt3-6.7b", "system": "dgx-a100-80gb", "gpus": [32], "profile": "roofline",
 "tp_across_nodes": true, "top_k": 50,
 "training": {"global_batch": 64, "precision": "bf16", "tokens": 1e10},
 "space": {"tp": "auto", "pp": [1, 2], "micro_batch": [1], "recompute": ["full"], "zero": [1]}}
JSON
check "search with tp_across_nodes"
mpi 2 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/out" --quiet ||
    fail "search exited $?"
python3 - "$SCRATCH/out/plans.json" "$SCRATCH" <<'PY' || fail "plans"
import json, sys
d = json.load(open(sys.argv[1]))
tps = {p["parallel"]["tp"] for p in d["top_time"]}
assert 16 in tps or 32 in tps, f"no TP wider than a node among the plans: {sorted(tps)}"
wide = next(p for p in d["top_time"] if p["parallel"]["tp"] > 8)
assert wide.get("tp_across_nodes") is True, "the plan does not echo tp_across_nodes"
json.dump(wide, open(sys.argv[2] + "/plan.json", "w"))
print("ok: TP", sorted(tps), "plan", wide["parallel"]["tp"], wide["iteration_time_s"])
PY
check "the plan object simulates to its own time"
python3 - "$LLMPLAN" "$SCRATCH/plan.json" <<'PY' || fail "plan round trip"
import json, subprocess, sys
plan = json.load(open(sys.argv[2]))
p = subprocess.run([sys.argv[1], "simulate", sys.argv[2], "--json", "--profile", "roofline"],
                   capture_output=True, text=True)
assert p.returncode == 0, p.stderr
r = json.loads(p.stdout)
assert abs(r["iteration_time_s"] / plan["iteration_time_s"] - 1) < 1e-12, (r["iteration_time_s"], plan["iteration_time_s"])
PY
check "without the key, TP 16 is refused"
python3 - "$SCRATCH/sweep.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["tp_across_nodes"]
d["space"]["tp"] = [16]
json.dump(d, open(sys.argv[1].replace("sweep", "narrow"), "w"))
PY
mpi 1 "$LLMPLAN" search "$SCRATCH/narrow.json" -o "$SCRATCH/narrow" --quiet >"$SCRATCH/narrow.txt" 2>&1
python3 - "$SCRATCH/narrow/plans.json" <<'PY' || fail "narrow sweep"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["stats"]["feasible"] == 0, d["stats"]
PY
echo "tp_across_nodes sweep: ok"
