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
# kernel order (sim_workload.c records it): per block its exposed host time,
# its kernels in issue order, its collectives after the row-parallel linear,
# the residual last; the backward reversed, each linear's weight gradient
# after its data gradient, the layers from the last
seq = [e["name"] for e in kids if e["args"].get("layer") == layers[0]]
blk = lambda *core: ["kernel_overhead", "memory_bound", *core, "collectives", "memory_bound"]
check(seq == blk("gemm", "attention", "gemm") + blk("gemm", "memory_bound", "gemm"),
      "forward layer in kernel order: " + " ".join(seq))
b0 = next(e for e in xs if e["pid"] == 1 and e["name"] == "B0.0")
bk = [e for e in ops if e["pid"] == 1 and b0["ts"] - 1e-3 <= e["ts"] < b0["ts"] + b0["dur"]]
check([e["args"]["layer"] for e in bk if "layer" in e["args"]][0] == layers[-1], "backward from the last layer")
bseq = [e["name"] + ("/w" if e["args"].get("weight_gradient") else "") for e in bk if e["args"].get("layer") == layers[0]]
rblk = lambda *core: ["kernel_overhead", "kernel_overhead/w", "memory_bound", "collectives", *core, "memory_bound"]
check(bseq == rblk("gemm", "gemm/w", "memory_bound", "gemm", "gemm/w") + rblk("gemm", "gemm/w", "attention", "gemm", "gemm/w"),
      "backward layer in reverse kernel order: " + " ".join(bseq))
bl = defaultdict(float)
for e in bk:
    if e["args"].get("layer") == layers[0]: bl[e["name"]] += e["dur"] / 1e6
lb = res_op["layer_ops_s"]["backward"]
check(all(abs(bl[k] - v) < 1e-9 + 1e-6 * v for k, v in lb.items() if v > 0),
      "one backward layer's spans are layer_ops_s.backward")
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

# ZeRO-3's collectives on the DP collectives thread: per micro-batch one
# all-gather per block forward, an all-gather and a reduce-scatter per block
# backward, the root's; without prefetch (param_gather_overlap off) every
# one is exposed, so together they are the breakdown's zero3_gather
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r["framework"]={"name":"megatron","param_gather_overlap":False}; json.dump(r,open(sys.argv[2],"w"))' \
    "$dir/z3.json" "$dir/z3b.json"
"$bin" simulate "$dir/z3b.json" --profile roofline --json --trace "$dir/z3b.trace.json" \
    >"$dir/z3b.result.json" || fail "ZeRO-3 trace without prefetch: exit $?"
python3 - "$dir/z3b.result.json" "$dir/z3b.trace.json" <<'PY' || exit 1
import json, re, sys
from collections import Counter
r, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["traceEvents"]
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: sys.exit(1)
c = sorted((e for e in t if e.get("ph") == "X" and e["tid"] == 3), key=lambda e: e["ts"])
check(all(a["ts"] + a["dur"] <= b["ts"] + 1e-3 for a, b in zip(c, c[1:])), f"ZeRO-3: {len(c)} collectives, one at a time")
n = Counter(re.sub(r" block \d+", " block", e["name"]) for e in c)
m = r["microbatches"]
check(n["all-gather block"] == 2 * 96 * m and n["reduce-scatter block"] == 96 * m,
      f"ZeRO-3: {n['all-gather block']} block all-gathers, {n['reduce-scatter block']} reduce-scatters")
g, z = sum(e["dur"] for e in c) / 1e6, r["breakdown_s"]["zero3_gather"]
check(z > 0 and abs(g - z) <= 1e-6 * z, f"ZeRO-3 without prefetch: collectives {g:.6f} s = breakdown zero3_gather {z:.6f} s")
PY
[ $? = 0 ] || exit 1

# zero-bubble (zb): the W passes hold their layers' weight-gradient GEMMs and
# those kernels' host time; a B pass's layer is the backward without them,
# so per layer B + W is simulate --json's layer_ops_s.backward
cat >"$dir/zb.json" <<'JSON'
{"model": "gpt3-175b", "system": "dgx-a100-80gb",
 "parallel": {"tp": 8, "pp": 4, "dp": 4, "micro_batch": 1, "sequence_parallel": true,
              "recompute": "selective", "zero": 1, "schedule": "zb"},
 "training": {"global_batch": 32, "precision": "bf16", "tokens": 1e10}}
