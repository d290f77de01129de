#!/usr/bin/env python3
"""What the MosaicML rows say about the attention kernel (issue #16).

For each MosaicML validation row at sequence >= MIN_SEQ, llmplan's step is
split into the attention core (forward, its recomputation under full
activation checkpointing, backward: `layer_ops_s`) and the rest. If the rest
were right, the measured iteration leaves `measured - rest` for attention;
its speed is reported in the FlashAttention benchmarks' convention (causal
forward 2 s^2 h per sequence and layer, backward 2.5x forward), beside the
speed llmplan's kernel tables give for `triton` (what validate states; since
stop 29 FlashAttention-2's forward and v1's backward, docs/profile-format.md) and `flash2` at
the same shapes (sustained clock included).
Nothing is fitted: this is a diagnosis, not a calibration.

With --readme FILE (llm-foundry's scripts/train/benchmarking/README.md; the
validation rows cite it at 495218376: `git show 495218376:scripts/train/
benchmarking/README.md` in a clone) the rows of the README's sections that
are not in the validation set are run the same way (scripts/validate
mosaic_run, the setup of each section from MOSAIC_SECTIONS): every row's
error, then MAPE per section and by sequence band. They are other published
measurements, never part of a fit.

usage: scripts/mosaic_attention.py [--build DIR] [--min-seq N] [--readme FILE]
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


# MPT shapes (n_layers, d_model, n_heads) of llm-foundry's
# scripts/train/yamls/pretrain/mpt-*.yaml at 495218376; expansion_ratio 4,
# vocab_size 50368 in every one
MPT_SHAPES = {"125m": (12, 768, 12), "350m": (24, 1024, 16), "760m": (24, 1536, 12),
              "1b": (24, 2048, 16), "3b": (32, 2560, 20), "7b": (32, 4096, 32),
              "13b": (40, 5120, 40), "30b": (48, 7168, 56), "70b": (80, 8192, 64)}
README_SECTIONS = {"A100 80GB with 1600 Gbps node-node interconnect (RoCE)": "A100-80",
                   "H100 80GB BF16": "H100-BF16", "H100 80GB FP8": "H100-FP8",
                   "H100 80GB BF16 (Large Scale, >= 128 GPUs)": "H100-large"}


def readme_rows(v, path):
    """Rows of the README sections not in the validation set, as validate's."""
    with open(path) as f:
        parts = f.read().split("\n## ")
    out = []
    for part in parts:
        lines = part.split("\n")
        sec = lines[0].strip()
        if sec not in README_SECTIONS:
            continue
        table = [ln for ln in lines[1:] if ln.startswith("|")]
        hdr = [c.strip() for c in table[0].strip().strip("|").split("|")]
        for n, ln in enumerate(table[2:]):
            c = dict(zip(hdr, [x.strip() for x in ln.strip().strip("|").split("|")]))
            L, H, A = MPT_SHAPES[c["Model"]]
            S, gpus = int(c["SeqLen (T)"]), int(c["# GPUs"])
            mb, gb = int(c["MicroBatchSize"]), int(c["GlobalBatchSize"])
            gpu = "H100" if "h100" in c["GPU"] else "A100-80GB"
            # the A100 80GB table is two runs: llm-foundry PR #543 (b2a43a147)
            # replaced every row but the 70b's with 'amp_bf16 | DEFAULT' rows
            # measured by the H100 BF16 table's sweep; its 70b rows are still
            # mosaicml/examples PR #271's 'bf16 | PURE'
            setup = ("foundry-543" if gpu == "A100-80GB" and c["MP Mode"] == "DEFAULT"
                     else None)
            run, asm, excl = v.mosaic_run(
                "MPT-" + c["Model"], L, H, A, S, 50368, gpus, mb, gb,
                "full" if c["Activation Checkpointing"] == "True" else "none", gpu,
                c["Sharding Strategy"] == "SHARD_GRAD_OP", "fp8" in c["Precision"],
                f"README section '{sec}'", setup)
            r = v.row(f"{README_SECTIONS[sec]}-{n:02d}", sec, c["Model"], run,
                      gb * S / float(c["Throughput (T/s)"]), asm, exclude=excl)
            out.append(r)
    return out


def readme_report(v, llmplan, path):
    rows = readme_rows(v, path)
    kept = [r for r in rows if not r["exclude"]]
    res = v.simulate(kept, llmplan, None)
    print("llm-foundry README rows outside the validation set (not fitted); "
          "err% = predicted / measured - 1")
    print(f"{'row':13} {'model':5} {'seq':>6} {'gpus':>4} {'mb':>3} {'rc':4} {'err%':>6} "
          f"{'attn%':>5} {'implied':>8} {'triton':>7}")
    errs = {}
    for r, o in zip(kept, res):
        m, par = r["run"]["model"], r["run"]["parallel"]
        s, h, L, rc = m["seq_len"], m["hidden"], m["layers"], par["recompute"]
        t_att = attention_s(o, L, rc)
        nf = 2 if rc == "full" else 1
        work = o["microbatches"] * L * par["micro_batch"] * 2.0 * s * s * h * (nf + 2.5)
        rest = o["iteration_time_s"] - t_att
        implied = work / (r["measured_s"] - rest) / 1e12 if r["measured_s"] > rest else float("nan")
        err = 100 * (o["iteration_time_s"] / r["measured_s"] - 1)
        band = "<=2k" if s <= 2048 else "4k-8k" if s <= 8192 else "16k-64k"
        errs.setdefault(r["source"], []).append((band, err))
        print(f"{r['id']:13} {r['group']:5} {s:6d} {par['dp']:4d} {par['micro_batch']:3d} "
              f"{rc[:4]:4} {err:+6.1f} {100 * t_att / o['iteration_time_s']:5.0f} "
              f"{implied:8.1f} {work / t_att / 1e12:7.1f}")
    print("\nMAPE % (rows): all | s <= 2048 | 4k-8k | 16k-64k; excluded rows are not counted")
    for sec, es in errs.items():
        def mape(b):
            xs = [abs(e) for bb, e in es if b in (None, bb)]
            return f"{sum(xs) / len(xs):5.1f} ({len(xs)})" if xs else "    - (0)"
        print(f"  {sec}: {mape(None)} | {mape('<=2k')} | {mape('4k-8k')} | {mape('16k-64k')}")
    for r in rows:
        if r["exclude"]:
            print(f"  excluded {r['id']} {r['group']} seq {r['run']['model']['seq_len']}: "
                  f"{r['exclude'][:90]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--min-seq", type=int, default=4096)
    ap.add_argument("--readme", help="llm-foundry's benchmarking README.md (see above)")
    a = ap.parse_args()
    v = importlib.machinery.SourceFileLoader(
        "validate", os.path.join(ROOT, "scripts", "validate")).load_module()
    llmplan = os.path.join(a.build, "search", "llmplan")
    if a.readme:
        readme_report(v, llmplan, a.readme)
        return
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
