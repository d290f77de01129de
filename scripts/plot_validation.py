#!/usr/bin/env python3
"""Predicted vs measured iteration time, log-log, one colour per source.

usage: scripts/plot_validation.py [ROWS.csv] [-o validation.png]
ROWS.csv is written by `scripts/validate --rows ROWS.csv` (run here if absent).
Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import csv
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rows", nargs="?", default=None)
    ap.add_argument("-o", "--output", default=os.path.join(ROOT, "docs", "validation.png"))
    args = ap.parse_args()
    rows = args.rows
    if rows is None:
        rows = os.path.join(ROOT, "build", "validation_rows.csv")
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "validate"), "--quiet",
                        "--rows", rows], check=True, stdout=subprocess.DEVNULL)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_validation: matplotlib is missing (apt-get install python3-matplotlib)")
    by = {}
    with open(rows) as f:
        for r in csv.DictReader(f):
            by.setdefault(r["source"], []).append((float(r["measured_s"]), float(r["predicted_s"])))
    fig, ax = plt.subplots(figsize=(6.5, 6))
    lo, hi = 1e9, 0
    for src, pts in sorted(by.items()):
        xs, ys = zip(*pts)
        ape = sum(abs(y - x) / x for x, y in pts) / len(pts) * 100
        ax.scatter(xs, ys, s=10, alpha=0.6, label=f"{src} (n={len(pts)}, MAPE {ape:.1f}%)")
        lo, hi = min(lo, *xs, *ys), max(hi, *xs, *ys)
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    ax.plot([lo, hi], [lo * 1.1, hi * 1.1], "k:", lw=0.6)
    ax.plot([lo, hi], [lo / 1.1, hi / 1.1], "k:", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured iteration time (s)")
    ax.set_ylabel("predicted iteration time (s)")
    ax.set_title("llmplan predictions vs published measurements (dotted: ±10%)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
