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

# a GPU without its own fraction runs at the calibration's, fitted on other
# GPUs' rows: `llmplan simulate` says so (JSON sustained_frac_source and the
# summary's "sustained" line) instead of applying it silently; the H100 SXM's
# own and a --sustained-frac override are named as such
export LLMPLAN_DATA=${LLMPLAN_DATA:-$src/data}
for case in "dgx-b200|calibration|" "dgx-h100|gpu|" "dgx-b200|override|--sustained-frac 0.8"; do
    IFS='|' read -r sys want opt <<<"$case"
    cat >"$dir/$sys.json" <<JSON
{"model": "llama3-8b", "system": "$sys", "gpus": 8,
 "parallel": {"tp": 1, "pp": 1, "micro_batch": 1}, "training": {"global_batch": 64}}
JSON
    # shellcheck disable=SC2086
    "$bin" simulate "$dir/$sys.json" --json $opt >"$dir/$sys.out" || fail "simulate $sys $opt"
    python3 - "$dir/$sys.out" "$want" "$src/data" "$sys" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
want, data, system = sys.argv[2], sys.argv[3], sys.argv[4]
assert d["sustained_frac_source"] == want, f"FAIL: {system}: source {d['sustained_frac_source']!r}, want {want!r}"
gpu = json.load(open(f"{data}/systems/{system}.json"))["gpu"]
own = json.load(open(f"{data}/gpus/{gpu}.json")).get("sustained_frac")
cal = json.load(open(f"{data}/calibration.json"))["sustained_frac"]
exp = {"gpu": own, "calibration": cal, "override": 0.8}[want]
assert exp is not None and abs(d["sustained_frac"] - exp) < 1e-12, \
    f"FAIL: {system}: sustained_frac {d['sustained_frac']}, want {exp}"
print(f"ok   {system} ({gpu}): sustained_frac {d['sustained_frac']} from {want}")
PY
done
out=$("$bin" simulate "$dir/dgx-b200.json") || fail "simulate dgx-b200 (text)"
echo "$out" | grep -q "^sustained  0\.[0-9]* of the profile's GEMM/attention rate (the calibration's, fitted on other GPUs' rows" ||
    fail "the summary does not name the calibration's fraction: $out"
echo "ok   the summary names the calibration's fraction"

# search's plans say the same of every plan (the result JSON carries it): the
# B200's borrowed fraction, and --sustained-frac as an override
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# `llmplan search` initialises MPI: under the sanitizer build, ignore Open
# MPI's own leaks as tests/mpi/lib.bash does
export LSAN_OPTIONS="suppressions=$src/tests/mpi/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
cat >"$dir/sweep.json" <<'JSON'
{"model": "llama3-8b", "system": "dgx-b200", "gpus": 8,
 "training": {"global_batch": 64, "precision": "bf16"},
 "space": {"tp": [1, 2], "pp": [1], "micro_batch": [1]}, "top_k": 2}
JSON
for case in "calibration|" "override|--sustained-frac 0.8"; do
    IFS='|' read -r want opt <<<"$case"
    rm -rf "$dir/s"
    # shellcheck disable=SC2086
    "$bin" search "$dir/sweep.json" -o "$dir/s" --no-dataset $opt >"$dir/s.log" 2>&1 ||
        fail "search $opt: $(tail -3 "$dir/s.log")"
    python3 - "$dir/s/plans.json" "$want" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
plans = d["top_time"]
assert plans, "FAIL: no plans"
for p in plans:
    assert p["sustained_frac_source"] == sys.argv[2], f"FAIL: plan source {p['sustained_frac_source']!r}"
    assert p["sustained_frac"] > 0
print(f"ok   plans.json: {len(plans)} plans, sustained_frac {plans[0]['sustained_frac']} from {sys.argv[2]}")
PY
done
