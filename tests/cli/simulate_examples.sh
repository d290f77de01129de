#!/usr/bin/env bash
# `llmplan simulate` on every data/examples/*.json: the summary, the --json
# object with the contract's keys, and a --trace that is valid Chrome trace
# JSON whose events cover every stage and end at the iteration time (an
# infeasible example: --trace exits 1 with the reason).
#   simulate_examples.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
pass=0 fail=0
for f in "$src"/data/examples/*.json; do
  name=$(basename "$f" .json)
  if ! "$bin" simulate "$f" >"$dir/$name.txt" 2>&1; then
    fail=$((fail+1)); echo "FAIL $name: summary"; cat "$dir/$name.txt"; continue
  fi
  if ! "$bin" simulate "$f" --json --trace "$dir/$name.trace.json" >"$dir/$name.json" 2>"$dir/$name.err"; then
    # an infeasible configuration has no timeline: exit 1 with its reason
    # (#18), no file; --json alone still prints the result
    if "$bin" simulate "$f" --json | grep -q '"feasible":[[:space:]]*false' &&
       grep -q "infeasible" "$dir/$name.err" && [ ! -e "$dir/$name.trace.json" ]; then
      pass=$((pass+1)); echo "ok   $name: infeasible, --trace refused: $(cat "$dir/$name.err")"
    else
      fail=$((fail+1)); echo "FAIL $name: --json --trace"; cat "$dir/$name.err"
    fi
    continue
  fi
  if python3 - "$dir/$name.json" "$dir/$name.trace.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for k in ("feasible", "reason", "iteration_time_s", "tokens_per_s", "model_tflops_per_gpu", "mfu",
          "memory_per_gpu_gib", "breakdown_s", "training"):
    assert k in r, f"missing key {k}"
for k in ("compute", "tp_comm", "pp_bubble", "pp_comm", "dp_comm_exposed", "optimizer"):
    assert k in r["breakdown_s"], f"missing breakdown {k}"
for k in ("time_days", "gpu_hours", "cost_usd"):
    assert k in r["training"], f"missing training {k}"
t = json.load(open(sys.argv[2]))["traceEvents"]
if r["feasible"]:
    x = [e for e in t if e["ph"] == "X"]
    assert x, "no events"
    end = max(e["ts"] + e["dur"] for e in x) / 1e6
    assert abs(end - r["iteration_time_s"]) <= 1e-6 * r["iteration_time_s"] + 1e-9, \
        f"trace ends at {end}, iteration {r['iteration_time_s']}"
    stages = {e["pid"] for e in x if e["cat"] in ("F", "B")}
    assert len(stages) >= 1
print(f"feasible={r['feasible']} iteration={r['iteration_time_s']:.4g}s events={len(t)}")
PY
  then pass=$((pass+1)); echo "ok   $name"
  else fail=$((fail+1)); echo "FAIL $name: output check"
  fi
done
# --sustained-frac: burst clocks (1) are faster than the fitted default; a
# value outside (0, 1] is a usage error (exit 2)
ex="$src/data/examples/gpt3-175b-dgx-a100.json"
a=$("$bin" simulate "$ex" --json --sustained-frac 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["iteration_time_s"])')
b=$("$bin" simulate "$ex" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["iteration_time_s"])')
if python3 -c "import sys; sys.exit(0 if 0 < $a < $b else 1)"; then
  pass=$((pass+1)); echo "ok   sustained-frac 1: $a s < default $b s"
else
  fail=$((fail+1)); echo "FAIL sustained-frac: burst $a s, default $b s"
fi
"$bin" simulate "$ex" --sustained-frac 1.5 >/dev/null 2>&1; rc=$?
if [ $rc -eq 2 ]; then pass=$((pass+1)); echo "ok   sustained-frac 1.5 refused"
else fail=$((fail+1)); echo "FAIL sustained-frac 1.5: exit $rc"; fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
