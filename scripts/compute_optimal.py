#!/usr/bin/env python3
"""Compute-optimal model under a budget and a deadline (vTrain's third case study).

usage: scripts/compute_optimal.py [--build DIR] [--out DIR] [--ranks N]
                                  [--fit hoffmann2022|besiroglu2024]
                                  [--budgets USD,...] [--gpu-hours] [--deadlines DAYS,...]
                                  [--no-plots]

Runs `mpirun -np N llmplan search data/sweeps/compute-optimal-shapes.json`
(model shape is a sweep dimension: a generator of ~2,900 GPT-3-style shapes,
include/llmplan/shapes.h) unless OUT/sweep.h5 exists, then for every budget B
(dollars, or GPU-hours with --gpu-hours) and deadline T (days):

  - every feasible plan r of a shape of N parameters trains at c_r dollars
    (or GPU-hours) and t_r seconds per token (its sweep row scaled from the
    sweep's reference token budget: both are linear in the tokens); within B
    and T it can train D_r = min(B / c_r, T / t_r) tokens;
  - the shape's best plan is the one with the most tokens; its loss is
    L(N, D) from `llmplan loss` (Hoffmann et al. 2022 by default);
  - the lowest loss over all shapes is the compute-optimal model for (B, T);
  - the 20-tokens-per-parameter rule: the shape of lowest L(N, 20 N) among
    those whose cheapest plan meeting the deadline trains 20 N tokens within
    B; a plan that misses the deadline never counts.

Writes OUT/compute_optimal.md (the table), OUT/frontier.csv (one row per
budget and deadline, loss_per_usd = the loss the budget buys divided by the
dollars it spends), and unless --no-plots OUT/loss_vs_budget.png and
OUT/tokens_per_param.png. Needs python3-h5py and python3-numpy.
"""
import argparse
import json
import os
import subprocess
import sys

import lp_batch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWEEP = os.path.join(ROOT, "data", "sweeps", "compute-optimal-shapes.json")


def run_sweep(llmplan, ranks, out):
    if not os.path.exists(os.path.join(out, "sweep.h5")):
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        env.setdefault("LLMPLAN_DATA", os.path.join(ROOT, "data"))
        subprocess.run(["mpirun", "--oversubscribe", "-np", str(ranks), llmplan, "search", SWEEP,
                        "-o", out, "--quiet"], check=True, env=env)


def load(out):
    import h5py
    import numpy as np
    with h5py.File(os.path.join(out, "sweep.h5"), "r") as f:
        g = f["configs"] if "configs" in f else f
        names = ["model", "gpus", "tp", "pp", "dp", "micro_batch", "feasible", "cost_usd",
                 "gpu_hours", "time_days", "mfu"]
        cols = {n: np.asarray(g[n][()]) for n in names}
        mnames = [x.decode() if isinstance(x, bytes) else str(x) for x in f.attrs["model_names"]]
        params = np.asarray(f.attrs["model_params"], dtype=float)
        sweep = json.loads(f.attrs["sweep_json"])
    ok = cols["feasible"] != 0
    return {k: v[ok] for k, v in cols.items()}, mnames, params, float(sweep["training"]["tokens"])


def losses(llmplan, fit, pairs):
    text = "".join(f"{n:.17g} {d:.17g}\n" for n, d in pairs)
    p = subprocess.run([llmplan, "loss", "--batch", "--fit", fit], input=text,
                       capture_output=True, text=True, check=True)
    return [json.loads(x)["loss"] for x in p.stdout.splitlines()]


def best_per_shape(cols, nmodels, price_per_token, s_per_token, budget, deadline_s):
    """Per shape: the row that trains the most tokens within budget and deadline."""
    import numpy as np
    d = np.minimum(budget / price_per_token, deadline_s / s_per_token)
    best = np.full(nmodels, -1)
    bestd = np.zeros(nmodels)
    order = np.lexsort((-d, cols["model"]))  # by shape, most tokens first
    first = np.ones(len(order), dtype=bool)
    first[1:] = cols["model"][order][1:] != cols["model"][order][:-1]
    for i in order[first]:
        best[cols["model"][i]] = i
        bestd[cols["model"][i]] = d[i]
    return best, bestd


def rule20(cols, params, price_per_token, s_per_token, budget, deadline_s):
    """Per shape: the cheapest row meeting the deadline at D = 20 N, if within budget."""
    import numpy as np
    D = 20.0 * params[cols["model"]]
    cost = D * price_per_token
    ok = (D * s_per_token <= deadline_s) & (cost <= budget)
    best = {}
    for i in np.nonzero(ok)[0]:
        m = int(cols["model"][i])
        if m not in best or cost[i] < cost[best[m]]:
            best[m] = i
    return best


