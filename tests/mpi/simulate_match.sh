#!/usr/bin/env bash
# The plans in plans.json are what `llmplan simulate` says for the same
# configuration: the time- and cost-optimal plans (and the whole Pareto front,
# and every best_by group's plans) are written back as run descriptions and
# simulated one by one. The framework, attention kernel and precision are
# dimensions of the sweep (issue #17): simulate must agree on them too.
source "$(dirname "$0")/lib.bash" "$@"

cat >"$SCRATCH/sweep.json" <<'JSON'
{"models": ["gpt3-6.7b", "llama2-13b"], "systems": ["dgx-a100-80gb", "dgx-h100"],
 "gpus": [32, 64, 128], "training": {"global_batch": 512, "precision": "bf16", "tokens": 2e10},
 "profile": "roofline", "framework": ["megatron", {"name": "megatron", "tp_overlap": true}, "fsdp"],
 "best_by": ["framework", "attention", "precision"],
 "space": {"tp": [1, 2, 4, 8], "pp": [1, 2, 4], "vp": [1, 2], "micro_batch": [1, 2, 4],
           "sequence_parallel": "auto", "recompute": "auto", "zero": [0, 1, 3],
           "attention": ["flash2", "unfused"], "precision": ["bf16", "fp16"]}}
JSON
check "search on 2 ranks"
mpi 2 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/out" --quiet --no-dataset ||
    fail "search exited $?"
[ ! -e "$SCRATCH/out/sweep.h5" ] || fail "--no-dataset wrote sweep.h5"

python3 - "$SCRATCH/out/plans.json" "$SCRATCH" <<'PY' || fail "cannot write run descriptions"
import json, sys
# a plan is simulate --json's object plus its configuration; the run's
# training settings are "training_config" ("training" is the projection)
def pairs(kv):
    keys = [k for k, _ in kv]
    assert len(keys) == len(set(keys)), "duplicate keys: %s" % keys
    return dict(kv)
d = json.load(open(sys.argv[1]), object_pairs_hook=pairs)
plans = [("time_optimal", d["time_optimal"]), ("cost_optimal", d["cost_optimal"])]
plans += [("pareto%d" % i, p) for i, p in enumerate(d["pareto"])]
groups = d["best_by"]["groups"]
# 3 frameworks x 2 attention kernels x 2 precisions, each with a feasible plan
assert len(groups) == 12, len(groups)
for i, g in enumerate(groups):
    for k in ("fastest", "cheapest"):
        p = g[k]
        fw = p["framework"] if isinstance(p["framework"], str) else p["framework"]["name"]
        assert (fw, p["training_config"]["attention"], p["training_config"]["precision"]) == \
            (g["framework"], g["attention"], g["precision"]), (g, fw)
        plans.append(("group%d%s" % (i, k), p))
for name, p in plans:
    run = {k: p[k] for k in ("model", "system", "parallel", "framework", "gpus")}
    run["training"] = p["training_config"]
    json.dump(run, open("%s/%s.run.json" % (sys.argv[2], name), "w"), indent=1)
    json.dump(p, open("%s/%s.plan.json" % (sys.argv[2], name), "w"), indent=1)
print(len(plans))
PY
for run in "$SCRATCH"/*.run.json; do
    name=$(basename "$run" .run.json)
    check "$name: simulate --json gives the plan's figures"
    "$LLMPLAN" simulate "$run" --json --profile roofline >"$SCRATCH/$name.sim.json" ||
        fail "simulate $run exited $?"
    python3 - "$SCRATCH/$name.plan.json" "$SCRATCH/$name.sim.json" <<'PY' || fail "$name differs"
import json, sys
plan, sim = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
proj = plan["training"]
def close(a, b):
    return abs(a - b) <= 1e-12 * max(abs(a), abs(b), 1e-300)
ok = sim["feasible"] and plan["feasible"]
for k in ("iteration_time_s", "tokens_per_s", "mfu", "memory_per_gpu_gib"):
    ok = ok and close(plan[k], sim[k])
ok = ok and close(proj["cost_usd"], sim["training"]["cost_usd"])
if not ok:
    print("plan:", plan["iteration_time_s"], proj["cost_usd"])
    print("sim: ", sim["iteration_time_s"], sim["training"]["cost_usd"])
sys.exit(0 if ok else 1)
PY
done
check "time_optimal is the fastest of top_time, cost_optimal the cheapest of top_cost"
json_get "$SCRATCH/out/plans.json" 'd["time_optimal"] == d["top_time"][0] and d["cost_optimal"] == d["top_cost"][0] and all(a["iteration_time_s"] <= b["iteration_time_s"] for a, b in zip(d["top_time"], d["top_time"][1:]))' |
    grep -q True || fail "optima and top lists disagree"
echo "PASS"
