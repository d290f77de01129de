#!/usr/bin/env bash
# Spaces with nothing to simulate: (1) zero configurations ("gpus": []),
# (2) configurations that are all structurally invalid. Both exit 0 with
# null optima, empty lists and counters that say why.
source "$(dirname "$0")/lib.bash" "$@"

cat >"$SCRATCH/zero.json" <<'JSON'
{"model": "gpt3-13b", "system": "dgx-a100-80gb", "gpus": [],
 "training": {"global_batch": 64}, "profile": "roofline"}
JSON
# 12 GPUs: no power-of-two tp*pp above 4 divides... and 40 heads / tp 8 fine;
# force every config invalid: tp 3 does not divide 40 heads, pp 7 not 40 layers
cat >"$SCRATCH/skipped.json" <<'JSON'
{"model": "gpt3-13b", "system": "dgx-a100-80gb", "gpus": [21, 42],
 "training": {"global_batch": 64}, "profile": "roofline",
 "space": {"tp": [3], "pp": [7]}}
JSON

for n in 1 2; do
    for s in zero skipped; do
        check "$s space on $n rank(s): exit 0"
        mpi $n "$LLMPLAN" search "$SCRATCH/$s.json" -o "$SCRATCH/$s$n" --quiet ||
            fail "exit status $?"
        p="$SCRATCH/$s$n/plans.json"
        check "$s: null optima, empty lists, nothing evaluated"
        json_get "$p" 'd["time_optimal"] is None and d["cost_optimal"] is None and d["pareto"] == [] and d["top_time"] == [] and d["top_cost"] == [] and d["stats"]["evaluated"] == 0 and d["stats"]["feasible"] == 0 and d["stats"]["infeasible_by_reason"] == {}' |
            grep -q True || { cat "$p"; fail "unexpected plans.json"; }
        [ ! -e "$SCRATCH/$s$n/checkpoint.bin" ] || fail "checkpoint left behind"
        if command -v h5dump >/dev/null; then
            check "$s: sweep.h5 exists with 0 rows"
            h5dump -H -d /configs/index "$SCRATCH/$s$n/sweep.h5" | grep -q "SIMPLE { ( 0 )" ||
                fail "sweep.h5 is not empty"
        fi
    done
done
check "zero: space_size 0, skipped 0"
json_get "$SCRATCH/zero1/plans.json" 'd["stats"]["space_size"] == 0 and d["stats"]["skipped"] == 0' |
    grep -q True || fail "zero space counters"
check "skipped: every configuration skipped, with its reason"
json_get "$SCRATCH/skipped2/plans.json" 'd["stats"]["space_size"] == 2 and d["stats"]["skipped"] == 2 and d["stats"]["skipped_by_reason"] == {"tp_heads": 2}' |
    grep -q True || { cat "$SCRATCH/skipped2/plans.json"; fail "skipped space counters"; }
same_outputs "$SCRATCH/zero1" "$SCRATCH/zero2"
same_outputs "$SCRATCH/skipped1" "$SCRATCH/skipped2"
echo "PASS"
