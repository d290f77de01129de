#!/usr/bin/env python3
"""vTrain's measurements split into a cost per micro-batch and a fixed cost per
iteration: for every (hidden, layers, TP, DP, micro-batch) group with PP = 1,
a straight line through the rows' iteration time against the number of
micro-batches (global batch / (micro-batch x DP)). Evidence for
docs/calibration.md: the per-micro-batch cost does not depend on DP, and it
barely grows from micro-batch 1 to 2 (a host-side floor) before the GPU work
takes over.

With --per-layer ROWS.csv (the --rows output of scripts/validate: its V rows
are vTrain's rows in file order), the other cut: for every (hidden, PP, TP, DP,
micro-batch, global batch) group with at least two layer counts, a
least-squares line through iteration time against the layer count, measured
and predicted, printed per layer and per micro-batch (the slope over the
micro-batches of the iteration) and as the fixed part (the intercept: the
embedding, logits and loss, the optimizer, the DP reduction, per-iteration
host work; with PP > 1 also the fill, as the layers per stage set it),
whole and per token of a model replica. Where the host is hidden (large
micro-batches) the measured slope is the GPU's time per layer; "kernels" is llmplan's kernel time for one
layer and one micro-batch (ROWS.csv's layer_kernel_ms: GEMM, attention,
memory-bound and collectives, forward and backward, no host time).

usage: scripts/vtrain_per_microbatch.py [--layers 24]
       scripts/vtrain_per_microbatch.py --per-layer ROWS.csv [--gb 32]
"""
import argparse
import csv
import os
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fit(pts):
    """least-squares slope and intercept of [(x, y), ...]"""
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    sxy = sum((x - mx) * (y - my) for x, y in pts)
    return sxy / sxx, my - sxy / sxx * mx


def per_layer(rows, path, gb):
    pred, kern = {}, {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["source"] == "vtrain":
                i = int(r["row_id"][1:]) - 1
                pred[i] = 1e3 * float(r["predicted_s"])
                kern[i] = float(r.get("layer_kernel_ms") or "nan")
    if len(pred) != len(rows):
        sys.exit(f"vtrain_per_microbatch: {path}: {len(pred)} vtrain rows, expected {len(rows)}")
    groups = defaultdict(list)
    for i, (gpus, g, mb, h, heads, l, s, tp, dp, pp, ms) in enumerate(rows):
        if int(g) != gb:
            continue
        groups[(int(h), int(pp), int(tp), int(dp), int(mb), int(s))].append(
            (int(l), float(ms), pred[i], kern[i]))
    print(f"global batch {gb}; ms per layer per micro-batch, fixed ms per iteration and "
          f"fixed us per token of a replica")
    print(f"{'hidden':>6} {'PP':>3} {'TP':>3} {'DP':>3} {'mb':>3} {'layers':>8} {'measured':>9} "
          f"{'llmplan':>8} {'ratio':>6} {'kernels':>8} {'fixed meas':>11} {'llmplan':>8} "
          f"{'us/tok':>7} {'llmplan':>8}")
    for (h, pp, tp, dp, mb, s), pts in sorted(groups.items()):
        if len({l for l, _, _, _ in pts}) < 2:
            continue
        m = gb // (mb * dp)
        tok = gb // dp * s
        sm, im = fit([(l, t) for l, t, _, _ in pts])
        sp, ip = fit([(l, p) for l, _, p, _ in pts])
        ls = sorted({l for l, _, _, _ in pts})
        kms = sum(k for _, _, _, k in pts) / len(pts)
        print(f"{h:>6} {pp:>3} {tp:>3} {dp:>3} {mb:>3} {ls[0]:>3}-{ls[-1]:<4} {sm / m:>9.2f} "
              f"{sp / m:>8.2f} {sm / sp:>6.2f} {kms:>8.2f} {im:>11.1f} {ip:>8.1f} "
              f"{1e3 * im / tok:>7.2f} {1e3 * ip / tok:>8.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", default="24")
    ap.add_argument("--per-layer", metavar="ROWS.csv")
    ap.add_argument("--gb", type=int, default=32)
    a = ap.parse_args()
    rows = list(csv.reader(open(os.path.join(ROOT, "data", "validation",
                                             "vtrain_single_node_a100.csv"))))[1:]
    if a.per_layer:
        per_layer(rows, a.per_layer, a.gb)
        return
    groups = defaultdict(list)
    for gpus, gb, mb, h, heads, l, s, tp, dp, pp, ms in rows:
        if pp != "1" or l != a.layers:
            continue
        m = int(gb) // (int(mb) * int(dp))
        groups[(int(h), int(tp), int(mb), int(dp))].append((m, float(ms)))
    print(f"{'hidden':>6} {'TP':>3} {'mb':>3} {'DP':>3} {'rows':>4} {'ms per micro-batch':>19} "
          f"{'fixed ms':>9}")
    for (h, tp, mb, dp), pts in sorted(groups.items()):
        if len(pts) < 2:
            continue
        pts.sort()
        (m1, t1), (m2, t2) = pts[0], pts[-1]
        slope = (t2 - t1) / (m2 - m1)
        print(f"{h:>6} {tp:>3} {mb:>3} {dp:>3} {len(pts):>4} {slope:>19.1f} {t1 - slope * m1:>9.1f}")


if __name__ == "__main__":
    main()
