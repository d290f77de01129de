#!/usr/bin/env bash
# --trace in the Chrome trace-event format at each detail level: every event
# has ph, ts, dur, pid, tid of the right types and sane values; complete
# events nest properly per thread (a child inside its parent, siblings do
# not overlap); processes and threads are named ("M" metadata); every stage
# has a DP synchronisation and an optimizer step; the memory counter peaks
# at the result's memory; the operator events of a pass sum to the pass and
# are the result's own per-layer breakdown (layer_ops_s); an infeasible
# configuration exits 1 with its reason and writes no trace; a plan object
# copied from plans.json simulates to the plan's figures; search --trace-top
# writes the timelines of the fastest plans.
#   trace_format.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
export LLMPLAN_DATA="$src/data"
# `search` initialises MPI: under a sanitizer build, ignore Open MPI's own leaks
export LSAN_OPTIONS="suppressions=$src/tests/mpi/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
fail() { echo "FAIL: $*" >&2; exit 1; }

# GPT-3 175B, TP 8 PP 4 (interleaved, vp 2), ZeRO-3 off; 16 micro-batches
cat >"$dir/run.json" <<'JSON'
{"model": "gpt3-175b", "system": "dgx-a100-80gb",
 "parallel": {"tp": 8, "pp": 4, "dp": 4, "vp": 2, "micro_batch": 1, "sequence_parallel": true,
              "recompute": "selective", "zero": 1, "schedule": "interleaved"},
 "training": {"global_batch": 64, "precision": "bf16", "tokens": 1e10}}
JSON
for d in stage microbatch op; do
    "$bin" simulate "$dir/run.json" --profile roofline --json --trace "$dir/$d.json" \
        --trace-detail "$d" >"$dir/$d.result.json" || fail "simulate --trace-detail $d: exit $?"
done
"$bin" simulate "$dir/run.json" --trace-detail frames --trace "$dir/x.json" 2>/dev/null
[ $? = 2 ] || fail "--trace-detail frames accepted"

python3 - "$dir" <<'PY' || exit 1
import json, sys
from collections import defaultdict
d = sys.argv[1]
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: sys.exit(1)
def validate(path, res):
    t = json.load(open(path))
    ev = t["traceEvents"]
    check(isinstance(ev, list) and ev, f"{path}: traceEvents")
    names = {(e["pid"], e.get("tid"), e["name"]) for e in ev if e.get("ph") == "M"}
    xs = [e for e in ev if e.get("ph") == "X"]
    cs = [e for e in ev if e.get("ph") == "C"]
    check(all(e.get("ph") in ("X", "C", "M") for e in ev), "phases X, C, M only")
    for e in xs:
        ok = (isinstance(e.get("name"), str) and all(isinstance(e.get(k), (int, float)) for k in ("ts", "dur"))
              and isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int)
              and e["ts"] >= 0 and e["dur"] >= 0 and e["ts"] + e["dur"] <= res["iteration_time_s"] * 1e6 * (1 + 1e-9) + 1e-3)
        if not ok: check(False, f"sane X event {e}")
    check(True, f"{len(xs)} X events: name, ts, dur, pid, tid present, within the iteration")
    pids = sorted({e["pid"] for e in xs})
    for p in pids:
        check((p, 0, "process_name") in names and (p, 0, "thread_name") in names and (p, 1, "thread_name") in names,
              f"stage {p}: process and threads named") if p == pids[0] else None
        if not ((p, 0, "process_name") in names and (p, 1, "thread_name") in names):
            check(False, f"stage {p} named")
    # nesting per thread: sorted by (ts, -dur), a stack of open spans
    byth = defaultdict(list)
    for e in xs: byth[(e["pid"], e["tid"])].append(e)
    eps = 1e-3  # us: rounding of the printed times
    depth = 0
    for key, es in byth.items():
        es.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in es:
            while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"] - eps:
                stack.pop()
            if stack and e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"] + eps:
                check(False, f"thread {key}: {e['name']} at {e['ts']} overlaps {stack[-1]['name']} without nesting")
            stack.append(e)
            depth = max(depth, len(stack))
    check(True, f"events nest properly on every thread (depth {depth})")
    return t, xs, cs, pids, depth
res = json.load(open(f"{d}/microbatch.result.json"))
pp = 4
t, xs, cs, pids, depth = validate(f"{d}/microbatch.json", res)
check(pids == list(range(pp)), "one process per pipeline stage")
check(depth == 1, "micro-batch level: no nesting")
for p in pids:
    k = [e["name"] for e in xs if e["pid"] == p]
    check("dp-sync" in k and "optimizer" in k, f"stage {p}: DP synchronisation and optimizer") if p in (0, 1) else None
    if not ("dp-sync" in k and "optimizer" in k): check(False, f"stage {p}: dp-sync")
m = len([e for e in xs if e["pid"] == 0 and e["name"].startswith("F")])
check(m == res["microbatches"] * 2, f"stage 0: {m} forward passes = micro-batches x vp")
mem = res["memory_gib"]
peak = max(sum(e["args"].values()) for e in cs)
tot = sum(mem[k] for k in ("weights", "gradients", "optimizer", "temporary", "activations"))
check(abs(peak - tot) < 1e-3 * tot, f"memory counter peaks at the result's memory ({peak:.2f} GiB)")
# operator level: the same passes, each split into its layers' operator classes
res_op = json.load(open(f"{d}/op.result.json"))
t, xs, cs, pids, depth = validate(f"{d}/op.json", res_op)
check(depth == 2, "operator level: passes hold operator spans")
ops = [e for e in xs if e["cat"] == "op"]
classes = {e["name"] for e in ops}
check({"gemm", "attention", "memory_bound", "collective"} <= classes or {"gemm", "attention"} <= classes,
      f"operator classes {sorted(classes)}")
