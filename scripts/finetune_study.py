#!/usr/bin/env python3
"""Xia et al. 2024's question with llmplan: the cost of fine-tuning
Mixtral-8x7B with QLoRA (LoRA rank 16 on the experts and routers, 4-bit
base, gradient checkpointing, framework hf) on one GPU of each type, for 10
epochs of 15k queries of median length 148 (GSM8K), at Xia's CUDO prices
(2024) and at the presets' current prices; which GPU is cheapest at each.

usage: scripts/finetune_study.py [--build DIR] [--curves] [--ops]
--curves adds the step time per batch against the per-batch throughputs Xia
et al. published with their code (not fitted on: a comparison only), per query
and per padded token, and the H100's points on the SXM preset (a what-if: the
paper does not say which form); --ops
llmplan's operator classes per layer at batch 1, 2, 4, 8 on the A40.
The batch per GPU is Xia's measured maximum (Table IV: 4 on the A40, 17 on
the A100 80GB and H100) and llmplan's own --max-batch is printed next to it:
the batch that must fit holds the longest query, padded to LLaMA-Factory's
cutoff_len 1024 of Xia's scripts (dataset max_len; the time uses the median).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPUS = [("A40", "a40-8x-pcie", 4), ("A100 80GB", "dgx-a100-80gb", 17), ("H100", "h100-pcie-8x", 17)]
PRICES = ["cudo-2024", "current"]


# Table IV's dataset (GSM8K, median 148 tokens) as a length distribution
# (scripts/dataset_lengths.py on Xia's gsm8k.jsonl; scripts/validate's rows
# use the same file): each batch is padded to its longest query
GSM8K = os.path.join(ROOT, "data", "datasets", "gsm8k-xia2024.json")


def gsm8k():
    with open(GSM8K) as f:
        return {"histogram": json.load(f)["histogram"],
                "source": "data/datasets/gsm8k-xia2024.json"}


# Commonsense-15K (median 79 tokens) rebuilt from its eight tasks
# (scripts/dataset_lengths.py; scripts/validate's X10-X13 use the same file)
COMMONSENSE = os.path.join(ROOT, "data", "datasets", "commonsense15k-xia2024.json")


def shape(median, commonsense=False):
    """The length distribution of a series: Commonsense-15K's own for a
    Commonsense series, else GSM8K's scaled to the series' median (MATH's
    math_14k.json is not readable)."""
    if commonsense:
        with open(COMMONSENSE) as f:
            return {"histogram": json.load(f)["histogram"],
                    "source": "data/datasets/commonsense15k-xia2024.json"}
    return scaled(gsm8k(), median)


def scaled(dist, median):
    """A length distribution of median 148 scaled to another median, each
    length rounded up to the collator's multiple of 8 (bins that meet merge)."""
    out = []
    for n, f in dist["histogram"]:
        n = -(-n * median // 148 // 8) * 8 if median != 148 else n
        if out and out[-1][0] == n:
            out[-1][1] += f
        else:
            out.append([n, f])
    return dict(dist, histogram=out)


def run(system, batch, prices, median=148, pad=None, dist=None):
    model = {"name": "mixtral-8x7b-ft", "layers": 32, "hidden": 4096, "heads": 32,
             "kv_heads": 8, "ffn_hidden": 14336, "vocab": 32000, "seq_len": median,
             "ffn_act": "swiglu", "norm": "rmsnorm", "position": "rotary",
             "tied_embeddings": False, "bias": False, "dropout": False,
             "moe": {"experts": 8, "top_k": 2, "ffn_hidden": 14336}}
    return {"model": model, "system": system, **({"prices": prices} if prices else {}),
            "parallel": {"micro_batch": batch, "recompute": "full"},
            "training": {"global_batch": batch,
                         "finetune": {"method": "lora", "rank": 16, "base_bits": 4,
                                      "targets": "moe"},
                         "dataset": dict({"queries": 15000, "epochs": 10},
                                         **(dist or {"median_len": median}),
                                         **({"pad_multiple": pad} if pad else {}))},
            "framework": "hf"}


# Xia et al.'s sparse (2 of 8) Mixtral throughputs per batch, queries/s,
# as their repository plots them (stsxxx/finetune, analytical_model/
# analytical_throughput/plot.py "Mixtral-CS" and "Mixtral-MATH", A40;
# analytical_gpu/plot.py, titled "Mixtral-CS-A100-80GB" and "Mixtral-CS-H100"
# although analytical_yuhan names the same figures mixtral_math_*: their b=17
# points are Table IV's 2.74 and 4.90; the A40 MATH point at 4, 1.005, is
# Table IV's 1.01). Each is 1000 queries over the Trainer's train_runtime
# (LLaMA-Factory/throughput.py; copy_for_tune/utils.py keeps 1000 queries).
# The median lengths are the paper's: 79 for Commonsense-15K, 148 for the
# Table IV rows (whose dataset the sources name differently).
XIA_CURVES = [
    ("A40 CS", "a40-8x-pcie", 79,
     [(1, 0.341252845), (2, 0.6567373669), (3, 0.9263685242), (4, 1.134794525),
      (5, 1.306288801), (6, 1.460184208), (7, 1.578898838), (8, 1.655243555)]),
    ("A40 MATH", "a40-8x-pcie", 148,
     [(1, 0.3354076283), (2, 0.6216146478), (3, 0.8325194069), (4, 1.005476933)]),
    ("A100 80GB", "dgx-a100-80gb", 148,
     [(1, 0.4736763151), (2, 0.8774646886), (3, 1.1201166), (5, 1.708054828),
      (6, 1.800397168), (7, 2.031587942), (8, 2.189323022), (9, 2.282276004),
      (10, 2.305001484), (13, 2.567787669), (14, 2.589650462), (15, 2.678787645),
      (16, 2.693921973), (17, 2.739929458)]),
    ("H100", "h100-pcie-8x", 148,
     [(1, 0.6716115184), (2, 1.277928978), (3, 1.491977043), (4, 1.79810839),
      (5, 2.167855772), (7, 2.634467155), (8, 2.936952442), (9, 3.152775956),
      (11, 4.135249112), (12, 4.311939502), (14, 4.394074678), (15, 4.666207512),
      (16, 4.635430356), (17, 4.89877178)]),
]
# the paper does not say which H100 form ran: the same points on the SXM
# preset, a what-if printed by --curves only
XIA_CURVES.append(("H100 SXM?", "dgx-h100", 148, XIA_CURVES[-1][3]))
# padded lengths tried when asking what batch length would give Xia's step
PAD_GRID = [64, 80, 96, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024]


def line_fit(xs, ys):
    """Least squares y = a + b x: the fixed part and the part per query."""
    n = float(len(xs))
    mx, my = sum(xs) / n, sum(ys) / n
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def curves(llmplan, env):
    """Step time per batch, Xia's against llmplan's (every query at the
    median), the fixed part and the part per query of each, and the padded
    length a batch would need for llmplan to take Xia's time at the largest
    batch (llmplan pads each batch to its longest query: dataset histogram)."""
    runs, pads, dist = [], [], []
    for name, s, med, pts in XIA_CURVES:
        runs += [run(s, b, None, med) for b, _ in pts]
        pads += [run(s, pts[-1][0], None, L, pad=1) for L in PAD_GRID]
        dist += [run(s, b, None, dist=shape(med, name.endswith(" CS"))) for b, _ in pts]
    p = subprocess.run([llmplan, "simulate", "--batch", "-"],
                       input="\n".join(json.dumps(r) for r in runs + pads + dist) + "\n",
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(p.stderr)
    res = [json.loads(x) for x in p.stdout.splitlines()]
    step, padded = res[:len(runs)], res[len(runs):len(runs) + len(pads)]
    shaped = res[len(runs) + len(pads):]
    print("\nStep time per batch, s: Xia et al.'s (1000 queries / train_runtime, their "
          "repository) vs llmplan's (every query at the median)")
    print(f"{'series':<10} {'median':>6}  {'batch: Xia / llmplan s':<60}")
    i = j = 0
    fits, shaped_runs = [], {}
    for name, _, med, pts in XIA_CURVES:
        xs = [b for b, _ in pts]
        xia = [b / q for b, q in pts]
        lp = [r["iteration_time_s"] for r in step[i:i + len(pts)]]
        sh = [r["iteration_time_s"] for r in shaped[i:i + len(pts)]]
        fits.append((name, med, line_fit(xs, xia), line_fit(xs, sh), xs, xia, sh))
        shaped_runs[name] = shaped[i:i + len(pts)]
        i += len(pts)
        print(f"{name:<10} {med:>6}  " + " ".join(f"{b}:{x:.2f}/{y:.2f}"
                                                  for b, x, y in zip(xs, xia, lp)))
        (xa, xb), (la, lb) = line_fit(xs, xia), line_fit(xs, lp)
        top = [r.get("iteration_time_s", 0.0) if r.get("feasible") else None
               for r in padded[j:j + len(PAD_GRID)]]
        j += len(PAD_GRID)
        k = next((k for k, t in enumerate(top) if t is not None and t >= xia[-1]), None)
        if k == 0:
            need_s = f"<= {PAD_GRID[0]} (llmplan at {PAD_GRID[0]}: {top[0]:.2f} s)"
        elif k is None:
            need_s = f"> {max(L for L, t in zip(PAD_GRID, top) if t is not None)} or out of memory"
        else:  # linear between the grid's lengths around Xia's time
            f = (xia[-1] - top[k - 1]) / (top[k] - top[k - 1])
            need_s = f"~{PAD_GRID[k - 1] + f * (PAD_GRID[k] - PAD_GRID[k - 1]):.0f}"
        print(f"{'':<10} {'':>6}  fixed + per query: Xia {xa:.2f} + {xb:.3f} b, llmplan "
              f"{la:.2f} + {lb:.3f} b (x{xb / lb:.1f}); at batch {xs[-1]} llmplan needs "
              f"batches padded to {need_s} tokens for Xia's {xia[-1]:.2f} s")
    print("\nThe same with each batch padded to its longest query: Commonsense-15K's lengths "
          "(data/datasets/commonsense15k-xia2024.json) for A40 CS, GSM8K's shape "
          "(data/datasets/gsm8k-xia2024.json) scaled to the series' median for the others (a "
          "what-if: MATH's lengths are not readable)")
    for name, med, (xa, xb), (la, lb), xs, xia, sh in fits:
        print(f"{name:<10} {med:>6}  " + " ".join(f"{b}:{x:.2f}/{y:.2f}"
                                                  for b, x, y in zip(xs, xia, sh)))
        print(f"{'':<10} {'':>6}  padded length (tokens): " + " ".join(
            f"{b}:{r['seq_len']}" for b, r in zip(xs, shaped_runs[name])))
        mape = 100.0 * sum(abs(y / x - 1) for x, y in zip(xia, sh)) / len(xs)
        print(f"{'':<10} {'':>6}  fixed + per query: Xia {xa:.2f} + {xb:.3f} b, llmplan "
              f"{la:.2f} + {lb:.3f} b (x{xb / lb:.1f}); step MAPE {mape:.1f}%")
    # the same against the padded tokens of each batch (b x the expected
    # longest of b queries, llmplan's seq_len): if both steps grow with the
    # same work per token, the ratio of the slopes from one GPU to the next
    # follows the GPUs' speeds alike for Xia and llmplan
    print("\nStep time per padded token of the batch (b x expected longest of b, the same shape), "
          "ms per token; the last column: this GPU's slope over the next row's")
    i, prev = 0, None
    rows = []
    for name, _, med, pts in XIA_CURVES:
        sh = shaped[i:i + len(pts)]
        i += len(pts)
        toks = [b * r["seq_len"] for (b, _), r in zip(pts, sh)]
        xs = line_fit(toks, [b / q for b, q in pts])[1]
        ls = line_fit(toks, [r["iteration_time_s"] for r in sh])[1]
        rows.append((name, med, xs, ls))
    for k, (name, med, xs, ls) in enumerate(rows):
        nxt = (rows[k + 1] if k + 1 < len(rows) and rows[k + 1][1] == med and
               not rows[k + 1][0].endswith("?") else None)
        ratio = (f"  Xia x{xs / nxt[2]:.2f}, llmplan x{ls / nxt[3]:.2f} over {nxt[0]}"
                 if nxt else "")
        print(f"{name:<10} {med:>6}  Xia {1e3 * xs:.3f}, llmplan {1e3 * ls:.3f} "
              f"(x{xs / ls:.2f}){ratio}")


# Xia et al.'s BlackMamba-630M/2.8B throughputs per batch on Commonsense-15K,
# queries/s (stsxxx/finetune analytical_model/analytical_throughput/plot.py,
# "Mamba-CS", A40): dense (8 of 8 experts) batches 1-6, sparse (2 of 8)
# batches 1-20
MAMBA_CS = [
    ("dense", 8, [(1, 2.324241983), (2, 4.435789726), (3, 5.921728955), (4, 6.994841305),
                  (5, 7.768480633), (6, 7.877675456)]),
    ("sparse", 2, [(1, 2.40759297), (2, 4.586554241), (3, 6.299510213), (4, 8.12722686),
                   (5, 9.305433163), (6, 10.46236322), (7, 11.17621879), (8, 12.11379701),
                   (9, 12.59296758), (10, 12.89725147), (11, 13.31887791), (12, 13.67491446),
                   (13, 13.82070674), (14, 14.1110796), (15, 14.02404563), (16, 14.08680855),
                   (17, 14.40473858), (18, 14.85546377), (19, 14.853169), (20, 14.87415719)]),
]


def blackmamba(system, top_k, batch, dist):
    """BlackMamba fully fine-tuned as scripts/validate's row X14 runs it: the
    preset, untied output layer (Xia's loader clones the embedding), its
    SwitchMLP loop (moe_impl "switch")."""
    with open(os.path.join(ROOT, "data", "models", "blackmamba-630m-2.8b.json")) as f:
        bm = json.load(f)
    bm["moe"]["top_k"] = top_k
    bm["tied_embeddings"] = False
    return {"model": bm, "system": system, "framework": {"name": "hf", "moe_impl": "switch"},
            "parallel": {"micro_batch": batch},
            "training": {"global_batch": batch, "dataset": dict({"queries": 1000}, **dist)}}


def mamba_curves(llmplan, env):
    """BlackMamba's step time per batch on the A40 against Xia's, every query
    at the median 79 and each batch padded to its longest (Commonsense-15K's
    lengths). A batch is infeasible when the batch holding the longest query
    does not fit (llmplan's memory rule); Xia's 1000-query runs may never have
    drawn it."""
    dists = [{"median_len": 79}, shape(79, commonsense=True)]
    runs = [blackmamba("a40-8x-pcie", k, b, d) for d in dists for _, k, pts in MAMBA_CS
            for b, _ in pts]
    p = subprocess.run([llmplan, "simulate", "--batch", "-"],
                       input="\n".join(json.dumps(r) for r in runs) + "\n",
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(p.stderr)
    res = iter(json.loads(x) for x in p.stdout.splitlines())
    per_token = []
    print("\nBlackMamba-630M/2.8B full fine-tuning on the A40, Commonsense-15K (Xia's Mamba-CS "
          "points): step s, Xia / llmplan (- where the batch holding the longest query does "
          "not fit)")
    for label in ("every query at the median 79", "each batch padded to its longest "
                  "(data/datasets/commonsense15k-xia2024.json)"):
        print(label)
        for name, _, pts in MAMBA_CS:
            cells, xs, xia, lp, toks = [], [], [], [], []
            for b, q in pts:
                r = next(res)
                t = r["iteration_time_s"] if r.get("feasible") else None
                cells.append(f"{b}:{b / q:.2f}/" + (f"{t:.2f}" if t else "-"))
                if t:
                    xs.append(b)
                    xia.append(b / q)
                    lp.append(t)
                    toks.append(b * r["seq_len"])
            print(f"  {name:<6} " + " ".join(cells))
            (xa, xb), (la, lb) = line_fit(xs, xia), line_fit(xs, lp)
            print(f"  {'':<6} fixed + per query over the feasible batches ({xs[0]}-{xs[-1]}): "
                  f"Xia {xa:.3f} + {1e3 * xb:.1f} ms b, llmplan {la:.3f} + {1e3 * lb:.1f} ms b")
            if label.startswith("each"):
                per_token.append((name, xs, line_fit(toks, xia)[1], line_fit(toks, lp)[1]))
    # against the padded tokens of each batch (b x llmplan's expected longest
    # of b, the same lengths for both): the batches' ranges no longer matter
    print("per padded token of the batch, ms (the same feasible batches):")
    for name, xs, xk, lk in per_token:
        print(f"  {name:<6} batches {xs[0]}-{xs[-1]}: Xia {1e3 * xk:.3f}, llmplan {1e3 * lk:.3f} "
              f"(x{xk / lk:.2f})")


def ops(llmplan, env):
    """Per decoder layer and pass, llmplan's operator classes (layer_ops_s)
    on the A40 at batch 1, 2, 4, 8, every query at the median 148 and each
    batch padded to its longest (GSM8K's lengths): which of them grow with
    the batch. The routed tokens per expert are T top_k / experts."""
    bs = [1, 2, 4, 8]
    runs = [run("a40-8x-pcie", b, "cudo-2024") for b in bs]
    runs += [run("a40-8x-pcie", b, "cudo-2024", dist=gsm8k()) for b in bs]
    p = subprocess.run([llmplan, "simulate", "--batch", "-"],
                       input="\n".join(json.dumps(r) for r in runs) + "\n",
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(p.stderr)
    res = [json.loads(x) for x in p.stdout.splitlines()]
    print("\nPer layer, ms (A40, Mixtral QLoRA, recompute full): forward / backward "
          "(layer_ops_s; the recomputed forward, a second forward, is not in the backward); "
          "host beyond: host time not hidden behind the kernels")
    print(f"{'lengths':<8} {'b':>2} {'tokens':>6} {'/expert':>7} {'gemm':>13} {'memory':>13} "
          f"{'attention':>11} {'host beyond':>13} {'step s':>7}")
    for k, r in enumerate(res):
        lo, T = r["layer_ops_s"], bs[k % 4] * r["seq_len"]
        cell = [f"{1e3 * lo['forward'][c]:5.2f}/{1e3 * lo['backward'][c]:5.2f}"
                for c in ("gemm", "memory_bound", "attention", "kernel_overhead")]
        print(f"{'median' if k < 4 else 'GSM8K':<8} {bs[k % 4]:>2} {T:>6} {T * 2 / 8:>7.0f} "
              f"{cell[0]:>13} {cell[1]:>13} {cell[2]:>11} {cell[3]:>13} "
              f"{r['iteration_time_s']:>7.3f}")


def with_longest(r, longest):
    """The same run whose batch must fit with its longest query (max_len)."""
    r = json.loads(json.dumps(r))
    r["training"]["dataset"]["max_len"] = longest
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--curves", action="store_true",
                    help="the step time per batch against Xia et al.'s per-batch throughputs")
    ap.add_argument("--ops", action="store_true",
                    help="llmplan's operator classes per layer at batch 1-8 on the A40")
    a = ap.parse_args()
    runs = [run(s, b, p, dist=gsm8k()) for p in PRICES for _, s, b in GPUS]
    # llmplan's maximum batch: the batch holding the longest query, padded to
    # the cutoff_len 1024 of Xia's scripts (Xia's batches run at the median)
    runs += [with_longest(run(s, 1, PRICES[0]), 1024) for _, s, _ in GPUS]
    env = dict(os.environ, LLMPLAN_DATA=os.environ.get("LLMPLAN_DATA", os.path.join(ROOT, "data")))
    p = subprocess.run([os.path.join(a.build, "search", "llmplan"), "simulate", "--batch", "-",
                        "--max-batch"], input="\n".join(json.dumps(r) for r in runs) + "\n",
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(p.stderr)
    res = [json.loads(x) for x in p.stdout.splitlines()]
    top = [r["max_batch"] for r in res[len(PRICES) * len(GPUS):]]
    print("Mixtral-8x7B QLoRA, 10 epochs x 15k queries (median 148 tokens, longest 1024), one "
          "GPU, framework hf")
    for i, price in enumerate(PRICES):
        print(f"\nprices: {price}")
        print(f"{'GPU':<10} {'batch':>5} {'llmplan max':>11} {'queries/s':>9} {'hours':>7} "
              f"{'$/h':>6} {'cost $':>8}")
        rows = []
        for (g, s, b), r, mx in zip(GPUS, res[i * len(GPUS):(i + 1) * len(GPUS)], top):
            hours = r["training"]["gpu_hours"]
            usd = r["training"]["cost_usd"]
            rows.append((usd, g))
            print(f"{g:<10} {b:>5} {mx:>11} {r['queries_per_s']:>9.2f} {hours:>7.2f} "
                  f"{usd / hours:>6.2f} {usd:>8.2f}")
        print("cheapest: " + min(rows)[1] + "; ranking " + " < ".join(g for _, g in sorted(rows)))
    # Xia's Fig. 4: BlackMamba full fine-tuning, batch 1, the profiling
    # set's 128 tokens, sparse (2 of 8 experts); the stages per GPU
    # (blackmamba(): the SwitchMLP loop, as scripts/validate runs row X14)
    bruns = [blackmamba(s, 2, 1, {"median_len": 128}) for _, s, _ in GPUS]
    p = subprocess.run([os.path.join(a.build, "search", "llmplan"), "simulate", "--batch", "-",
                        "--max-batch"], input="\n".join(json.dumps(r) for r in bruns) + "\n",
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(p.stderr)
    print("\nBlackMamba-630M/2.8B full fine-tuning (2 of 8 experts), batch 1 x 128 tokens, "
          "framework hf")
    print(f"{'GPU':<10} {'step s':>7} {'forward':>8} {'backward':>8} {'optimizer':>9} "
          f"{'opt share':>9} {'MoE share':>9} {'Mamba share':>11} {'llmplan max':>11}")
    for (g, _, _), line in zip(GPUS, p.stdout.splitlines()):
        r = json.loads(line)
        st, t = r["stages_s"], r["iteration_time_s"]
        print(f"{g:<10} {t:>7.3f} {st['forward']:>8.3f} {st['backward']:>8.3f} "
              f"{st['optimizer']:>9.3f} {st['optimizer'] / t:>9.2f} {st['moe'] / t:>9.2f} "
              f"{st['mamba'] / t:>11.2f} {r['max_batch']:>11}")
    if a.curves:
        curves(os.path.join(a.build, "search", "llmplan"), env)
        mamba_curves(os.path.join(a.build, "search", "llmplan"), env)
    if a.ops:
        ops(os.path.join(a.build, "search", "llmplan"), env)


if __name__ == "__main__":
    main()