def plan(cols, i):
    return (f"{int(cols['gpus'][i])} GPUs tp{int(cols['tp'][i])} pp{int(cols['pp'][i])} "
            f"dp{int(cols['dp'][i])} mb{int(cols['micro_batch'][i])}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "compute_optimal"))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--fit", default="hoffmann2022")
    ap.add_argument("--budgets", default="1e5,1e6,1e7")
    ap.add_argument("--gpu-hours", action="store_true", help="budgets in GPU-hours, not dollars")
    ap.add_argument("--deadlines", default="30,90")
    ap.add_argument("--no-plots", action="store_true")
    a = ap.parse_args()
    import numpy as np
    llmplan = os.path.join(a.build, "search", "llmplan")
    os.makedirs(a.out, exist_ok=True)
    run_sweep(llmplan, a.ranks, a.out)
    cols, mnames, params, d0 = load(a.out)
    unit = "GPU-h" if a.gpu_hours else "$"
    ppt = (cols["gpu_hours"] if a.gpu_hours else cols["cost_usd"]) / d0
    spt = cols["time_days"] * 86400.0 / d0
    usd_pt = cols["cost_usd"] / d0
    budgets = [float(x) for x in a.budgets.split(",")]
    deadlines = [float(x) for x in a.deadlines.split(",")]
    rows, plot = [], {}
    curve_budgets = list(np.logspace(4, 8, 17)) if not a.no_plots else []
    for T in deadlines:
        for B in sorted(set(budgets + curve_budgets)):
            best, bestd = best_per_shape(cols, len(mnames), ppt, spt, B, T * 86400.0)
            have = [m for m in range(len(mnames)) if best[m] >= 0 and bestd[m] > 0]
            ls = losses(llmplan, a.fit, [(params[m], bestd[m]) for m in have])
            k = int(np.argmin(ls))
            m, i = have[k], best[have[k]]
            r20 = rule20(cols, params, ppt, spt, B, T * 86400.0)
            l20 = losses(llmplan, a.fit, [(params[q], 20.0 * params[q]) for q in r20]) if r20 else []
            q20 = list(r20)[int(np.argmin(l20))] if r20 else None
            spent = bestd[m] * usd_pt[i]
            row = {"budget": B, "deadline_days": T, "loss": ls[k], "shape": mnames[m],
                   "params": params[m], "tokens": bestd[m], "tokens_per_param": bestd[m] / params[m],
                   "plan": plan(cols, i), "days": bestd[m] * spt[i] / 86400.0, "usd": spent,
                   "loss_per_usd": ls[k] / spent,
                   "binding": "deadline" if bestd[m] * spt[i] >= T * 86400.0 * (1 - 1e-9) else "budget",
                   "rule20_shape": mnames[q20] if q20 is not None else "-",
                   "rule20_params": params[q20] if q20 is not None else float("nan"),
                   "rule20_loss": min(l20) if l20 else float("nan"),
                   "rule20_plan": plan(cols, r20[q20]) if q20 is not None else "-",
                   "rule20_days": 20 * params[q20] * spt[r20[q20]] / 86400.0 if q20 is not None else float("nan"),
                   "rule20_usd": 20 * params[q20] * usd_pt[r20[q20]] if q20 is not None else float("nan")}
            plot.setdefault(T, []).append(row)
            if B in budgets:
                rows.append(row)
    lines = [f"compute-optimal model per budget ({unit}) and deadline: {len(mnames)} shapes "
             f"({os.path.relpath(SWEEP, ROOT)}), loss fit {a.fit}", "",
             f"| budget {unit} | deadline d | lowest loss | shape | params B | tokens B | tokens/param | "
             "plan | days | $M | binds | 20 tok/param: shape | params B | loss | plan | days | $M |",
             "| --- " * 17 + "|"]
    for r in rows:
        lines.append(
            f"| {r['budget']:.3g} | {r['deadline_days']:.0f} | {r['loss']:.4f} | {r['shape']} | "
            f"{r['params'] / 1e9:.2f} | {r['tokens'] / 1e9:.1f} | {r['tokens_per_param']:.1f} | "
            f"{r['plan']} | {r['days']:.1f} | {r['usd'] / 1e6:.3f} | {r['binding']} | "
            f"{r['rule20_shape']} | {r['rule20_params'] / 1e9:.2f} | {r['rule20_loss']:.4f} | "
            f"{r['rule20_plan']} | {r['rule20_days']:.1f} | {r['rule20_usd'] / 1e6:.3f} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    tmp = os.path.join(a.out, "compute_optimal.md.tmp")
    open(tmp, "w").write(text)
    os.replace(tmp, os.path.join(a.out, "compute_optimal.md"))
    keys = list(rows[0].keys()) if rows else []
    tmp = os.path.join(a.out, "frontier.csv.tmp")
    with open(tmp, "w") as f:
        f.write(",".join(keys) + "\n")
        for T in deadlines:
            for r in plot[T]:
                f.write(",".join(str(r[k]) for k in keys) + "\n")
    os.replace(tmp, os.path.join(a.out, "frontier.csv"))
    if not a.no_plots:
        plots(a.out, plot, unit)
    return 0


def plots(out, plot, unit):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for T, rs in sorted(plot.items()):
        ax.plot([r["budget"] for r in rs], [r["loss"] for r in rs], "o-", ms=3,
                label=f"lowest loss, deadline {T:.0f} d")
        ax.plot([r["budget"] for r in rs], [r["rule20_loss"] for r in rs], "x--", ms=4,
                label=f"20 tokens/param, deadline {T:.0f} d")
    ax.set_xscale("log")
    lp_batch.save_plot(fig, ax, os.path.join(out, "loss_vs_budget.png"), f"budget ({unit})",
                       "loss L(N, D)", "Compute-optimal model under a budget and a deadline (llmplan)")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for T, rs in sorted(plot.items()):
        ax.plot([r["budget"] for r in rs], [r["tokens_per_param"] for r in rs], "o-", ms=3,
                label=f"deadline {T:.0f} d")
    ax.axhline(20, color="grey", ls=":", label="20 tokens/param")
    ax.set_xscale("log")
    ax.set_yscale("log")
    lp_batch.save_plot(fig, ax, os.path.join(out, "tokens_per_param.png"), f"budget ({unit})",
                       "tokens per parameter of the lowest-loss model")


if __name__ == "__main__":
    sys.exit(main())
