#!/usr/bin/env python3
"""vTrain's case study 1 in vTrain's own space: MT-NLG 530B on DGX A100 80GB.

usage: scripts/mtnlg_vtrain.py [--build DIR] [--out DIR] [--no-plots]
                               [--framework NAME] [--set KEY=VALUE ...]
                               [--precision fp16|bf16] [--tp-in-node]

The space is VIA-Research/vTrain's config/case_study_1 (one file per point,
config_mtnlg_<tp>_<dp>_<pp>.json): TP {4, 8, 16} x PP {3, 5, 7, 15, 21, 35, 105}
x DP {1 .. 30 dividing the global batch 1920}, micro-batch 1, full activation
recomputation (`use_checkpoint: true`), 1F1B, no bucketed gradient overlap
(`use_gradient_bucket: false`). The stack is Megatron-DeepSpeed of 2021
(framework `megatron-deepspeed`, docs/frameworks.md): no sequence
parallelism, no distributed optimizer (ZeRO 0), the DP all-reduce after the
backward. The GPU count is tp x pp x dp (vTrain sweeps it with the layout). TP 16
spans two DGX nodes: vTrain runs it over the network, and so does llmplan
here (the system's tp_across_nodes: the TP all-reduces across two nodes,
priced by lp_coll_time); --tp-in-node refuses it, as llmplan does by default.
Precision fp16 (--precision changes it): DeepSpeed's engine of 2021 had only
FP16_Optimizer (runtime/fp16/fused_optimizer.py); bf16 came with 648f7bfa5
(2021-11-01, ZeRO-2 only) and to the pipeline engine with 56c522386
(2022-04-19), after MT-NLG was trained, and Megatron-DeepSpeed of 2021
(9b3a43f7 megatron/optimizer/__init__.py) hands DeepSpeed the bare Adam, so
a --bf16 run there would have had no fp32 master weights.
Each of the 294 points is simulated with `llmplan simulate --batch`.

Prints (and writes to OUT/mtnlg_vtrain.md) the baseline MT-NLG was trained
with (TP 8, PP 35, DP 12 on 3,360 GPUs) beside the plan of highest
utilisation, the cheapest plan, the cheapest plan no slower than the
baseline, and the time-cost Pareto front; writes OUT/points.csv (every
point) and, unless --no-plots, OUT/cost_vs_days.png and
OUT/utilisation.png (python3-matplotlib).

Utilisation is llmplan's MFU (model FLOPs, 6N + attention, without the
recomputed forward, over the GPU's dense peak). For a fixed token budget on
one GPU type the cost is proportional to 1 / utilisation, so the plan of
highest utilisation is also the cheapest one.
"""
import argparse
import csv
import json
import os
import sys

import lp_batch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TP = [4, 8, 16]
PP = [3, 5, 7, 15, 21, 35, 105]
GLOBAL_BATCH = 1920
DP = [d for d in range(1, 31) if GLOBAL_BATCH % d == 0]
BASELINE = (8, 35, 12)  # Smith et al. 2022, Sec. 2.3: 420 DGX nodes, TP 8 x PP 35
TOKENS = 2.7e11         # Smith et al. 2022: 270B training tokens


def run_of(tp, pp, dp, framework, precision="fp16", tp_across=True):
    return {
        "model": "mt-nlg-530b",
        "system": {"preset": "dgx-a100-80gb", "tp_across_nodes": tp_across},
        "parallel": {"tp": tp, "pp": pp, "dp": dp, "micro_batch": 1, "recompute": "full",
                     "zero": 0, "sequence_parallel": False, "schedule": "1f1b"},
        "training": {"global_batch": GLOBAL_BATCH, "precision": precision,
                     "flash_attention": False, "tokens": TOKENS},
        "framework": framework,
    }


def parse_set(items):
    fw = {}
    for s in items:
        k, _, v = s.partition("=")
        try:
            fw[k] = json.loads(v)
        except json.JSONDecodeError:
            fw[k] = v
    return fw