JSON
"$bin" simulate "$dir/zb.json" --profile roofline --json --trace "$dir/zb.trace.json" \
    --trace-detail op >"$dir/zb.result.json" || fail "zb trace: exit $?"
python3 - "$dir/zb.result.json" "$dir/zb.trace.json" <<'PY' || exit 1
import json, sys
from collections import defaultdict
r, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["traceEvents"]
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: sys.exit(1)
xs = [e for e in t if e.get("ph") == "X"]
ops = [e for e in xs if e["cat"] == "op"]
def kids(p):
    return [e for e in ops if e["pid"] == p["pid"] and e["tid"] == p["tid"]
            and p["ts"] - 1e-3 <= e["ts"] and e["ts"] + e["dur"] <= p["ts"] + p["dur"] + 1e-3]
ws = [e for e in xs if e["cat"] == "W" and e["pid"] == 1]
bs = [e for e in xs if e["cat"] == "B" and e["pid"] == 1]
check(len(ws) == r["microbatches"] and len(bs) == len(ws), f"stage 1: {len(ws)} W passes beside {len(bs)} B passes")
w0, b0 = kids(ws[0]), kids(bs[0])
check(w0 and abs(sum(e["dur"] for e in w0) - ws[0]["dur"]) < 1e-2, f"a W pass's operator spans fill it ({len(w0)} spans)")
check(abs(sum(e["dur"] for e in b0) - bs[0]["dur"]) < 1e-2, "a B pass's operator spans fill it")
layer = min(e["args"]["layer"] for e in w0 if "layer" in e["args"])
per = defaultdict(float)
for e in w0 + b0:
    if e["args"].get("layer") == layer: per[e["name"]] += e["dur"] / 1e6
wn = {e["name"] for e in w0 if "layer" in e["args"]}
check(wn <= {"gemm", "kernel_overhead"} and "gemm" in wn, f"W spans: {sorted(wn)}")
lb = r["layer_ops_s"]["backward"]
check(all(abs(per[k] - v) < 1e-9 + 1e-6 * v for k, v in lb.items() if v > 0),
      "per layer, B + W spans are layer_ops_s.backward")
PY
[ $? = 0 ] || exit 1

# DP reduction as the simulator accounts it (sim_dp.c), on the data-parallel
# collectives thread (tid 3): Megatron's gradient buckets (ZeRO-1:
# reduce-scatter) partly overlapping the last backward pass; PyTorch DDP's
# buckets and FSDP's per-block all-gathers and reduce-scatters as the
# play-out issues them. On every stage the collectives' time after its last
# backward pass is its DP synchronisation; on the critical stage that is the
# breakdown's dp_comm_exposed. Events nest on every thread.
for fw in fsdp ddp; do
    z=3; [ $fw = ddp ] && z=0
    cat >"$dir/$fw.json" <<JSON
{"model": "llama-1b", "system": "dgx-a100-80gb", "framework": "$fw",
 "parallel": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 4, "zero": $z},
 "training": {"global_batch": 64, "precision": "bf16", "tokens": 1e10}}
JSON
    "$bin" simulate "$dir/$fw.json" --profile roofline --json --trace "$dir/$fw.trace.json" \
        >"$dir/$fw.result.json" || fail "$fw trace: exit $?"
done
python3 - "$dir" <<'PY' || exit 1
import json, re, sys
from collections import Counter, defaultdict
d = sys.argv[1]
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: sys.exit(1)
def nests(xs, what):
    byth = defaultdict(list)
    for e in xs: byth[(e["pid"], e["tid"])].append(e)
    for key, es in byth.items():
        es.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in es:
            while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"] - 1e-3: stack.pop()
            if stack and e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"] + 1e-3:
                check(False, f"{what}: thread {key}: {e['name']} overlaps {stack[-1]['name']}")
            stack.append(e)
    check(True, f"{what}: events nest on every thread")
