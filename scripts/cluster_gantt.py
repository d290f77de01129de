#!/usr/bin/env python3
"""Several training jobs on one cluster: run `llmplan schedule` and draw its Gantt charts.

usage: scripts/cluster_gantt.py [JOBS.json] [--build DIR] [--out DIR]

Runs `llmplan schedule JOBS.json --gantt OUT` (default data/jobs/vtrain-cluster.json,
OUT out/cluster), keeps its table in OUT/schedule.txt and draws OUT/gantt.png:
one panel per policy, one row per job, a bar per stretch of time the job
holds GPUs (labelled with their count; hatched: a restart after its
allocation changed), and the job's deadline as a red tick.
Needs python3-matplotlib.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLICIES = ("fcfs", "planned", "elastic")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("jobs", nargs="?", default=os.path.join(ROOT, "data", "jobs", "vtrain-cluster.json"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "cluster"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("LLMPLAN_DATA", os.path.join(ROOT, "data"))
    p = subprocess.run([os.path.join(a.build, "search", "llmplan"), "schedule", a.jobs, "--gantt", a.out],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"cluster_gantt: llmplan schedule failed: {p.stderr.strip()}")
    print(p.stdout, end="")
    tmp = os.path.join(a.out, "schedule.txt.tmp")
    with open(tmp, "w") as f:
        f.write(p.stdout)
    os.replace(tmp, os.path.join(a.out, "schedule.txt"))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("cluster_gantt: matplotlib is missing (apt-get install python3-matplotlib)")
    spec = json.load(open(a.jobs))
    jobs = spec["jobs"]
    pools = spec.get("pools") or [{"system": spec["system"], "gpus": spec["cluster_gpus"]}]
    multi = len(pools) > 1
    # pools by position (the CSVs' pool column), named as llmplan names them
    # (the CSVs' pool_name)
    pname = {}
    for pol in POLICIES:
        if os.path.exists(os.path.join(a.out, pol + ".csv")):
            with open(os.path.join(a.out, pol + ".csv")) as f:
                for s in csv.DictReader(f):
                    pname[int(s["pool"])] = s["pool_name"]
    cluster = ", ".join(f"P{i} = {q['gpus']} {pname.get(i, '')}".rstrip()
                        for i, q in enumerate(pools)) if multi else f"{pools[0]['gpus']}"
    names = [j.get("name", f"job {i}") for i, j in enumerate(jobs)]
    pols = [q for q in POLICIES if os.path.exists(os.path.join(a.out, q + ".csv"))]
    fig, axes = plt.subplots(len(pols), 1, figsize=(10, 2.2 + 1.1 * len(jobs) * len(pols) / 2),
                             sharex=True, squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, pol in zip(axes[:, 0], pols):
        with open(os.path.join(a.out, pol + ".csv")) as f:
            segs = list(csv.DictReader(f))
        for s in segs:
            j = int(s["job"])
            x0, x1 = float(s["start_days"]), float(s["end_days"])
            restart = s["restart"] == "1"
            ax.barh(j, x1 - x0, left=x0, height=0.6, color=colours[j % len(colours)],
                    alpha=0.35 if restart else 0.85, hatch="//" if restart else None,
                    edgecolor="black", linewidth=0.4)
            if not restart and x1 - x0 > (0.6 if multi else 0.25):
                label = s["gpus"] + (f" P{s['pool']}" if multi else "")
                ax.text((x0 + x1) / 2, j, label, ha="center", va="center", fontsize=7)
        for j, job in enumerate(jobs):
            ax.plot([job.get("arrival_days", 0)] * 2, [j - 0.4, j + 0.4], color="black", lw=1)
            if "deadline_days" in job:
                d = job.get("arrival_days", 0) + job["deadline_days"]
                ax.plot([d, d], [j - 0.4, j + 0.4], color="red", lw=2)
        ax.set_yticks(range(len(jobs)))
        ax.set_yticklabels(names, fontsize=7)
        ax.invert_yaxis()
        ax.set_title(f"{pol} ({cluster} GPUs; bar labels: GPUs held"
                     + (" and pool" if multi else "") + "; black tick: arrival; red: deadline)",
                     fontsize=8)
    axes[-1, 0].set_xlabel("days")
    fig.tight_layout()
    out = os.path.join(a.out, "gantt.png")
    fig.savefig(out + ".tmp.png", dpi=110)
    os.replace(out + ".tmp.png", out)
    plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