def pareto(points):
    """Points not dominated in (days, cost), sorted by days."""
    out = []
    for p in sorted(points, key=lambda q: (q["days"], q["cost"])):
        if not out or p["cost"] < out[-1]["cost"]:
            out.append(p)
    return out


def name(p):
    return f"TP{p['tp']} PP{p['pp']} DP{p['dp']}"


def row(p, base=None):
    b = p["breakdown"]
    rel = ""
    if base:
        rel = (f" {100 * (p['mfu'] / base['mfu'] - 1):>+6.1f}% | "
               f"{100 * (p['cost'] / base['cost'] - 1):>+6.1f}% |")
    return (f"| {name(p):<16} | {p['gpus']:>5} | {p['iter']:>7.2f} | {100 * p['mfu']:>5.1f} | "
            f"{p['days']:>6.1f} | {p['cost'] / 1e6:>6.2f} | {b.get('compute', 0):>7.2f} | "
            f"{b.get('pp_bubble', 0):>6.2f} | {b.get('pp_comm', 0):>6.2f} | {b.get('tp_comm', 0):>6.2f} | "
            f"{b.get('dp_comm_exposed', 0):>6.2f} | {p['mem']:>5.1f} |{rel}")


HEAD = ("| | plan | GPUs | s/iter | MFU % | days | $M | compute | bubble | pp p2p | tp comm | "
        "dp exp | GiB | vs baseline: MFU | cost |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "mtnlg_vtrain"))
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--framework", default="megatron-deepspeed")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="framework override, e.g. pp_overlap=true")
    ap.add_argument("--precision", default="fp16", choices=["fp16", "bf16"],
                    help="training precision (fp16: DeepSpeed of 2021; see above)")
    ap.add_argument("--tp-in-node", action="store_true",
                    help="refuse TP wider than a node (llmplan's default) instead of running "
                         "TP 16 over the network as vTrain does")
    a = ap.parse_args()
    llmplan = os.path.join(a.build, "search", "llmplan")
    fw = a.framework
    if a.set:
        fw = dict(parse_set(a.set), name=a.framework)
    keys = [(t, p, d) for t in TP for p in PP for d in DP]
    res = lp_batch.simulate(llmplan, [run_of(t, p, d, fw, a.precision, not a.tp_in_node)
                                      for t, p, d in keys], "mtnlg_vtrain")
    os.makedirs(a.out, exist_ok=True)
    points, reasons = [], {}
    with open(os.path.join(a.out, "points.csv.tmp"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["tp", "pp", "dp", "gpus", "feasible", "reason", "iteration_time_s", "mfu",
                    "time_days", "cost_usd", "memory_per_gpu_gib"])
        for (t, p, d), r in zip(keys, res):
            ok = r.get("feasible", False)
            if not ok:
                why = (r.get("reason") or "?").split(":")[0]
                reasons[why] = reasons.get(why, 0) + 1
                w.writerow([t, p, d, t * p * d, 0, r.get("reason"), "", "", "", "", ""])
                continue
            q = {"tp": t, "pp": p, "dp": d, "gpus": t * p * d, "iter": r["iteration_time_s"],
                 "mfu": r["mfu"], "days": r["training"]["time_days"],
                 "cost": r["training"]["cost_usd"], "mem": r["memory_per_gpu_gib"],
                 "breakdown": r["breakdown_s"]}
            points.append(q)
            w.writerow([t, p, d, q["gpus"], 1, "", f"{q['iter']:.6g}", f"{q['mfu']:.6g}",
                        f"{q['days']:.6g}", f"{q['cost']:.6g}", f"{q['mem']:.4g}"])
    os.replace(os.path.join(a.out, "points.csv.tmp"), os.path.join(a.out, "points.csv"))

    base = next((q for q in points if (q["tp"], q["pp"], q["dp"]) == BASELINE), None)
    if base is None:
        sys.exit("mtnlg_vtrain: the baseline TP8 PP35 DP12 is not feasible")
    best_u = max(points, key=lambda q: (q["mfu"], -q["gpus"]))
    cheapest = min(points, key=lambda q: (q["cost"], q["gpus"]))
    no_slower = min((q for q in points if q["days"] <= base["days"]), key=lambda q: q["cost"])
    same_gpus = min((q for q in points if q["gpus"] == base["gpus"]), key=lambda q: q["cost"])
    front = pareto(points)

    lines = [f"MT-NLG 530B, {TOKENS / 1e9:.0f}B tokens, global batch {GLOBAL_BATCH}, micro-batch 1, "
             f"full recomputation, {a.precision}, DGX A100 80GB, framework {json.dumps(fw)}, "
             + ("TP within a node" if a.tp_in_node else "TP 16 across two nodes"),
             f"vTrain's space: {len(keys)} points, {len(points)} feasible; infeasible: "
             + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())), "", HEAD]
    for lab, q in (("baseline (as trained)", base), ("highest MFU", best_u), ("cheapest", cheapest),
                   ("cheapest no slower", no_slower), (f"cheapest on {base['gpus']} GPUs", same_gpus)):
        lines.append(f"| {lab} " + row(q, base))
    lines += ["", "time-cost Pareto front:", "", HEAD] + ["| " + row(q, base) for q in front]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(os.path.join(a.out, "mtnlg_vtrain.md.tmp"), "w") as f:
        f.write(text)
    os.replace(os.path.join(a.out, "mtnlg_vtrain.md.tmp"), os.path.join(a.out, "mtnlg_vtrain.md"))
    if not a.no_plots:
        plots(a.out, points, base, best_u, no_slower, front)
    return 0