f0 = next(e for e in xs if e["pid"] == 1 and e["name"] == "F0.0")
kids = [e for e in ops if e["pid"] == 1 and f0["ts"] - 1e-3 <= e["ts"] < f0["ts"] + f0["dur"]]
check(abs(sum(e["dur"] for e in kids) - f0["dur"]) < 1e-2, "a forward pass's operator spans fill it")
layers = sorted({e["args"]["layer"] for e in kids if "layer" in e["args"]})
per_layer = defaultdict(float)
for e in kids:
    if "layer" in e["args"] and e["args"]["layer"] == layers[0]: per_layer[e["name"]] += e["dur"] / 1e6
lo = res_op["layer_ops_s"]["forward"]
check(all(abs(per_layer[k] - v) < 1e-9 + 1e-6 * v for k, v in lo.items() if v > 0),
      "one layer's spans are simulate --json's layer_ops_s.forward")
check(len(layers) == 96 // (pp * 2), f"stage 1, chunk 0: {len(layers)} layers")
# stage level
t, xs, cs, pids, depth = validate(f"{d}/stage.json", res)
check(sorted(e["pid"] for e in xs if e["name"] == "passes") == list(range(pp)), "stage level: one span per stage")
PY
[ $? = 0 ] || exit 1

# ZeRO-3: the gathers are their own operator spans, adding up to the
# breakdown's zero3_gather (not tp_comm)
cat >"$dir/z3.json" <<'JSON'
{"model": "gpt3-175b", "system": "dgx-a100-80gb",
 "parallel": {"tp": 8, "pp": 1, "dp": 16, "micro_batch": 1, "sequence_parallel": true,
              "recompute": "selective", "zero": 3},
 "training": {"global_batch": 64, "precision": "bf16", "tokens": 1e10}}
JSON
"$bin" simulate "$dir/z3.json" --profile roofline --json --trace "$dir/z3.trace.json" \
    --trace-detail op >"$dir/z3.result.json" || fail "ZeRO-3 trace: exit $?"
python3 - "$dir/z3.result.json" "$dir/z3.trace.json" <<'PY' || exit 1
import json, sys
r, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["traceEvents"]
g = sum(e["dur"] for e in t if e.get("ph") == "X" and e["name"].startswith("zero3 gather")) / 1e6
z = r["breakdown_s"]["zero3_gather"]
ok = z > 0 and abs(g - z) <= 1e-6 * z
print(("ok   " if ok else "FAIL ") + f"ZeRO-3: gather spans {g:.6f} s = breakdown zero3_gather {z:.6f} s")
sys.exit(0 if ok else 1)
PY

# infeasible: exit 1 with the reason, no trace file
cat >"$dir/oom.json" <<'JSON'
{"model": "gpt3-175b", "system": "dgx-a100-80gb", "parallel": {"tp": 1, "pp": 1, "dp": 16},
 "training": {"global_batch": 64, "precision": "bf16", "tokens": 1e10}}
JSON
"$bin" simulate "$dir/oom.json" --profile roofline --trace "$dir/oom.trace.json" 2>"$dir/err.txt" &&
    fail "an infeasible configuration wrote a trace"
grep -q "infeasible (out of memory" "$dir/err.txt" || fail "message: $(cat "$dir/err.txt")"
[ -e "$dir/oom.trace.json" ] && fail "a trace of an infeasible configuration was written"
echo "ok   infeasible: $(cat "$dir/err.txt")"

# search --trace-top 2, and a plan object from plans.json as simulate's input
cat >"$dir/sweep.json" <<'JSON'
{"model": "gpt3-175b", "system": "dgx-a100-80gb", "gpus": [128],
 "training": {"global_batch": 64, "precision": "bf16", "tokens": 1e10}, "profile": "roofline",
 "space": {"tp": [4, 8], "pp": [4, 8], "micro_batch": [1], "zero": [1], "recompute": ["selective"],
           "sequence_parallel": [true]}, "top_k": 3}
JSON
"$bin" search "$dir/sweep.json" -o "$dir/out" --quiet --trace-top 2 --trace-detail op || fail "search --trace-top: exit $?"
python3 - "$dir/out" "$bin" "$dir" <<'PY' || exit 1
import json, subprocess, sys
out, bin_, d = sys.argv[1:4]
p = json.load(open(f"{out}/plans.json"))
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: sys.exit(1)
for i in (1, 2):
    t = json.load(open(f"{out}/trace-top{i}.json"))
    check(abs(t["otherData"]["iteration_time_s"] - p["top_time"][i - 1]["iteration_time_s"]) < 1e-9
          and t["otherData"]["detail"] == "op", f"trace-top{i}.json is top_time[{i - 1}]'s timeline")
import os
check(not os.path.exists(f"{out}/trace-top3.json"), "only 2 timelines")
json.dump(p["time_optimal"], open(f"{d}/plan.json", "w"))
r = subprocess.run([bin_, "simulate", f"{d}/plan.json", "--profile", "roofline", "--json"], capture_output=True, text=True)
check(r.returncode == 0, "simulate accepts a plan object: " + r.stderr.strip())
s = json.loads(r.stdout)
check(s["iteration_time_s"] == p["time_optimal"]["iteration_time_s"] and s["breakdown_s"] == p["time_optimal"]["breakdown_s"],
      "and predicts the plan's figures")
PY
[ $? = 0 ] || exit 1
exit 0
