#!/usr/bin/env bash
# Model shape as a sweep dimension: a generator of 600 shapes (more than the
# 64 values any other dimension may list) sweeps under 1 and 2 ranks with the
# same plans; the best plans are generated shapes; sweep.h5 names every shape
# and gives its parameter count (model_params), which for the shape equal to
# a preset is the preset's.
source "$(dirname "$0")/lib.bash" "$@"

# layers 2..60 step 2 (30) x hidden 256..5120 step 256 (20) = 600 shapes;
# one of them, L24-h2048, is gpt3-1.3b's shape
cat >"$SCRATCH/gen.json" <<'JSON'
{"models": ["gpt3-1.3b",
            {"generator": {"base": "gpt3-1.3b", "layers": {"min": 2, "max": 60, "step": 2},
                           "hidden": {"min": 256, "max": 5120, "step": 256}, "head_dim": 128}}],
 "system": "dgx-a100-80gb", "gpus": [8], "profile": "roofline",
 "training": {"global_batch": 64, "tokens": 1e9},
 "space": {"tp": [1, 2], "micro_batch": [1, 2]}}
JSON
for n in 1 2; do
    check "$n rank(s): the sweep runs"
    mpi $n "$LLMPLAN" search "$SCRATCH/gen.json" -o "$SCRATCH/r$n" --quiet || fail "exit status $?"
done
check "the same plans under 1 and 2 ranks"
diff <(strip_plans "$SCRATCH/r1/plans.json") <(strip_plans "$SCRATCH/r2/plans.json") >/dev/null ||
    fail "plans differ between rank counts"
check "601 models: the fastest plan is a generated shape"
json_get "$SCRATCH/r1/plans.json" 'd["time_optimal"]["model"].startswith("L")' | grep -q True ||
    fail "time-optimal model is not a generated shape"
if command -v h5dump >/dev/null; then
    check "sweep.h5: model_names and model_params for all 601 models"
    h5dump -A -a model_params "$SCRATCH/r1/sweep.h5" | grep -q "( 601 )" ||
        fail "model_params is not 601 values"
    h5dump -A -a model_names "$SCRATCH/r1/sweep.h5" | grep -q "( 601 )" ||
        fail "model_names is not 601 names"
    python3 - "$SCRATCH/r1/sweep.h5" <<'PY' || fail "gpt3-1.3b and L24-h2048 differ in parameters"
import re, subprocess, sys
f = sys.argv[1]
def values(attr):
    out = subprocess.run(["h5dump", "-A", "-a", attr, f], capture_output=True, text=True).stdout
    body = out.split("DATA {", 1)[1]
    return re.findall(r'"([^"]*)"', body) if attr == "model_names" else \
        [float(x) for x in re.findall(r"[-+0-9.e]+(?=[,\s])", re.sub(r"\(\d+\):", "", body))]
names, params = values("model_names"), values("model_params")
i = names.index("L24-h2048")
print("gpt3-1.3b", params[0], "L24-h2048", params[i])
sys.exit(0 if abs(params[0] - params[i]) <= 1e-9 * params[0] else 1)
PY
fi
echo "PASS"