def plots(out, points, base, best_u, no_slower, front):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("mtnlg_vtrain: matplotlib is missing (apt-get install python3-matplotlib) "
                 "or run with --no-plots")
    fig, ax = plt.subplots(figsize=(7, 5))
    for tp, mk in ((4, "o"), (8, "s"), (16, "^")):
        s = [q for q in points if q["tp"] == tp]
        if s:
            ax.scatter([q["days"] for q in s], [q["cost"] / 1e6 for q in s], marker=mk, s=14,
                       alpha=0.6, label=f"TP {tp}")
    ax.plot([q["days"] for q in front], [q["cost"] / 1e6 for q in front], "k-", lw=1,
            label="Pareto front")
    for q, lab, c, dy in ((base, "baseline " + name(base), "red", 8),
                          (no_slower, name(no_slower), "green", -14), (best_u, name(best_u), "blue", 8)):
        ax.scatter([q["days"]], [q["cost"] / 1e6], s=80, facecolors="none", edgecolors=c, lw=2)
        ax.annotate(lab, (q["days"], q["cost"] / 1e6), textcoords="offset points", xytext=(6, dy),
                    fontsize=8, color=c)
    ax.set_xscale("log")
    lp_batch.save_plot(fig, ax, os.path.join(out, "cost_vs_days.png"), "training days (270B tokens)",
                       "cost, $M", "MT-NLG 530B in vTrain's space (llmplan)")

    fig, ax = plt.subplots(figsize=(7, 5))
    for pp in PP:
        s = sorted((q for q in points if q["pp"] == pp and q["tp"] == 8), key=lambda q: q["dp"])
        if s:
            ax.plot([q["gpus"] for q in s], [100 * q["mfu"] for q in s], "o-", ms=3,
                    label=f"TP 8, PP {pp}")
    ax.scatter([base["gpus"]], [100 * base["mfu"]], s=80, facecolors="none", edgecolors="red",
               lw=2, label="baseline")
    ax.set_xscale("log")
    lp_batch.save_plot(fig, ax, os.path.join(out, "utilisation.png"), "GPUs", "MFU, %",
                       "MT-NLG 530B: utilisation by layout (llmplan)", legend_size=7)


if __name__ == "__main__":
    sys.exit(main())
