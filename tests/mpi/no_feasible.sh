#!/usr/bin/env bash
# A space where every configuration runs out of memory (GPT-3 175B on 8 and
# 16 A100-80GB: 175e9 params x 16 B of weights, gradients and Adam states is
# 2.8 TB, > 16 x 80 GB even fully sharded): exit 0, optima null, every
# evaluated configuration counted under out_of_memory, rows in sweep.h5.
source "$(dirname "$0")/lib.bash" "$@"

cat >"$SCRATCH/sweep.json" <<'JSON'
{"model": "gpt3-175b", "system": "dgx-a100-80gb", "gpus": [8, 16],
 "training": {"global_batch": 64, "tokens": 1e9}, "profile": "roofline",
 "space": {"tp": [1, 2, 4, 8], "pp": [1, 2, 4, 8], "zero": "auto", "recompute": "auto"}}
JSON
for n in 1 3; do
    check "search on $n rank(s): exit 0"
    mpi $n "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/np$n" --quiet ||
        fail "exit status $?"
done
p="$SCRATCH/np1/plans.json"
check "optima null, lists empty"
json_get "$p" 'd["time_optimal"] is None and d["cost_optimal"] is None and d["pareto"] == [] and d["top_time"] == [] and d["top_cost"] == []' |
    grep -q True || fail "optima not null"
check "evaluated > 0, feasible 0, all out_of_memory"
json_get "$p" 'd["stats"]["evaluated"] > 0 and d["stats"]["feasible"] == 0 and d["stats"]["infeasible_by_reason"] == {"out_of_memory": d["stats"]["evaluated"]}' |
    grep -q True || { python3 -m json.tool "$p" | tail -30; fail "unexpected counters"; }
if command -v h5dump >/dev/null; then
    check "sweep.h5: one row per evaluated configuration, feasible 0, reason out_of_memory"
    ev=$(json_get "$p" 'd["stats"]["evaluated"]')
    [ "$(h5_values "$SCRATCH/np1/sweep.h5" /configs/feasible | sort -u)" = 0 ] || fail "feasible column"
    [ "$(h5_values "$SCRATCH/np1/sweep.h5" /configs/reason | sort -u)" = out_of_memory ] ||
        fail "reason column (an enumeration since format 2: h5dump prints the name)"
    [ "$(h5_values "$SCRATCH/np1/sweep.h5" /configs/reason | wc -l)" = "$ev" ] || fail "row count"
    h5dump -A "$SCRATCH/np1/sweep.h5" | grep -q '"out_of_memory"' || fail "reason_names attribute"
fi
same_outputs "$SCRATCH/np1" "$SCRATCH/np3"
echo "PASS"
