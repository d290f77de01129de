#!/usr/bin/env python3
"""Reproduce the case studies of docs/case-studies.md from sweep outputs.

usage: scripts/case_studies.py [--build DIR] [--out DIR] [--ranks N]

Runs `mpirun -np N llmplan search` on data/sweeps/mtnlg-530b.json and
data/sweeps/small-models-gpus.json (unless their outputs exist in --out) and
prints, from plans.json and sweep.h5:
  1. MT-NLG 530B (vTrain's case study): the fastest and the cheapest plan per
     GPU count, and what the cheapest plan saves over the fastest;
  2. small LLaMA-style models per GPU type (Ashkboos et al. 2024): the best
     tokens/s per GPU and tokens per dollar of each model on each instance;
  3. compute-optimal sizing (vTrain): the cheapest plan of each model trained
     to 20 tokens per parameter, and the largest model each budget affords;
  4. MoE fine-tuning on one GPU (Xia et al. 2024): the largest micro-batch
     that fits, throughput and dollars per million tokens per GPU type.
Needs h5py (Debian: python3-h5py) to read sweep.h5.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_sweep(llmplan, ranks, name, out):
    d = os.path.join(out, name)
    if not os.path.exists(os.path.join(d, "sweep.h5")):
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        subprocess.run(["mpirun", "--oversubscribe", "-np", str(ranks), llmplan, "search",
                        os.path.join(ROOT, "data", "sweeps", name + ".json"), "-o", d, "--quiet"],
                       check=True, env=env)
    return d


def columns(path, names):
    import h5py
    with h5py.File(path, "r") as f:
        g = f["configs"] if "configs" in f else f
        cols = {n: g[n][()] for n in names}
        attrs = {k: f.attrs[k] for k in ("model_names", "system_names") if k in f.attrs}
    return cols, attrs


def names(attr):
    if isinstance(attr, (bytes, str)):
        s = attr.decode() if isinstance(attr, bytes) else attr
        return json.loads(s) if s.startswith("[") else s.split(",")
    return [x.decode() if isinstance(x, bytes) else str(x) for x in attr]


def mtnlg(d):
    cols, _ = columns(os.path.join(d, "sweep.h5"),
                      ["gpus", "tp", "pp", "dp", "vp", "micro_batch", "recompute", "zero",
                       "feasible", "iteration_time_s", "cost_usd", "time_days", "mfu"])
    print("1. MT-NLG 530B, 270B tokens, DGX A100 80GB (data/sweeps/mtnlg-530b.json)")
    print(f"{'GPUs':>6} {'fastest plan':<38} {'days':>6} {'$M':>7}   {'cheapest plan':<38} {'days':>6} {'$M':>7}")
    n = len(cols["gpus"])
    best_t = best_c = None
    for g in sorted(set(int(x) for x in cols["gpus"])):
        idx = [i for i in range(n) if cols["gpus"][i] == g and cols["feasible"][i]]
        if not idx:
            print(f"{g:>6} none feasible")
            continue
        t = min(idx, key=lambda i: (cols["iteration_time_s"][i], i))
        c = min(idx, key=lambda i: (cols["cost_usd"][i], i))
        def desc(i):
            rc = ("none", "selective", "full")[int(cols["recompute"][i])]
            return (f"tp{cols['tp'][i]} pp{cols['pp'][i]} dp{cols['dp'][i]} vp{cols['vp'][i]} "
                    f"mb{cols['micro_batch'][i]} {rc} z{cols['zero'][i]}")
        print(f"{g:>6} {desc(t):<38} {cols['time_days'][t]:>6.1f} {cols['cost_usd'][t] / 1e6:>7.2f}   "
              f"{desc(c):<38} {cols['time_days'][c]:>6.1f} {cols['cost_usd'][c] / 1e6:>7.2f}")
        if best_t is None or cols["iteration_time_s"][t] < cols["iteration_time_s"][best_t]:
            best_t = t
        if best_c is None or cols["cost_usd"][c] < cols["cost_usd"][best_c]:
            best_c = c
    if best_t is not None:
        saving = 1 - cols["cost_usd"][best_c] / cols["cost_usd"][best_t]
        slower = cols["time_days"][best_c] / cols["time_days"][best_t]
        print(f"cheapest plan overall ({int(cols['gpus'][best_c])} GPUs) costs {100 * saving:.1f}% less than "
              f"the fastest ({int(cols['gpus'][best_t])} GPUs) and takes {slower:.2f}x as long")


def compute_optimal(d, budgets=(1e4, 1e5, 1e6, 1e7)):
    cols, attrs = columns(os.path.join(d, "sweep.h5"),
                          ["model", "gpus", "tp", "pp", "dp", "feasible", "cost_usd", "time_days",
                           "mfu"])
    mnames = names(attrs["model_names"])
    print("\n3. Compute-optimal sizing: GPT-3-family models at 20 tokens per parameter, DGX A100 80GB "
          "(data/sweeps/compute-optimal.json)")
    print(f"{'model':<14} {'cheapest plan':<26} {'days':>7} {'cost $':>12} {'MFU':>5}")
    n = len(cols["model"])
    best = {}
    for mi, m in enumerate(mnames):
        idx = [i for i in range(n) if cols["model"][i] == mi and cols["feasible"][i]]
        if not idx:
            print(f"{m:<14} none feasible")
            continue
        b = min(idx, key=lambda i: (cols["cost_usd"][i], i))
        best[m] = cols["cost_usd"][b]
        plan = f"{int(cols['gpus'][b])} GPUs tp{cols['tp'][b]} pp{cols['pp'][b]} dp{cols['dp'][b]}"
        print(f"{m:<14} {plan:<26} {cols['time_days'][b]:>7.1f} {cols['cost_usd'][b]:>12,.0f} "
              f"{100 * cols['mfu'][b]:>4.0f}%")
    for B in budgets:
        fits = [m for m in mnames if m in best and best[m] <= B]
        print(f"budget ${B:,.0f}: largest compute-optimal model {fits[-1] if fits else 'none'}")


def moe_finetune(d):
    cols, attrs = columns(os.path.join(d, "sweep.h5"),
                          ["system", "micro_batch", "recompute", "feasible", "tokens_per_s",
                           "cost_usd", "memory_per_gpu_gib"])
    snames = names(attrs["system_names"])
    print("\n4. MoE fine-tuning on one GPU: Mixtral 8x7B shapes, 1024-token sequences, QLoRA "
          "(4-bit base, rank 16) (data/sweeps/moe-finetune.json)")
    print(f"{'system':<18} {'max micro-batch (none / full recompute)':>40} {'best tokens/s':>14} "
          f"{'$ per 1M tokens':>16}")
    n = len(cols["system"])
    for si, sname in enumerate(snames):
        mx = {}
        for rc in (0, 2):
            ok = [int(cols["micro_batch"][i]) for i in range(n)
                  if cols["system"][i] == si and cols["recompute"][i] == rc and cols["feasible"][i]]
            mx[rc] = max(ok) if ok else 0
        idx = [i for i in range(n) if cols["system"][i] == si and cols["feasible"][i]]
        if not idx:
            print(f"{sname:<18} {'does not fit':>40}")
            continue
        b = max(idx, key=lambda i: (cols["tokens_per_s"][i], -i))
        c = min(idx, key=lambda i: (cols["cost_usd"][i], i))
        print(f"{sname:<18} {mx[0]:>30} / {mx[2]:<7} {cols['tokens_per_s'][b]:>14.0f} "
              f"{cols['cost_usd'][c]:>16.3f}")


def small_models(d):
    cols, attrs = columns(os.path.join(d, "sweep.h5"),
                          ["model", "system", "gpus", "feasible", "tokens_per_s", "cost_usd",
                           "micro_batch", "zero", "recompute", "mfu"])
    mnames, snames = names(attrs["model_names"]), names(attrs["system_names"])
    sweep = json.load(open(os.path.join(ROOT, "data", "sweeps", "small-models-gpus.json")))
    tokens = sweep["training"]["tokens"]
    print("\n2. Small LLaMA-style models on 8-GPU instances, 40B tokens (data/sweeps/small-models-gpus.json)")
    print("   best configuration per (model, system) at 8 GPUs: tokens/s per GPU | Mtokens per $ | MFU")
    print(f"{'system':<18}" + "".join(f"{m:>26}" for m in mnames))
    n = len(cols["model"])
    for si, s in enumerate(snames):
        line = f"{s:<18}"
        for mi in range(len(mnames)):
            idx = [i for i in range(n) if cols["model"][i] == mi and cols["system"][i] == si
                   and cols["gpus"][i] == 8 and cols["feasible"][i]]
            if not idx:
                line += f"{'infeasible':>26}"
                continue
            b = min(idx, key=lambda i: (cols["cost_usd"][i], i))
            tpd = tokens / cols["cost_usd"][b] / 1e6 if cols["cost_usd"][b] > 0 else float("nan")
            line += f"{cols['tokens_per_s'][b] / 8:>10.0f} |{tpd:>7.1f} |{100 * cols['mfu'][b]:>4.0f}%"
        print(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "case-studies"))
    ap.add_argument("--ranks", type=int, default=2)
    a = ap.parse_args()
    llmplan = os.path.join(a.build, "search", "llmplan")
    try:
        import h5py  # noqa: F401
    except ImportError:
        sys.exit("case_studies: h5py is missing (apt-get install python3-h5py)")
    mtnlg(run_sweep(llmplan, a.ranks, "mtnlg-530b", a.out))
    small_models(run_sweep(llmplan, a.ranks, "small-models-gpus", a.out))
    compute_optimal(run_sweep(llmplan, a.ranks, "compute-optimal", a.out))
    moe_finetune(run_sweep(llmplan, a.ranks, "moe-finetune", a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
