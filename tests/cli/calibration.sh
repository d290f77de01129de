#!/usr/bin/env bash
# The fitted constants come from data/calibration.json (issue #19): the
# shipped file and no file at all give the same numbers (the built-in values
# are the file's); each constant of a changed file moves the prediction the
# way its meaning says (more host time per kernel: slower; no sustained-clock
# throttle: faster; a slower flash1 kernel: slower), simulate and search
# agree under it, a run's output still names its framework plainly, and a
# malformed file is an error naming the file and the key.
#   calibration.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
. "$src/tests/cli/lib.bash" calibration.json

# a host-bound Megatron-DeepSpeed run (vTrain's kind: one node, small model)
cat >"$dir/run.json" <<'JSON'
{"model": "gpt3-1.3b", "system": "dgx-a100-80gb", "framework": "megatron-deepspeed",
 "parallel": {"tp": 2, "pp": 1, "dp": 4, "micro_batch": 2},
 "training": {"global_batch": 64, "precision": "fp16", "attention": "flash1"}}
JSON
sim() { "$bin" simulate "$dir/run.json" --json "$@"; }
time_of() { python3 -c 'import json,sys; print(json.load(sys.stdin)["iteration_time_s"])'; }
calib() { # sustained host_overlap host_op_us(megatron-deepspeed) attn_old_ratio
    cat >"$dir/data/calibration.json" <<JSON
{"format": 1, "provenance": {"command": "tests/cli/calibration.sh"},
 "sustained_frac": $1, "host_overlap": $2, "host_op_us": {"megatron-deepspeed": $3},
 "attn_old_ratio": $4}
JSON
}

# no file: the built-in values; the shipped file: the same output, byte for byte
sim >"$dir/none.json" || fail "simulate without calibration.json exited $?"
sim --profile roofline >"$dir/none_rl.json" || fail "simulate --profile roofline exited $?"
cp "$src/data/calibration.json" "$dir/data/calibration.json"
sim >"$dir/shipped.json" || fail "simulate with the shipped file exited $?"
sim --profile roofline >"$dir/shipped_rl.json" || fail "roofline with the shipped file exited $?"
cmp -s "$dir/none.json" "$dir/shipped.json" || fail "the shipped file and the built-in values differ"
cmp -s "$dir/none_rl.json" "$dir/shipped_rl.json" || fail "the same with the roofline backend"
echo "ok   shipped file = built-in values"
t0=$(time_of <"$dir/shipped.json")
r0=$(time_of <"$dir/shipped_rl.json")

calib 0.87 1.25 82 0.52 # the shipped values, written by hand
[ "$(sim | time_of)" = "$t0" ] || fail "the same values written again give another time"
calib 0.87 1.25 300 0.52
t_host=$(sim | time_of)
calib 1.0 1.25 82 0.52
t_sus=$(sim | time_of)
calib 0.87 1.25 82 0.26
r_attn=$(sim --profile roofline | time_of)
python3 - "$t0" "$t_host" "$t_sus" "$r0" "$r_attn" <<'PY' || fail "a constant did not act as it should"
import sys
t0, host, sus, r0, attn = map(float, sys.argv[1:])
assert host > t0 * 1.05, ("host_op_us 82 -> 300 us must slow a host-bound run", t0, host)
assert sus < t0, ("sustained_frac 0.87 -> 1 must speed it up", t0, sus)
assert attn > r0, ("attn_old_ratio 0.52 -> 0.26 must slow flash1 (roofline)", r0, attn)
print("ok   host_op_us %.4f -> %.4f s, sustained_frac -> %.4f s, attn_old_ratio %.4f -> %.4f s"
      % (t0, host, sus, r0, attn))
PY

# the file's defaults are the run's defaults: the framework prints as its name
calib 0.87 1.25 300 0.52
sim >"$dir/host.json"
python3 - "$dir/host.json" <<'PY' || fail "simulate --json's framework is not the plain name"
import json, sys
fw = json.load(open(sys.argv[1])).get("framework")
assert fw in (None, "megatron-deepspeed"), fw
PY

# search under the same file agrees with simulate (a one-configuration sweep)
cat >"$dir/sweep.json" <<'JSON'
{"model": "gpt3-1.3b", "system": "dgx-a100-80gb", "framework": "megatron-deepspeed",
 "gpus": [8], "training": {"global_batch": 64, "precision": "fp16", "attention": "flash1"},
 "space": {"tp": [2], "pp": [1], "micro_batch": [2], "sequence_parallel": [false],
           "recompute": ["none"], "zero": [0], "schedule": ["1f1b"]}}
JSON
"$bin" search "$dir/sweep.json" -o "$dir/out" --quiet --no-dataset >"$dir/search.txt" 2>&1 ||
    { cat "$dir/search.txt"; fail "search exited $?"; }
python3 - "$dir/out/plans.json" "$(time_of <"$dir/host.json")" <<'PY' || fail "search and simulate disagree"
import json, sys
p = json.load(open(sys.argv[1]))["time_optimal"]
assert abs(p["iteration_time_s"] - float(sys.argv[2])) <= 1e-9 * float(sys.argv[2]), (
    p["iteration_time_s"], sys.argv[2])
print("ok   search = simulate under a changed file: %.6f s" % p["iteration_time_s"])
PY

# malformed files: exit 1, the file and the key named
bad() { # key, body
    printf '%s\n' "$2" >"$dir/data/calibration.json"
    "$bin" simulate "$dir/run.json" --json >/dev/null 2>"$dir/err.txt" && fail "$1: accepted"
    grep -q "$dir/data/calibration.json" "$dir/err.txt" || fail "$1: file not named: $(cat "$dir/err.txt")"
    grep -q "'$1'" "$dir/err.txt" || fail "$1: key not named: $(cat "$dir/err.txt")"
}
bad host_overlap '{"format": 1, "sustained_frac": 0.87, "host_overlap": 0.5, "host_op_us": {}, "attn_old_ratio": 0.52}'
bad sustained_frac '{"format": 1, "sustained_frac": "high", "host_overlap": 1.25, "host_op_us": {}, "attn_old_ratio": 0.52}'
bad host_op_us.jax '{"format": 1, "sustained_frac": 0.87, "host_overlap": 1.25, "host_op_us": {"jax": 1}, "attn_old_ratio": 0.52}'
bad attn_old_ratio '{"format": 1, "sustained_frac": 0.87, "host_overlap": 1.25, "host_op_us": {}}'
echo "ok   malformed files refused, naming the file and the key"