def dp_figures(trace, result, what, layers=None):
    t = json.load(open(f"{d}/{trace}"))["traceEvents"]
    r = json.load(open(f"{d}/{result}"))
    xs = [e for e in t if e.get("ph") == "X"]
    nests(xs, what)
    bd = r["breakdown_s"]["dp_comm_exposed"] * 1e6
    crit = 0
    for p in sorted({e["pid"] for e in xs}):
        check(any(e["pid"] == p and e.get("tid") == 3 and e["name"] == "thread_name"
                  for e in t if e.get("ph") == "M"), f"{what}: stage {p}: collectives thread named") if p == 0 else None
        bend = max(e["ts"] + e["dur"] for e in xs
                   if e["pid"] == p and e["tid"] == 0 and e["cat"] in ("B", "W"))
        sync = [e for e in xs if e["pid"] == p and e["tid"] == 2]
        colls = [e for e in xs if e["pid"] == p and e["tid"] == 3]
        check(len(sync) == 1 and abs(sync[0]["ts"] - bend) < 1e-3, f"{what}: stage {p}: DP sync from its last backward")
        after = sum(e["ts"] + e["dur"] - max(e["ts"], bend) for e in colls
                    if e["ts"] + e["dur"] > bend and not e["name"].startswith("embedding"))
        emb = sum(e["dur"] for e in colls if e["name"].startswith("embedding"))
        if abs(sync[0]["dur"] - bd) < 1e-3 * bd: crit += 1
        exp = sync[0]["dur"] - (emb if abs(sync[0]["dur"] - bd) < 1e-3 * bd else 0)
        check(abs(after - exp) <= 1e-6 * bd + 1e-3,
              f"{what}: stage {p}: collectives after its backward {after:.1f} us = its DP sync {exp:.1f} us")
    check(crit >= 1, f"{what}: a stage's DP sync is the breakdown's dp_comm_exposed ({bd:.1f} us)")
    return xs, r
# Megatron, ZeRO-1, pp 4 x vp 2: equal reduce-scatter buckets, some behind the backward
xs, r = dp_figures("microbatch.json", "microbatch.result.json", "megatron zero-1")
for p in range(4):
    bk = [e for e in xs if e["pid"] == p and e["name"].startswith("reduce-scatter bucket")]
    n = int(bk[0]["name"].split("/")[1])
    bend = max(e["ts"] + e["dur"] for e in xs if e["pid"] == p and e["tid"] == 0 and e["cat"] == "B")
    ok = (len(bk) == n > 1 and max(e["dur"] for e in bk) - min(e["dur"] for e in bk) < 1e-3
          and bk[0]["ts"] < bend < bk[-1]["ts"] + bk[-1]["dur"])
    check(ok, f"stage {p}: {n} equal reduce-scatter buckets, overlapping the last backward") if p == 0 else None
    if not ok: check(False, f"stage {p}: buckets")
check(any(e["name"].startswith("param all-gather") for e in xs), "ZeRO-1 parameter all-gather drawn")
# FSDP: every micro-batch gathers each block twice (forward, backward) and reduce-scatters it once
xs, r = dp_figures("fsdp.trace.json", "fsdp.result.json", "fsdp full shard")
t = json.load(open(f"{d}/fsdp.trace.json"))["traceEvents"]
L = int(re.search(r"\((\d+) layers", next(e["args"]["name"] for e in t if e.get("name") == "process_name")).group(1))
m = r["microbatches"]
c = Counter(re.sub(r" block \d+", " block", e["name"]) for e in xs if e["tid"] == 3)
check(c["all-gather block"] == 2 * L * m and c["reduce-scatter block"] == L * m,
      f"fsdp: {c['all-gather block']} block all-gathers, {c['reduce-scatter block']} reduce-scatters ({m} micro-batches)")
# DDP: only the last micro-batch reduces, in buckets, then copies them back
xs, r = dp_figures("ddp.trace.json", "ddp.result.json", "ddp")
bk = [e for e in xs if e["name"].startswith("all-reduce bucket")]
check(len(bk) > 1 and {e["args"]["micro_batch"] for e in bk} == {r["microbatches"] - 1},
      f"ddp: {len(bk)} all-reduce buckets, all in the last micro-batch")
PY
[ $? = 0 ] || exit 1

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
