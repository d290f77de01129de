#!/usr/bin/env python3
"""Small models on cloud GPUs: the study of Ashkboos et al. 2024 ("Computational
Bottlenecks of Training Small-scale Large Language Models", arXiv 2410.19456)
replayed with llmplan.

usage: scripts/small_models.py [--build DIR] [--out DIR] [--cloud aws|gcp|azure]
                               [--prices SEL] [--compare-prices SEL] [--budget USD]
                               [--fit hoffmann2022|besiroglu2024] [--no-plots] [--check]

Simulates every configuration of the paper's grid with `llmplan simulate
--batch`: LLaMA-style models of 100M, 500M, 1B and 2B parameters
(data/models/llama-*.json), on A100-40GB, A100-80GB and H100-80GB cloud
instances (AWS p4d, p4de, p5 by default; --cloud gcp or azure: their A2/A3 and
ND/NDm/ND H100 instances; data/systems/), 1-64 GPUs, per-GPU batch 4-64,
PyTorch DDP, FSDP SHARD_GRAD_OP (gradient + optimizer sharding) and FSDP
FULL_SHARD, FlashAttention-2 on and off. Each point of a comparison is the
best configuration for its parameters, as in the paper. Metrics:
  tokens/s, tokens per dollar, and the loss reached for a fixed budget
  (--budget dollars buy D = budget x tokens/$ tokens; L(N, D) from
  `llmplan loss`, the Chinchilla fit of include/llmplan/loss.h).
Writes OUT/small_models.md (the tables), OUT/small_models.csv (every run) and
OUT/*.png (plots; needs matplotlib, Debian python3-matplotlib).

--check evaluates the paper's findings that the model supports (FINDINGS
below) and exits 1 when one goes the other way; the rest are reported with
the breakdown that explains the disagreement.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

import lp_batch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODELS = ["llama-100m", "llama-500m", "llama-1b", "llama-2b"]
# The three instance types of each cloud (--cloud): the same GPUs behind
# each provider's own network (data/systems/*.json, sources there): AWS EFA
# (4.2 GB/s per GPU measured on p4d/p4de, 50 on p5), GCP's A2 over 100 Gb/s
# TCP per VM (1.56 GB/s per GPU) and A3 High over GPUDirect-TCPX (12.5),
# Azure's InfiniBand (HDR 25 GB/s per GPU on ND/NDm A100 v4, NDR 50 on
# ND H100 v5).
CLOUDS = {
    "aws": {"A100-40GB": "aws-p4d", "A100-80GB": "aws-p4de", "H100-80GB": "aws-p5"},
    "gcp": {"A100-40GB": "gcp-a2-highgpu-8g", "A100-80GB": "gcp-a2-ultragpu-8g",
            "H100-80GB": "gcp-a3-highgpu-8g"},
    "azure": {"A100-40GB": "azure-nd-a100-v4", "A100-80GB": "azure-ndm-a100-v4",
              "H100-80GB": "azure-nd-h100-v5"},
}
SYSTEMS = dict(CLOUDS["aws"])  # --cloud replaces it before anything runs
GPU_COUNTS = [1, 2, 4, 8, 16, 32, 64]
BATCHES = [4, 8, 16, 32, 64]
# (label, framework, zero): DDP; FSDP with gradient + optimizer sharding
# (SHARD_GRAD_OP); FSDP full sharding (FULL_SHARD) -- docs/frameworks.md.
# The paper's training code is not published: both are plain PyTorch (DDP,
# FSDP1 in a training loop, eager PyTorch's derived host time per kernel,
# not Composer's fitted one) with the same fused kernels, so that the
# variants differ only in how they shard and communicate.
FSDP = {"name": "fsdp1", "fused_kernels": True}
VARIANTS = [("DDP", "ddp", 0), ("FSDP-grad-op", FSDP, 2), ("FSDP-full", FSDP, 3)]

# Prices come from the presets (data/systems): "shipped" is each preset's own
# price_per_gpu_hour_usd; any other --prices is handed to llmplan as the
# runs' "prices" key (a price's name, or a date: the price in effect then,
# lp_system_pick_price). Ashkboos et al. price their runs with the average
# ratio of cloud prices (their Appendix A), which could not be consulted
# here; the AWS presets carry the list prices of the paper's time as
# "aws-2024" (before the June 2025 P4/P5 reduction) beside "aws-2025-06".
SHIPPED = "shipped"


def price_set(llmplan, sel):
    """What a price selection means per instance: {gpu: (name, date, $/GPU-h,
    source)}. llmplan picks the price (lp_system_pick_price: a name, a
    price's date, or the one in effect at a date), so the rule is its; the
    presets give the picked entry's date and source. Exits with llmplan's
    message when an instance has no such price."""
    out = {}
    for g, sname in SYSTEMS.items():
        with open(os.path.join(ROOT, "data", "systems", f"{sname}.json")) as f:
            d = json.load(f)
        if sel == SHIPPED:
            out[g] = ("preset", d.get("price_date", "?"), d["price_per_gpu_hour_usd"],
                      d.get("price_source", ""))
            continue
        run = {"model": MODELS[0], "system": sname, "parallel": {"micro_batch": 1},
               "training": {"global_batch": 1}, "prices": sel}
        env = dict(os.environ)
        env.setdefault("LLMPLAN_DATA", os.path.join(ROOT, "data"))
        p = subprocess.run([llmplan, "simulate", "--batch", "-"], input=json.dumps(run) + "\n",
                           capture_output=True, text=True, env=env)
        if p.returncode != 0:
            sys.exit(f"small_models: --prices {sel}: {p.stderr.strip()} (or --prices {SHIPPED})")
        name = json.loads(p.stdout)["prices"]
        pick = next(x for x in d["prices"] if x["name"] == name)
        out[g] = (pick["name"], pick["date"], pick["usd_per_gpu_hour"], pick["source"])
    return out


def llmplan_bin(build):
    b = os.path.join(build, "search", "llmplan")
    if not os.path.exists(b):
        sys.exit(f"small_models: {b} not found (build first: scripts/setup.sh)")
    return b


def run_grid(prices=SHIPPED):
    runs = []
    for model in MODELS:
        for gname, system in SYSTEMS.items():
            for n in GPU_COUNTS:
                for mb in BATCHES:
                    for label, fw, zero in VARIANTS:
                        if n == 1 and label != "DDP":
                            continue  # one GPU: nothing to shard or reduce
                        for flash in (True, False):
                            runs.append({
                                "key": (model, gname, n, mb, label, flash),
                                "run": {"model": model, "system": system,
                                        "parallel": {"dp": n, "micro_batch": mb, "zero": zero},
                                        "training": {"global_batch": mb * n, "precision": "bf16",
                                                     "flash_attention": flash},
                                        "framework": fw}})
                            if prices != SHIPPED:
                                runs[-1]["run"]["prices"] = prices
    return runs


def simulate(llmplan, runs):
    return lp_batch.simulate(llmplan, [r["run"] for r in runs], "small_models")


def model_params(llmplan):
    """Parameter count per model preset, as `llmplan models` prints it (billions)."""
    env = dict(os.environ)
    env.setdefault("LLMPLAN_DATA", os.path.join(ROOT, "data"))
    out = subprocess.run([llmplan, "models"], capture_output=True, text=True, env=env, check=True)
    n = {}
    for line in out.stdout.splitlines():
        f = line.split()
        if f and f[0] in MODELS:
            n[f[0]] = float(f[1].rstrip("B")) * 1e9
    return n


def losses(llmplan, fit, pairs):
    text = "".join(f"{n:.17g} {d:.17g}\n" for n, d in pairs)
    p = subprocess.run([llmplan, "loss", "--batch", "--fit", fit], input=text,
                       capture_output=True, text=True, check=True)
    return [json.loads(x)["loss"] for x in p.stdout.splitlines()]


def collect(llmplan, prices, budget, fit):
    """Every run of the grid at the price selection `prices` (llmplan prices
    each run: its cost per iteration gives the $/GPU-h)."""
    runs = run_grid(prices)
    res = simulate(llmplan, runs)
    params = model_params(llmplan)
    rows = []
    for r, o in zip(runs, res):
        model, gname, n, mb, label, flash = r["key"]
        row = {"model": model, "gpu": gname, "gpus": n, "batch": mb, "variant": label,
               "flash": flash, "feasible": bool(o.get("feasible")), "reason": o.get("reason", "")}
        if row["feasible"]:
            p_h = o["cost_per_iteration_usd"] * 3600.0 / (o["iteration_time_s"] * n)
            tps = o["tokens_per_s"]
            bd = o["breakdown_s"]
            row.update({"tokens_per_s": tps, "tokens_per_s_gpu": tps / n,
                        "tokens_per_usd": tps / (n * p_h / 3600.0), "usd_per_gpu_h": p_h,
                        "mfu": o["mfu"], "memory_gib": o["memory_per_gpu_gib"],
                        "iteration_s": o["iteration_time_s"],
                        "compute_s": bd["compute"], "dp_exposed_s": bd["dp_comm_exposed"],
                        "comm_in_passes_s": bd["tp_comm"] + bd.get("zero3_gather", 0.0), "optimizer_s": bd["optimizer"]})
        rows.append(row)
    feas = [r for r in rows if r["feasible"]]
    ls = losses(llmplan, fit, [(params[r["model"]], budget * r["tokens_per_usd"]) for r in feas])
    for r, l in zip(feas, ls):
        r["loss_at_budget"] = l
    return rows, params


def best(rows, **want):
    """The best feasible row (most tokens per dollar) among those matching `want`."""
    c = [r for r in rows if r["feasible"] and all(r[k] == v for k, v in want.items())]
    return max(c, key=lambda r: r["tokens_per_usd"]) if c else None


def fmt(x, d=0):
    return "-" if x is None else f"{x:,.{d}f}"


# ---- the findings ----

def findings(rows):
    """Each finding of the paper: (name, supported by the model?, text with the numbers)."""
    out = []

    def tpd(**w):
        b = best(rows, **w)
        return b["tokens_per_usd"] if b else None

    # 1. FlashAttention helps small models most
    gain = {m: tpd(model=m, flash=True) / tpd(model=m, flash=False) for m in MODELS}
    ok = gain["llama-100m"] > gain["llama-2b"] and gain["llama-100m"] > 1.0
    out.append(("flash_attention_helps_small_most", ok,
                "best tokens/$ with FlashAttention-2 / without: " +
                ", ".join(f"{m} x{gain[m]:.2f}" for m in MODELS)))
    # 2. A100-40GB the most cost-efficient for the smallest models; 3. H100 not
    for m in ("llama-100m", "llama-500m"):
        t = {g: tpd(model=m, gpu=g) for g in SYSTEMS}
        top = max(t, key=t.get)
        out.append((f"a100_40gb_cheapest_{m}", top == "A100-40GB",
                    f"{m} best tokens/$: " + ", ".join(f"{g} {t[g]:,.0f}" for g in SYSTEMS)))
        out.append((f"h100_not_cost_efficient_{m}", t["H100-80GB"] < max(t["A100-40GB"],
                                                                       t["A100-80GB"]),
                    f"{m}: H100 {t['H100-80GB']:,.0f} vs best A100 "
                    f"{max(t['A100-40GB'], t['A100-80GB']):,.0f} tokens/$"))
    # 4. A100-80GB best for 1-2B at 32 or more GPUs
    for m in ("llama-1b", "llama-2b"):
        for n in (32, 64):
            t = {g: tpd(model=m, gpu=g, gpus=n) for g in SYSTEMS}
            top = max((g for g in t if t[g]), key=lambda g: t[g])
            # the same GPU on the same network: the 80 GB instance wins
            # where its price ratio is below its per-GPU throughput ratio
            b40, b80 = (best(rows, model=m, gpu=g, gpus=n) for g in ("A100-40GB", "A100-80GB"))
            even = ""
            if b40 and b80:
                even = (f"; A100-80GB / A100-40GB tokens/s per GPU x"
                        f"{b80['tokens_per_s_gpu'] / b40['tokens_per_s_gpu']:.3f} (batch "
                        f"{b80['batch']} vs {b40['batch']}) against a price ratio of x"
                        f"{b80['usd_per_gpu_h'] / b40['usd_per_gpu_h']:.3f}")
            out.append((f"a100_80gb_best_{m}_{n}gpus", top == "A100-80GB",
                        f"{m} on {n} GPUs, best tokens/$: " +
                        ", ".join(f"{g} {fmt(t[g])}" for g in SYSTEMS) + even))
    # 5. DDP 20-30% better tokens/$ than FSDP below 1B (at the same GPUs)
    for m in ("llama-100m", "llama-500m"):
        ratios = []
        for g in SYSTEMS:
            for n in GPU_COUNTS[1:]:
                d = tpd(model=m, gpu=g, gpus=n, variant="DDP")
                f = max(x for x in (tpd(model=m, gpu=g, gpus=n, variant="FSDP-grad-op"),
                                    tpd(model=m, gpu=g, gpus=n, variant="FSDP-full"), 0) if x)
                if d and f:
                    ratios.append(d / f)
        mean = sum(ratios) / len(ratios)
        out.append((f"ddp_beats_fsdp_{m}", mean > 1.0,
                    f"{m}: DDP / best FSDP tokens/$ over GPU types and 2-64 GPUs: mean x{mean:.3f}, "
                    f"range x{min(ratios):.3f}-x{max(ratios):.3f} (paper: 1.2-1.3)"))
    # 6. FSDP beats DDP for 2B at large batch: FSDP's sharded states leave
    # room for a larger per-GPU batch; best of each per (GPU type, count)
    wins, total, detail = 0, 0, []
    for g in SYSTEMS:
        for n in GPU_COUNTS[1:]:
            d = best(rows, model="llama-2b", gpu=g, gpus=n, variant="DDP")
            f = max((x for x in (best(rows, model="llama-2b", gpu=g, gpus=n, variant=v)
                                 for v in ("FSDP-grad-op", "FSDP-full")) if x),
                    key=lambda r: r["tokens_per_usd"], default=None)
            if f:
                total += 1
                won = d is None or f["tokens_per_usd"] > d["tokens_per_usd"]
                wins += won
                if n == 32:
                    detail.append(f"{g}: FSDP batch {f['batch']} {f['tokens_per_usd']:,.0f} vs DDP " +
                                  (f"batch {d['batch']} {d['tokens_per_usd']:,.0f}" if d else
                                   "out of memory"))
    out.append(("fsdp_beats_ddp_2b_large_batch", total > 0 and wins > total / 2,
                f"llama-2b: best FSDP ahead of best DDP (or DDP out of memory) in {wins} of {total} "
                f"(GPU type, 2-64 GPUs) points; 32 GPUs: " + "; ".join(detail)))
    # 7. gradient + optimizer sharding beats full sharding (same configuration)
    better, total = 0, 0
    for r in rows:
        if r["feasible"] and r["variant"] == "FSDP-grad-op":
            o = [x for x in rows if x["feasible"] and x["variant"] == "FSDP-full" and
                 all(x[k] == r[k] for k in ("model", "gpu", "gpus", "batch", "flash"))]
            if o:
                total += 1
                better += r["tokens_per_usd"] > o[0]["tokens_per_usd"]
    out.append(("grad_op_beats_full_shard", better == total and total > 0,
                f"FSDP-grad-op ahead of FSDP-full in {better} of {total} configurations where both "
                f"fit (same model, GPU, count, batch, attention)"))
    # 8. cost efficiency saturates before memory is full
    sat = []
    for m in MODELS:
        for g in SYSTEMS:
            c = sorted((r for r in rows if r["feasible"] and r["model"] == m and r["gpu"] == g and
                        r["gpus"] == 8 and r["variant"] == "DDP" and r["flash"]),
                       key=lambda r: r["batch"])
            if len(c) >= 3:
                sat.append((m, g, c[-1]["tokens_per_usd"] / c[-2]["tokens_per_usd"] - 1.0,
                            c[1]["tokens_per_usd"] / c[0]["tokens_per_usd"] - 1.0))
    ok = all(last < first and last < 0.10 for _, _, last, first in sat) and sat
    out.append(("saturates_before_memory_full", bool(ok),
                "8 GPUs, DDP: tokens/$ gain of the last batch doubling that fits vs the first: " +
                "; ".join(f"{m} {g} +{100 * l:.1f}% vs +{100 * f:.1f}%" for m, g, l, f in sat)))
    return out


# Findings the model supports after this work (scripts/small_models.py --check
# fails when one of these goes the other way); docs/case-studies.md explains
# the others with their breakdown.
SUPPORTED = {
    "flash_attention_helps_small_most",
    "a100_40gb_cheapest_llama-100m",
    "a100_40gb_cheapest_llama-500m",
    "h100_not_cost_efficient_llama-100m",
    "h100_not_cost_efficient_llama-500m",
    "fsdp_beats_ddp_2b_large_batch",
    "grad_op_beats_full_shard",
    "saturates_before_memory_full",
}


# ---- tables and plots ----

def describe(sel, ps):
    """The price selection as the tables' header says it."""
    return f"`{sel}` (" + "; ".join(f"{g} {v[0]} {v[1]}: ${v[2]:.4g}/GPU-h, {v[3]}"
                                    for g, v in ps.items()) + ")"


def tables(rows, prices_name, prices, budget, fit):
    L = [f"# Small models on cloud GPUs (Ashkboos et al. 2024) — llmplan\n",
         ("" if SYSTEMS == CLOUDS["aws"] else
          "Instances: " + ", ".join(f"{g} `{s}`" for g, s in SYSTEMS.items()) + ". ") +
         f"Prices: {describe(prices_name, prices)}. "
         f"Loss for a ${budget:,.0f} budget with the {fit} fit. Each cell: the best configuration "
         f"(per-GPU batch, DDP/FSDP variant, FlashAttention) for its parameters; '-' none fits.\n"]
    for metric, title, d in (("tokens_per_s_gpu", "tokens/s per GPU", 0),
                             ("tokens_per_usd", "tokens per dollar", 0),
                             ("loss_at_budget", f"loss reached with ${budget:,.0f}", 3)):
        L.append(f"\n## {title}\n")
        L.append("| model | GPU | " + " | ".join(str(n) for n in GPU_COUNTS) + " |")
        L.append("| --- | --- |" + " --- |" * len(GPU_COUNTS))
        for m in MODELS:
            for g in SYSTEMS:
                cells = []
                for n in GPU_COUNTS:
                    b = best(rows, model=m, gpu=g, gpus=n)
                    cells.append("-" if not b else fmt(b[metric], d))
                L.append(f"| {m} | {g} | " + " | ".join(cells) + " |")
    L.append("\n## DDP vs FSDP: best tokens per dollar (A100-80GB)\n")
    L.append("| model | variant | " + " | ".join(str(n) for n in GPU_COUNTS[1:]) + " |")
    L.append("| --- | --- |" + " --- |" * (len(GPU_COUNTS) - 1))
    for m in MODELS:
        for label, _, _ in VARIANTS:
            cells = [fmt((best(rows, model=m, gpu="A100-80GB", gpus=n, variant=label) or
                          {}).get("tokens_per_usd")) for n in GPU_COUNTS[1:]]
            L.append(f"| {m} | {label} | " + " | ".join(cells) + " |")
    L.append("\n## Where the time goes (best configuration on 32 GPUs, seconds per iteration)\n")
    L.append("| model | GPU | variant | batch | flash | iteration | compute | exposed DP | "
             "gathers in passes | optimizer | GiB |")
    L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for m in MODELS:
        for g in SYSTEMS:
            b = best(rows, model=m, gpu=g, gpus=32)
            if b:
                L.append(f"| {m} | {g} | {b['variant']} | {b['batch']} | {b['flash']} | "
                         f"{b['iteration_s']:.4f} | {b['compute_s']:.4f} | {b['dp_exposed_s']:.4f} | "
                         f"{b['comm_in_passes_s']:.4f} | {b['optimizer_s']:.4f} | "
                         f"{b['memory_gib']:.1f} |")
    L.append("\n## FlashAttention-2 on / off: best tokens per dollar\n")
    L.append("| model | " + " | ".join(f"{g} on | {g} off" for g in SYSTEMS) + " |")
    L.append("| --- |" + " --- | --- |" * len(SYSTEMS))
    for m in MODELS:
        cells = []
        for g in SYSTEMS:
            for fl in (True, False):
                cells.append(fmt((best(rows, model=m, gpu=g, flash=fl) or {}).get("tokens_per_usd")))
        L.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(L) + "\n"


def plots(rows, out, budget):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("small_models: matplotlib is missing (apt-get install python3-matplotlib); "
                 "--no-plots skips the plots")
    files = []
    for metric, ylabel, name in (("tokens_per_s_gpu", "tokens/s per GPU", "throughput"),
                                 ("tokens_per_usd", "tokens per dollar", "tokens_per_dollar"),
                                 ("loss_at_budget", f"loss with ${budget:,.0f}", "loss_per_dollar")):
        fig, axs = plt.subplots(1, len(MODELS), figsize=(4 * len(MODELS), 3.4))
        for ax, m in zip(axs, MODELS):
            for g in SYSTEMS:
                xs, ys = [], []
                for n in GPU_COUNTS:
                    b = best(rows, model=m, gpu=g, gpus=n)
                    if b:
                        xs.append(n)
                        ys.append(b[metric])
                ax.plot(xs, ys, marker="o", label=g)
            ax.set_xscale("log", base=2)
            ax.set_title(m)
            ax.set_xlabel("GPUs")
        axs[0].set_ylabel(ylabel)
        axs[0].legend(fontsize=8)
        fig.tight_layout()
        p = os.path.join(out, f"{name}.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        files.append(p)
    fig, axs = plt.subplots(1, len(MODELS), figsize=(4 * len(MODELS), 3.4))
    for ax, m in zip(axs, MODELS):
        for label, _, _ in VARIANTS:
            xs, ys = [], []
            for n in GPU_COUNTS[1:]:
                b = best(rows, model=m, gpu="A100-80GB", gpus=n, variant=label)
                if b:
                    xs.append(n)
                    ys.append(b["tokens_per_usd"])
            ax.plot(xs, ys, marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{m}, A100-80GB")
        ax.set_xlabel("GPUs")
    axs[0].set_ylabel("tokens per dollar")
    axs[0].legend(fontsize=8)
    fig.tight_layout()
    p = os.path.join(out, "ddp_vs_fsdp.png")
    fig.savefig(p, dpi=110)
    plt.close(fig)
    files.append(p)
    fig, axs = plt.subplots(1, len(MODELS), figsize=(4 * len(MODELS), 3.4))
    for ax, m in zip(axs, MODELS):
        for g in SYSTEMS:
            for fl, ls in ((True, "-"), (False, "--")):
                xs, ys = [], []
                for mb in BATCHES:
                    b = best(rows, model=m, gpu=g, gpus=8, batch=mb, flash=fl)
                    if b:
                        xs.append(mb)
                        ys.append(b["tokens_per_usd"])
                ax.plot(xs, ys, ls, marker="o", label=f"{g} {'flash' if fl else 'vanilla'}")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{m}, 8 GPUs")
        ax.set_xlabel("per-GPU batch")
    axs[0].set_ylabel("tokens per dollar")
    axs[0].legend(fontsize=6)
    fig.tight_layout()
    p = os.path.join(out, "batch_and_attention.png")
    fig.savefig(p, dpi=110)
    plt.close(fig)
    files.append(p)
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "small_models"))
    ap.add_argument("--cloud", default="aws", choices=sorted(CLOUDS),
                    help="instance types (and so networks) the GPUs run on (default aws)")
    ap.add_argument("--prices", metavar="SEL",
                    help="prices: a name or date of the presets' dated prices (the price in "
                         f"effect then), or {SHIPPED!r}, the presets' own (default aws-2024 "
                         f"on aws, {SHIPPED} elsewhere)")
    ap.add_argument("--compare-prices", metavar="SEL",
                    help="a second price selection whose findings are set beside (default on "
                         f"aws: {SHIPPED} beside aws-2024 and aws-2024 beside any other; none "
                         "elsewhere)")
    ap.add_argument("--budget", type=float, default=10000.0,
                    help="dollars for the loss comparison (default 10000)")
    ap.add_argument("--fit", default="besiroglu2024", choices=["hoffmann2022", "besiroglu2024"])
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when a finding the model supports goes the other way")
    a = ap.parse_args()
    SYSTEMS.clear()
    SYSTEMS.update(CLOUDS[a.cloud])
    if a.prices is None:
        a.prices = "aws-2024" if a.cloud == "aws" else SHIPPED
    if a.compare_prices is None and a.cloud == "aws":
        a.compare_prices = SHIPPED if a.prices == "aws-2024" else "aws-2024"
    llmplan = llmplan_bin(a.build)
    prices = price_set(llmplan, a.prices)
    rows, _ = collect(llmplan, a.prices, a.budget, a.fit)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "small_models.csv"), "w", newline="") as f:
        keys = sorted({k for r in rows for k in r})
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    md = tables(rows, a.prices, prices, a.budget, a.fit)
    res = findings(rows)
    md += "\n## The paper's findings\n\n| finding | llmplan | numbers |\n| --- | --- | --- |\n"
    for name, ok, text in res:
        md += f"| {name} | {'agrees' if ok else 'DISAGREES'} | {text} |\n"
    other = price_set(llmplan, a.compare_prices) if a.compare_prices else None
    if other and [v[2] for v in other.values()] != [v[2] for v in prices.values()]:
        # the same runs priced by another date: a finding that turns is the
        # price's, not the model's (skipped where the two select the same prices)
        res2 = findings(collect(llmplan, a.compare_prices, a.budget, a.fit)[0])
        md += (f"\n## The findings at other prices\n\nThe same configurations priced by "
               f"{describe(a.compare_prices, other)}.\n\n"
               f"| finding | at `{a.prices}` | at `{a.compare_prices}` | numbers at "
               f"`{a.compare_prices}` |\n| --- | --- | --- | --- |\n")
        for (name, ok, _), (_, ok2, text2) in zip(res, res2):
            turn = " (turns with the price)" if ok != ok2 else ""
            md += (f"| {name} | {'agrees' if ok else 'DISAGREES'} | "
                   f"{'agrees' if ok2 else 'DISAGREES'}{turn} | {text2} |\n")
    with open(os.path.join(a.out, "small_models.md"), "w") as f:
        f.write(md)
    print(md)
    if not a.no_plots:
        for p in plots(rows, a.out, a.budget):
            print("wrote", p)
    if a.check:
        bad = [n for n, ok, _ in res if n in SUPPORTED and not ok]
        for n, ok, text in res:
            tag = "ok  " if ok else ("FAIL" if n in SUPPORTED else "disagrees (documented)")
            print(f"{tag} {n}: {text}")
        if bad:
            sys.exit(f"small_models: findings the model should support went the other way: {bad}")


if __name__ == "__main__":
    main()
