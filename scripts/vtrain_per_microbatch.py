#!/usr/bin/env python3
"""vTrain's measurements split into a cost per micro-batch and a fixed cost per
iteration: for every (hidden, layers, TP, DP, micro-batch) group with PP = 1,
a straight line through the rows' iteration time against the number of
micro-batches (global batch / (micro-batch x DP)). Evidence for
docs/calibration.md: the per-micro-batch cost does not depend on DP, and it
barely grows from micro-batch 1 to 2 (a host-side floor) before the GPU work
takes over.

usage: scripts/vtrain_per_microbatch.py [--layers 24]
"""
import argparse
import csv
import os
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", default="24")
    a = ap.parse_args()
    rows = list(csv.reader(open(os.path.join(ROOT, "data", "validation",
                                             "vtrain_single_node_a100.csv"))))[1:]
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
