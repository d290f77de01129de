#!/usr/bin/env python3
"""Xia et al. 2024's question with llmplan: the cost of fine-tuning
Mixtral-8x7B with QLoRA (LoRA rank 16 on the experts and routers, 4-bit
base, gradient checkpointing, framework hf) on one GPU of each type, for 10
epochs of 15k queries of median length 148 (GSM8K), at Xia's CUDO prices
(2024) and at the presets' current prices; which GPU is cheapest at each.

usage: scripts/finetune_study.py [--build DIR]
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


def run(system, batch, prices):
    model = {"name": "mixtral-8x7b-ft", "layers": 32, "hidden": 4096, "heads": 32,
             "kv_heads": 8, "ffn_hidden": 14336, "vocab": 32000, "seq_len": 148,
             "ffn_act": "swiglu", "norm": "rmsnorm", "position": "rotary",
             "tied_embeddings": False, "bias": False, "dropout": False,
             "moe": {"experts": 8, "top_k": 2, "ffn_hidden": 14336}}
    return {"model": model, "system": system, "prices": prices,
            "parallel": {"micro_batch": batch, "recompute": "full"},
            "training": {"global_batch": batch,
                         "finetune": {"method": "lora", "rank": 16, "base_bits": 4,
                                      "targets": "moe"},
                         "dataset": {"queries": 15000, "epochs": 10, "median_len": 148}},
            "framework": "hf"}


def with_longest(r, longest):
    """The same run whose batch must fit with its longest query (max_len)."""
    r = json.loads(json.dumps(r))
    r["training"]["dataset"]["max_len"] = longest
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    runs = [run(s, b, p) for p in PRICES for _, s, b in GPUS]
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
    with open(os.path.join(ROOT, "data", "models", "blackmamba-630m-2.8b.json")) as f:
        bm = json.load(f)
    bm["moe"]["top_k"] = 2
    bm["tied_embeddings"] = False  # Xia's loader clones the embedding into output_layer
    bruns = [{"model": bm, "system": s, "framework": "hf", "parallel": {"micro_batch": 1},
              "training": {"global_batch": 1, "dataset": {"queries": 1000, "median_len": 128}}}
             for _, s, _ in GPUS]
    p = subprocess.run([os.path.join(a.build, "search", "llmplan"), "simulate", "--batch", "-",
                        "--max-batch"], input="\n".join(json.dumps(r) for r in bruns) + "\n",
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(p.stderr)
    print("\nBlackMamba-630M/2.8B full fine-tuning (2 of 8 experts), batch 1 x 128 tokens, "
          "framework hf")
    print(f"{'GPU':<10} {'step s':>7} {'forward':>8} {'backward':>8} {'optimizer':>9} "
          f"{'opt share':>9} {'MoE share':>9} {'llmplan max':>11}")
    for (g, _, _), line in zip(GPUS, p.stdout.splitlines()):
        r = json.loads(line)
        st, t = r["stages_s"], r["iteration_time_s"]
        print(f"{g:<10} {t:>7.3f} {st['forward']:>8.3f} {st['backward']:>8.3f} "
              f"{st['optimizer']:>9.3f} {st['optimizer'] / t:>9.2f} {st['moe'] / t:>9.2f} "
              f"{r['max_batch']:>11}")


if __name__ == "__main__":
    main()
