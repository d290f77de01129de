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

# Stop 32's run keys, fixed in a sweep or varied by it, agree with simulate
# too: a system with segment_gpus (gb200-nvl72, 64 of 72), fp8 with bf16
# first / last layers and a per-module precision, and frameworks with
# Megatron-Core's buckets, an explicit bucket_MB and moe_dispatcher_sms. The
# walk skips what the run parse refuses (rules.h lp_bf16_layers_gap: pp 8
# leaves 3 of gpt-oss-20b's 24 layers a stage, fewer than the last 4 in
# bf16, under fp8 only), and simulate refuses that run naming the key.
mkdir -p "$SCRATCH/s32"
cat >"$SCRATCH/s32/sweep.json" <<'JSON'
{"model": "gpt-oss-20b", "system": "gb200-nvl72", "gpus": [64, 128],
 "training": {"global_batch": 256, "precision": "fp8", "fp8_scaling": "current", "tokens": 1e10,
              "bf16_first_layers": 1, "bf16_last_layers": 4,
              "module_precision": {"linear_qkv": "bf16"}},
 "profile": "roofline",
 "framework": ["megatron", {"name": "megatron", "bucket_MB": 40},
               {"name": "megatron", "moe_dispatcher": "hybridep", "moe_dispatcher_sms": 24}],
 "best_by": ["framework", "precision"], "top_k": 100000,
 "space": {"tp": [1, 2], "pp": [1, 2, 8], "ep": [8, 32], "micro_batch": [1, 2],
           "sequence_parallel": "auto", "recompute": "auto", "precision": ["bf16", "fp8"]}}
JSON
check "stop 32 keys: search on 2 ranks"
mpi 2 "$LLMPLAN" search "$SCRATCH/s32/sweep.json" -o "$SCRATCH/s32/out" --quiet --no-dataset ||
    fail "search (stop 32 keys) exited $?"
python3 - "$SCRATCH/s32/out/plans.json" "$SCRATCH/s32" <<'PY' || fail "stop 32 keys: plans"
import json, sys
d = json.load(open(sys.argv[1]))
groups = d["best_by"]["groups"]
assert len(groups) == 6, len(groups)
plans = [("g%d%s" % (i, k), g[k]) for i, g in enumerate(groups) for k in ("fastest", "cheapest")]
plans += [("time_optimal", d["time_optimal"]), ("cost_optimal", d["cost_optimal"])]
seen = set()
for name, p in plans:
    t = p["training_config"]
    assert t["bf16_first_layers"] == 1 and t["bf16_last_layers"] == 4, t
    assert t["module_precision"] == {"linear_qkv": "bf16"}, t
    fw = p["framework"]
    if isinstance(fw, dict):
        seen.add(("bucket_MB" in fw, fw.get("moe_dispatcher_sms")))
    else:
        seen.add(("mcore", None))
    run = {k: p[k] for k in ("model", "system", "parallel", "framework", "gpus")}
    run["training"] = t
    json.dump(run, open("%s/%s.run.json" % (sys.argv[2], name), "w"), indent=1)
    json.dump(p, open("%s/%s.plan.json" % (sys.argv[2], name), "w"), indent=1)
# each framework printed as it reads back: Megatron-Core's buckets by name,
# the explicit size with bucket_MB, the dispatcher's SMs without one
assert seen == {("mcore", None), (True, None), (False, 24)}, seen
# the walk skipped fp8 at pp 8 (3 layers a stage < 4), not bf16 at pp 8
every = d["top_time"]
assert not [p for p in every if p["parallel"]["pp"] == 8 and p["training_config"]["precision"] == "fp8"]
bf = [p for p in every if p["parallel"]["pp"] == 8 and p["training_config"]["precision"] == "bf16"]
assert bf, "no bf16 plan at pp 8"
p = bf[0]
run = {k: p[k] for k in ("model", "system", "parallel", "framework", "gpus")}
run["training"] = dict(p["training_config"], precision="fp8", fp8_scaling="current")
json.dump(run, open("%s/refused.json" % sys.argv[2], "w"), indent=1)
PY
for run in "$SCRATCH"/s32/*.run.json; do
    name=$(basename "$run" .run.json)
    check "stop 32 keys, $name: simulate --json gives the plan's figures"
    "$LLMPLAN" simulate "$run" --json --profile roofline >"$SCRATCH/s32/$name.sim.json" ||
        fail "simulate $run exited $?"
    python3 - "$SCRATCH/s32/$name.plan.json" "$SCRATCH/s32/$name.sim.json" <<'PY' ||
import json, sys
plan, sim = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
close = lambda a, b: abs(a - b) <= 1e-12 * max(abs(a), abs(b), 1e-300)
ok = sim["feasible"] and plan["feasible"]
for k in ("iteration_time_s", "tokens_per_s", "mfu", "memory_per_gpu_gib"):
    ok = ok and close(plan[k], sim[k])
ok = ok and close(plan["training"]["cost_usd"], sim["training"]["cost_usd"])
if not ok:
    print("plan:", plan["iteration_time_s"], "sim:", sim["iteration_time_s"])
sys.exit(0 if ok else 1)
PY
        fail "stop 32 keys: $name differs"
done
check "stop 32 keys: simulate refuses the fp8 run at pp 8 the walk skipped"
if "$LLMPLAN" simulate "$SCRATCH/s32/refused.json" --json --profile roofline \
    >/dev/null 2>"$SCRATCH/s32/refused.err"; then
    fail "simulate ran the fp8 run at pp 8"
fi
grep -q "refused.json: key 'training.bf16_first_layers, bf16_last_layers'" "$SCRATCH/s32/refused.err" ||
    fail "refusal does not name the file and key: $(cat "$SCRATCH/s32/refused.err")"
echo "PASS"
