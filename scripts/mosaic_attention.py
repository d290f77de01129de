#!/usr/bin/env python3
"""What the MosaicML rows say about the attention kernel (issue #16).

For each MosaicML validation row at sequence >= MIN_SEQ, llmplan's step is
split into the attention core (forward, its recomputation under full
activation checkpointing, backward: `layer_ops_s`) and the rest. If the rest
were right, the measured iteration leaves `measured - rest` for attention;
its speed is reported in the FlashAttention benchmarks' convention (causal
forward 2 s^2 h per sequence and layer, backward 2.5x forward), beside the
speed llmplan's kernel tables give for `triton` (what validate states; since
2026-12 the FlashAttention v1 tables, docs/profile-format.md) and `flash2` at
the same shapes (sustained clock included).
Nothing is fitted: this is a diagnosis, not a calibration.

usage: scripts/mosaic_attention.py [--build DIR] [--min-seq N]
"""
import argparse
import copy
import importlib.machinery
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def attention_s(out, layers, recompute):
    """Attention-core seconds of one iteration from simulate's layer_ops_s."""
    lo = out["layer_ops_s"]
    nf = 2 if recompute == "full" else 1
    return out["microbatches"] * layers * (nf * lo["forward"]["attention"] +
                                           lo["backward"]["attention"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--min-seq", type=int, default=4096)
    a = ap.parse_args()
    v = importlib.machinery.SourceFileLoader(
        "validate", os.path.join(ROOT, "scripts", "validate")).load_module()
    llmplan = os.path.join(a.build, "search", "llmplan")
    rows = [r for r in v.published_rows() if r["source"] == "mosaicml" and not r["exclude"]
            and r["run"]["model"]["seq_len"] >= a.min_seq]
    rows.sort(key=lambda r: (r["run"]["model"]["hidden"] // r["run"]["model"]["heads"],
                             r["run"]["model"]["seq_len"], r["run"]["model"]["hidden"]))
    res = {"triton": v.simulate(rows, llmplan, None)}
    for k in ("flash2",):
        alt = copy.deepcopy(rows)
        for r in alt:
            r["run"]["training"]["attention"] = k
        res[k] = v.simulate(alt, llmplan, None)
    print("attention TFLOP/s per GPU (FlashAttention benchmark convention, causal); "
          "'implied' = the measured time minus llmplan's non-attention time")
    print(f"{'row':6} {'model':9} {'seq':>6} {'d':>4} {'rc':4} {'err%':>6} {'attn%':>5} "
          f"{'implied':>8} {'triton':>7} {'flash2':>7}")
    for n, r in enumerate(rows):
        m, par = r["run"]["model"], r["run"]["parallel"]
        s, h, L = m["seq_len"], m["hidden"], m["layers"]
        rc = par["recompute"]
        o = res["triton"][n]
        t_att = attention_s(o, L, rc)
        rest = o["iteration_time_s"] - t_att
        nf = 2 if rc == "full" else 1
        work = o["microbatches"] * L * par["micro_batch"] * 2.0 * s * s * h * (nf + 2.5)
        tf = {k: work / attention_s(res[k][n], L, rc) / 1e12 for k in res}
        implied = work / (r["measured_s"] - rest) / 1e12
        print(f"{r['id']:6} {m['name'][:9]:9} {s:6d} {h // m['heads']:4d} {rc[:4]:4} "
              f"{100 * (o['iteration_time_s'] / r['measured_s'] - 1):+6.1f} "
              f"{100 * t_att / o['iteration_time_s']:5.0f} {implied:8.1f} {tf['triton']:7.1f} "
              f"{tf['flash2']:7.1f}")


if __name__ == "__main__":
    main()
