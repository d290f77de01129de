#!/usr/bin/env bash
# The main job on the shipped default data: install what is missing, build,
# sweep GPT-3 175B on 512-4096 A100-80GB GPUs (300B tokens) with 2 MPI ranks
# on the shipped kernel profiles, and print the time- and cost-optimal plans.
#   scripts/demo.sh [OUTPUT_DIR]     (default out/demo)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${1:-$root/out/demo}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

scripts/setup.sh "$root/build"
mkdir -p "$out"
echo "== mpirun -np 2 llmplan search data/sweeps/demo.json -o $out"
mpirun -np 2 build/search/llmplan search data/sweeps/demo.json -o "$out"

python3 - "$out/plans.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
def show(title, e):
    if not e:
        print(f"\n{title}: none feasible")
        return
    par = e["parallel"]
    print(f"\n{title}: {e['gpus']} GPUs  tp {par['tp']} pp {par['pp']} dp {par['dp']} "
          f"vp {par['vp']} micro-batch {par['micro_batch']} sp {par['sequence_parallel']} "
          f"recompute {par['recompute']} zero {par['zero']} {par['schedule']}")
    t = e["training"]
    print(f"  iteration {e['iteration_time_s']:.3f} s, MFU {100*e['mfu']:.1f}%, "
          f"{e['memory_per_gpu_gib']:.1f} GiB/GPU, {t['time_days']:.1f} days, "
          f"${t['cost_usd']:,.0f} for the run")
show("time-optimal plan", p.get("time_optimal"))
show("cost-optimal plan", p.get("cost_optimal"))
s = p["stats"]
print(f"\n{s['evaluated']} configurations evaluated ({s['feasible']} feasible, "
      f"{s['skipped']} skipped) in {s['wall_s']:.2f} s, {s['simulated_per_s']:.0f} simulated/s "
      f"({s['ranks']} ranks)")
PY
build/search/llmplan report "$out"
echo
echo "results: $out/plans.json (plans, Pareto front, top-k), $out/sweep.h5 (every configuration),"
echo "         $out/report.html (figures; PNGs: scripts/report_png.sh $out)"
echo "inspect: h5dump -H $out/sweep.h5 ; build/search/llmplan simulate data/examples/gpt3-175b-dgx-a100.json"
