#!/usr/bin/env bash
# Integers that could wrap (issue #21): a global batch of more than 2^31
# micro-batches, tp*pp(*cp) beyond an int, huge numbers in a sweep. Each is
# refused with a message, never a negative "feasible" plan or a SIGFPE.
#   overflow.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
export LLMPLAN_DATA=${LLMPLAN_DATA:-$src/data}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# `search` initialises MPI: under a sanitizer build, ignore Open MPI's own leaks
export LSAN_OPTIONS="suppressions=$src/tests/mpi/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
rm -rf "$dir" && mkdir -p "$dir"
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# gpt3-175b, dgx-a100-80gb, tp 8, pp 32, dp 8, global batch 3e11: 3.75e10
# micro-batches wrapped an int into an iteration of -5.4e7 s, "feasible"
cat >"$dir/batch.json" <<'JSON'
{"model": "gpt3-175b", "system": "dgx-a100-80gb",
 "parallel": {"tp": 8, "pp": 32, "dp": 8, "micro_batch": 1, "sequence_parallel": true},
 "training": {"global_batch": 300000000000, "precision": "bf16", "tokens": 3e11}}
JSON
"$bin" simulate "$dir/batch.json" --json >"$dir/batch.out" 2>&1
rc=$?
if [ $rc -lt 128 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if not d["feasible"] and d["reason_code"] == "range" and d["iteration_time_s"] >= 0 else 1)
' "$dir/batch.out"; then
  ok "global batch 3e11: infeasible (range)"
else
  bad "global batch 3e11 (rc $rc): $(head -c 600 "$dir/batch.out")"
fi
out=$("$bin" simulate "$dir/batch.json" 2>&1)
[[ "$out" == *"micro-batches x vp 37500000000 exceed the supported maximum"* ]] &&
  ok "text output names the micro-batch count" || bad "text: $out"

# tp*pp = 2^32 with "gpus": SIGFPE in json_load.c; without: 65536 GPUs
for gpus in '"gpus": 65536,' ''; do
  cat >"$dir/tp.json" <<JSON
{"model": "gpt3-175b", "system": "dgx-a100-80gb", $gpus
 "parallel": {"tp": 65536, "pp": 65536},
 "training": {"global_batch": 1536, "precision": "bf16"}}
JSON
  out=$("$bin" simulate "$dir/tp.json" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -eq 1 ] && [[ "$out" == *"tp.json: key 'parallel': expected tp*pp*cp*dp <= 16777216 GPUs, got 4294967296"* ]]; then
    ok "tp*pp = 2^32 ${gpus:-(no gpus)}: refused"
  else
    bad "tp*pp = 2^32 ${gpus:-(no gpus)} (rc $rc): $out"
  fi
done

# a sweep whose tp*pp*cp is 2^32 (a model of 65536 layers, so that pp =
# 65536 passes the layer check): the int product wrapped to 0 and
# `gpus % (tp*pp*cp)` divided by zero in space.c (SIGFPE)
cat >"$dir/sweep.json" <<'JSON'
{"model": {"name": "deep", "layers": 65536, "hidden": 1024, "heads": 16, "vocab": 1024,
           "seq_len": 2048},
 "system": "dgx-a100-80gb", "gpus": 65536, "profile": "roofline",
 "training": {"global_batch": 65536, "precision": "bf16"},
 "space": {"tp": [1], "pp": [1, 65536], "cp": [1, 65536], "micro_batch": [1],
           "zero": [1], "recompute": ["selective"]}}
JSON
out=$("$bin" search "$dir/sweep.json" -o "$dir/out" --quiet 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ -s "$dir/out/plans.json" ]; then
  ok "sweep with tp*pp*cp beyond an int completes"
else
  bad "sweep (rc $rc): $out"
fi

# a sweep value beyond long long: the cast was undefined (float-cast-overflow)
cat >"$dir/huge.json" <<'JSON'
{"model": "gpt3-175b", "system": "dgx-a100-80gb", "gpus": [1e19],
 "training": {"global_batch": 1536}}
JSON
out=$("$bin" search "$dir/huge.json" -o "$dir/out2" 2>&1)
rc=$?
[ $rc -eq 1 ] && [[ "$out" == *"huge.json: key 'gpus': expected integers in [1, 16777216]"* ]] &&
  ok "sweep value 1e19 refused" || bad "sweep value 1e19 (rc $rc): $out"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
