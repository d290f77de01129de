#!/usr/bin/env bash
# Issue #20: --prune (with --no-dataset) skips the schedule solve of the
# configurations whose bounds (lp_sim_bound) prove they can enter no ranking
# or break a constraint. The plans must not change: plans.json with and
# without it, on 1 and 3 ranks (small chunks: each rank's own top-k bounds
# only its own walk), and after an interruption and a resume, is identical
# but for the counters that pruning changes (what was simulated) and the
# timing. Its counters add up (space_size = evaluated + skipped + pruned),
# out-of-memory configurations are still counted exactly (memory comes
# before any bound), and something is pruned (or the test proves nothing).
# The held bounds are decided best first in batches (--prune-batch; 3 here
# fills them again and again, and 2 across the interruption). Four sweeps:
# time and cost only; constraints (deadline, MFU floor);
# best_by groups with the tokens-per-dollar and loss objectives; top_k 1 on
# MoE, hybrid and MTP models with cp and ep.
source "$(dirname "$0")/lib.bash" "$@"

sweep() { # sweep FILE EXTRA-JSON
    cat >"$1" <<JSON
{"models": ["gpt3-1.3b", "gpt3-6.7b", "llama2-13b"], "system": "dgx-a100-80gb",
 "gpus": [8, 32, 128], "training": {"global_batch": 512, "tokens": 2e10},
 "profile": "roofline", $2
 "space": {"tp": "auto", "pp": "auto", "vp": [1, 2], "micro_batch": [1, 2, 4],
           "recompute": "auto", "zero": [0, 1, 3], "schedule": "auto"}}
JSON
}
sweep "$SCRATCH/plain.json" ''
sweep "$SCRATCH/cons.json" '"constraints": {"max_days": 30, "min_mfu": 0.3},'
sweep "$SCRATCH/groups.json" '"best_by": ["model", "gpus"], "objectives": ["tokens_per_usd", "loss"],'
# top_k 1 on MoE, hybrid (Mamba) and MTP models with cp and ep
cat >"$SCRATCH/top1.json" <<'JSON'
{"models": ["mixtral-8x7b", "jamba-1.5-mini", "deepseek-v3"], "system": "dgx-h100",
 "gpus": [64, 256], "training": {"global_batch": 512, "tokens": 1e11},
 "profile": "roofline", "top_k": 1,
 "space": {"tp": "auto", "pp": "auto", "cp": [1, 2], "ep": [1, 8], "vp": [1, 2],
           "micro_batch": [1, 2], "recompute": "auto", "zero": [0, 1], "schedule": "auto"}}
JSON

# plans.json without timing and without the counters pruning changes
strip_counts() {
    python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("wall_s", "configs_per_s", "simulated_per_s", "ranks", "evaluated", "feasible",
          "infeasible", "infeasible_by_reason", "excluded", "excluded_by_constraint",
          "pruned", "pruned_by_reason"):
    d["stats"].pop(k, None)
print(json.dumps(d, indent=1))
PY
}
same_plans() { # same_plans DIR_A DIR_B
    strip_counts "$1/plans.json" >"$SCRATCH/a.json" || fail "cannot read $1/plans.json"
    strip_counts "$2/plans.json" >"$SCRATCH/b.json" || fail "cannot read $2/plans.json"
    cmp -s "$SCRATCH/a.json" "$SCRATCH/b.json" ||
        { diff "$SCRATCH/a.json" "$SCRATCH/b.json" | head -20; fail "plans differ: $1 $2"; }
}
# counters of a pruned run against the unpruned reference
counts_add_up() { # counts_add_up REF_DIR PRUNED_DIR
    python3 - "$1/plans.json" "$2/plans.json" <<'PY' || fail "counters of $2"
import json, sys
r = json.load(open(sys.argv[1]))["stats"]
p = json.load(open(sys.argv[2]))["stats"]
assert "pruned" not in r, "pruned written without --prune"
assert p["space_size"] == p["evaluated"] + p["skipped"] + p["pruned"], p
assert p["pruned"] == sum(p["pruned_by_reason"].values()), p
assert p["skipped"] == r["skipped"], (p["skipped"], r["skipped"])
assert p["evaluated"] + p["pruned"] == r["evaluated"], (p, r)
oom = lambda s: s["infeasible_by_reason"].get("out_of_memory", 0)
assert oom(p) == oom(r), (oom(p), oom(r))
assert p["pruned"] > 0, "nothing pruned"
print("  pruned %d of %d evaluated (%s)" % (p["pruned"], r["evaluated"], p["pruned_by_reason"]))
PY
}

