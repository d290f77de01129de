#!/usr/bin/env bash
# `llmplan simulate` on every preset issue #13 added (and llama3-405b), each
# on a layout that trains it: the Megatron-Bridge recipe's where one is
# validated (data/validation/megatron_bridge_h100_b200.csv), otherwise a
# layout chosen to fit. Each must be feasible with a finite iteration time,
# tokens/s and an MFU in (0, 1); the table it prints is docs/presets.md's
# "Every new preset simulated".
#   new_presets.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
export LLMPLAN_DATA="$src/data"
# preset system tp pp ep vp micro_batch global_batch gpus precision recompute
# (none | selective | full, or recompute modules joined by +); the
# framework is Megatron-Core with its defaults, not the recipes' settings
runs="
deepseek-v3          dgx-b200    1  16  8 1 1 2048  256 mxfp8 selective
deepseek-v3          gb200-nvl72 1   8 64 2 1 4096  512 mxfp8 selective
kimi-k2              gb200-nvl72 1  16 32 1 1 4096 1024 mxfp8 selective
qwen3-30b-a3b        dgx-b200    1   1  8 1 4  512    8 mxfp8 none
qwen3-235b-a22b      dgx-h100    2   8 32 4 1 8192  256 fp8   none
gpt-oss-20b          dgx-h100    1   1  8 1 1  256    8 bf16  selective
gpt-oss-120b         dgx-h100    1   4  8 1 1 1280   64 bf16  selective
nemotron-3-nano      dgx-h100    1   1  8 1 1 1024   16 fp8   moe+layernorm+core_attn+moe_act
nemotron-3-super     dgx-b200    1   1 64 1 1  512   64 mxfp8 moe_act+layernorm
nemotron-h-8b        dgx-h100    2   1  1 1 1  256    8 fp8   none
nemotron-h-56b       dgx-h100    8   2  1 1 1  256   64 fp8   selective
blackmamba-630m-2.8b dgx-h100    1   1  8 1 4  256    8 bf16  none
jamba-1.5-mini       dgx-h100    2   2  8 1 1  256   32 bf16  selective
llama3-405b          gb300-nvl72 4   8  1 8 1  512  512 nvfp4 selective
llama3-405b          dgx-b300    4   8  1 8 1  512  512 mxfp8 selective
"
python3 - "$dir" <<PY || exit 1
import json, sys
out = open(sys.argv[1] + "/runs.jsonl", "w")
for line in """$runs""".split("\n"):
    if not line.strip():
        continue
    m, sys_, tp, pp, ep, vp, mb, gb, n, prec, rc = line.split()
    tp, pp, ep, vp, mb, gb, n = map(int, (tp, pp, ep, vp, mb, gb, n))
    par = {"tp": tp, "pp": pp, "dp": n // (tp * pp), "cp": 1, "ep": ep, "vp": vp,
           "micro_batch": mb, "sequence_parallel": tp > 1, "recompute": rc, "zero": 1,
           "schedule": "interleaved" if vp > 1 else "1f1b"}
    if rc not in ("none", "selective", "full"):
        par["recompute"] = "selective"
        par["recompute_modules"] = rc.split("+")
    if ep > 1:
        par["etp"] = 1
    out.write(json.dumps({"model": m, "system": sys_, "parallel": par,
                          "training": {"global_batch": gb, "precision": prec}}) + "\n")
PY
if ! "$bin" simulate --batch "$dir/runs.jsonl" >"$dir/results.jsonl" 2>"$dir/err"; then
  echo "FAIL: simulate --batch"; cat "$dir/err"; exit 1
fi
python3 - "$dir/runs.jsonl" "$dir/results.jsonl" <<'PY'
import json, math, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
res = [json.loads(l) for l in open(sys.argv[2])]
if len(res) != len(runs):
    sys.exit("FAIL: %d runs, %d results" % (len(runs), len(res)))
print("%-21s %-12s %-26s %-6s %9s %11s %6s %8s"
      % ("preset", "system", "layout", "prec", "s/iter", "tok/s/GPU", "MFU", "GiB/GPU"))
fail = 0
for run, r in zip(runs, res):
    p = run["parallel"]
    n = p["tp"] * p["pp"] * p["dp"]
    ok = (r.get("feasible") and math.isfinite(r["iteration_time_s"]) and r["iteration_time_s"] > 0
          and r["tokens_per_s"] > 0 and 0 < r["mfu"] < 1)
    if not ok:
        fail += 1
        print("FAIL %s %s: %s" % (run["model"], run["system"], r.get("reason")))
        continue
    lay = "tp%d pp%d ep%d vp%d mb%d x%d" % (p["tp"], p["pp"], p["ep"], p["vp"], p["micro_batch"], n)
    print("%-21s %-12s %-26s %-6s %9.3f %11.0f %5.1f%% %8.1f"
          % (run["model"], run["system"], lay, run["training"]["precision"], r["iteration_time_s"],
             r["tokens_per_s"] / n, 100 * r["mfu"], r["memory_per_gpu_gib"]))
print("%d passed, %d failed" % (len(runs) - fail, fail))
sys.exit(1 if fail else 0)
PY
