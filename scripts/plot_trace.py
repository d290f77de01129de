#!/usr/bin/env python3
"""Draw a `llmplan simulate --trace` timeline as a PNG Gantt chart (one row per
pipeline stage: compute stream, a thin communication stream below it, and the
data-parallel collectives -- buckets, FSDP units -- below that).
Perfetto (ui.perfetto.dev) opens the same file interactively.

usage: scripts/plot_trace.py TRACE.json [-o trace.png]
Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("-o", "--output", default="trace.png")
    a = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_trace: matplotlib is missing (apt-get install python3-matplotlib)")
    # passes and transfers (an operator-level trace's "op" spans lie inside
    # the passes; Perfetto shows them)
    ev = [x for x in json.load(open(a.trace))["traceEvents"]
          if x.get("ph") == "X" and x.get("cat") != "op"]
    if not ev:
        sys.exit(f"plot_trace: {a.trace}: no events (an infeasible configuration?)")
    stages = sorted({x["pid"] for x in ev})
    colour = {"F": "tab:blue", "B": "tab:green", "R": "tab:purple", "p2p": "tab:gray",
              "dp-sync": "tab:red", "optimizer": "tab:orange", "stage": "tab:blue",
              "dp": "tab:pink"}
    row = {0: 0.0, 1: 0.8, 2: 0.8, 3: 1.15}  # compute; p2p and DP sync; DP collectives
    fig, ax = plt.subplots(figsize=(12, 0.8 + 0.7 * len(stages)))
    for x in ev:
        y = x["pid"] * 2 + row.get(x["tid"], 0.8)
        ax.barh(y, x["dur"] / 1e3, left=x["ts"] / 1e3, height=0.3 if x["tid"] else 0.7,
                color=colour.get(x["cat"], "black"))
        if x["tid"] == 0 and len(ev) < 400:
            ax.text((x["ts"] + x["dur"] / 2) / 1e3, y, x["name"], ha="center", va="center",
                    fontsize=6, color="white")
    ax.set_yticks([s * 2 for s in stages])
    ax.set_yticklabels([f"stage {s}" for s in stages])
    ax.invert_yaxis()
    ax.set_xlabel("ms")
    ax.set_title("llmplan simulated iteration: F forward, B backward, gray p2p, red DP sync, "
                 "pink DP collectives, orange optimizer", fontsize=9)
    fig.tight_layout()
    fig.savefig(a.output, dpi=110)
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