for s in plain cons groups top1; do
    check "$s: --prune on 1 and 3 ranks gives the plans of the full run"
    "$LLMPLAN" search "$SCRATCH/$s.json" -o "$SCRATCH/$s-ref" --quiet --no-dataset ||
        fail "$s reference exited $?"
    "$LLMPLAN" search "$SCRATCH/$s.json" -o "$SCRATCH/$s-p1" --quiet --no-dataset --prune ||
        fail "$s pruned exited $?"
    counts_add_up "$SCRATCH/$s-ref" "$SCRATCH/$s-p1"
    same_plans "$SCRATCH/$s-ref" "$SCRATCH/$s-p1"
    mpi 3 "$LLMPLAN" search "$SCRATCH/$s.json" -o "$SCRATCH/$s-p3" --quiet --no-dataset --prune \
        --chunk 64 --segment 4096 || fail "$s pruned on 3 ranks exited $?"
    counts_add_up "$SCRATCH/$s-ref" "$SCRATCH/$s-p3"
    same_plans "$SCRATCH/$s-ref" "$SCRATCH/$s-p3"
    # a batch of 3 held bounds: full again and again, decided mid-range
    mpi 3 "$LLMPLAN" search "$SCRATCH/$s.json" -o "$SCRATCH/$s-b3" --quiet --no-dataset --prune \
        --prune-batch 3 --chunk 64 --segment 4096 || fail "$s with --prune-batch 3 exited $?"
    counts_add_up "$SCRATCH/$s-ref" "$SCRATCH/$s-b3"
    same_plans "$SCRATCH/$s-ref" "$SCRATCH/$s-b3"
done
python3 - "$SCRATCH/cons-p1/plans.json" <<'PY' || fail "no configuration pruned by a constraint"
import json, sys
assert json.load(open(sys.argv[1]))["stats"]["pruned_by_reason"]["constraint"] > 0
PY

check "interrupted on 2 ranks and resumed on 1: the same plans"
mpi 2 "$LLMPLAN" search "$SCRATCH/cons.json" -o "$SCRATCH/res" --quiet --no-dataset --prune \
    --prune-batch 2 --segment 4096 --checkpoint 1e-9 --stop-after 20000 2>/dev/null
rc=$?
[ $rc -eq 3 ] || fail "expected exit status 3, got $rc"
out=$("$LLMPLAN" search "$SCRATCH/cons.json" -o "$SCRATCH/res" --quiet --no-dataset --resume \
    --segment 4096 2>&1) && fail "resume without --prune accepted"
echo "$out" | grep -q "written with --prune" || fail "message: $out"
"$LLMPLAN" search "$SCRATCH/cons.json" -o "$SCRATCH/res" --quiet --no-dataset --prune --resume \
    --segment 4096 || fail "resume exited $?"
counts_add_up "$SCRATCH/cons-ref" "$SCRATCH/res"
same_plans "$SCRATCH/cons-ref" "$SCRATCH/res"

check "--prune with the dataset is a usage error"
"$LLMPLAN" search "$SCRATCH/plain.json" -o "$SCRATCH/usage" --quiet --prune 2>"$SCRATCH/usage.err"
rc=$?
[ $rc -eq 2 ] || fail "expected exit status 2, got $rc"
grep -q -- "--prune needs --no-dataset" "$SCRATCH/usage.err" || fail "$(cat "$SCRATCH/usage.err")"
for bad in 0 -1 x 1048577; do
    "$LLMPLAN" search "$SCRATCH/plain.json" -o "$SCRATCH/usage" --quiet --no-dataset --prune \
        --prune-batch $bad 2>"$SCRATCH/usage.err"
    rc=$?
    [ $rc -eq 2 ] || fail "--prune-batch $bad: expected exit status 2, got $rc"
    grep -q -- "--prune-batch" "$SCRATCH/usage.err" || fail "$(cat "$SCRATCH/usage.err")"
done
echo "PASS"
