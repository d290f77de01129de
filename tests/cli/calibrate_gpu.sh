#!/usr/bin/env bash
# A GPU's own sustained clock fraction (issue #16): `scripts/calibrate --gpu
# NAME` fits it on the calib half of the validation rows that run on that GPU
# only. The H100 SXM preset's sustained_frac must be that fit on this tree
# (within 0.02: the optimum is flat, docs/calibration.md); the fit must tell
# burst clocks (1.00) from it; a GPU without rows is an error naming it.
# When the simulator moves, rerun `scripts/calibrate --gpu h100-sxm` and set
# data/gpus/h100-sxm.json's sustained_frac to its best (a derived value).
#   calibrate_gpu.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$dir" && mkdir -p "$dir"
build=$(dirname "$(dirname "$bin")")

out=$(python3 "$src/scripts/calibrate" --build "$build" --gpu h100-sxm \
    --sustained-frac 0.79 0.81 0.83 0.85 0.87 1.00) || fail "calibrate --gpu h100-sxm: $out"
echo "$out"
best=$(echo "$out" | sed -n 's/^best: h100-sxm sustained_frac \([0-9.]*\) .*/\1/p')
[ -n "$best" ] || fail "no 'best:' line"
preset=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['sustained_frac'])" \
    "$src/data/gpus/h100-sxm.json") || fail "h100-sxm.json has no sustained_frac"
python3 - "$best" "$preset" <<'PY' || exit 1
import sys
best, preset = map(float, sys.argv[1:])
assert abs(best - preset) <= 0.02 + 1e-9, \
    f"FAIL: data/gpus/h100-sxm.json sustained_frac {preset} is not the fit {best}: rerun scripts/calibrate --gpu h100-sxm"
assert best < 1.0, "FAIL: the fit cannot tell burst clocks from sustained ones"
print(f"ok   h100-sxm sustained_frac {preset} = fit {best} (+-0.02)")
PY

# each stack on the GPU (source and precision) gets its own best beside the
# joint fit: the H100 SXM's rows are Megatron-Bridge bf16 and fp8
for k in "megatron-bridge bf16" "megatron-bridge fp8"; do
    echo "$out" | grep -Eq "^stack: h100-sxm $k \([0-9]+ rows, both halves\) best [0-9.]+ \(MAPE [0-9.]+%\)$" ||
        fail "no 'stack:' line for $k"
done
echo "ok   per-stack fits printed"

# a GPU no validation row runs on
if err=$(python3 "$src/scripts/calibrate" --build "$build" --gpu l40s --sustained-frac 0.9 2>&1); then
    fail "calibrate --gpu l40s (no rows) succeeded: $err"
fi
echo "$err" | grep -q "l40s" || fail "error does not name the GPU: $err"
echo "ok   --gpu l40s refused: $err"
