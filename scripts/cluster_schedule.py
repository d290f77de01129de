#!/usr/bin/env python3
"""Several training jobs on one GPU cluster (vTrain's multi-job case study).

usage: scripts/cluster_schedule.py [JOBS.json] [--build DIR] [--out DIR] [--ranks N]

For every job of JOBS.json (default data/sweeps/cluster-jobs.json) it writes a
sweep over the allowed GPU allocations, runs `mpirun -np N llmplan search`,
and takes from sweep.h5 the fastest plan at each allocation: the job's
duration T_j(g) for its token budget. Then it compares
  - space sharing: every job runs from t=0 on its own g_j GPUs, sum g_j <=
    cluster; the allocation minimising the makespan max_j T_j(g_j) is found
    exactly by dynamic programming over (job, GPUs used);
  - time sharing: the jobs run one after another on the whole cluster
    (makespan sum_j T_j(cluster));
  - equal split: every job on cluster/jobs GPUs (rounded down to an allowed
    allocation);
and prints the plans. Needs h5py (Debian: python3-h5py).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def job_durations(cfg, job, llmplan, out, ranks):
    import h5py
    d = os.path.join(out, job["model"])
    if not os.path.exists(os.path.join(d, "sweep.h5")):
        os.makedirs(d, exist_ok=True)
        sweep = {"name": job["model"], "model": job["model"], "system": cfg["system"],
                 "gpus": cfg["allocations"], "framework": cfg.get("framework", "megatron"),
                 "training": dict(cfg["training"], tokens=job["tokens"]), "space": cfg["space"]}
        path = os.path.join(d, "sweep.json")
        json.dump(sweep, open(path, "w"), indent=1)
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        subprocess.run(["mpirun", "--oversubscribe", "-np", str(ranks), llmplan, "search", path,
                        "-o", d, "--quiet"], check=True, env=env)
    with h5py.File(os.path.join(d, "sweep.h5"), "r") as f:
        g = f["configs"]
        gpus, feas, days = g["gpus"][()], g["feasible"][()], g["time_days"][()]
        tp, pp, dp = g["tp"][()], g["pp"][()], g["dp"][()]
    best = {}
    for i in range(len(gpus)):
        if feas[i] and (int(gpus[i]) not in best or days[i] < best[int(gpus[i])][0]):
            best[int(gpus[i])] = (float(days[i]), f"tp{tp[i]} pp{pp[i]} dp{dp[i]}")
    return best


def space_sharing(durs, allocs, cluster):
    """dp[j][u]: the least makespan of jobs 0..j-1 on at most u GPUs."""
    INF = float("inf")
    n = len(durs)
    dp = [[INF] * (cluster + 1) for _ in range(n + 1)]
    choice = [[None] * (cluster + 1) for _ in range(n + 1)]
    dp[0] = [0.0] * (cluster + 1)
    for j in range(n):
        for u in range(cluster + 1):
            for g in allocs:
                if g <= u and g in durs[j]:
                    m = max(dp[j][u - g], durs[j][g][0])
                    if m < dp[j + 1][u]:
                        dp[j + 1][u], choice[j + 1][u] = m, g
    if dp[n][cluster] == INF:
        return INF, None
    plan, u = [], cluster
    for j in range(n, 0, -1):
        g = choice[j][u]
        plan.append(g)
        u -= g
    return dp[n][cluster], plan[::-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("jobs", nargs="?", default=os.path.join(ROOT, "data", "sweeps", "cluster-jobs.json"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "cluster-jobs"))
    ap.add_argument("--ranks", type=int, default=2)
    a = ap.parse_args()
    try:
        import h5py  # noqa: F401
    except ImportError:
        sys.exit("cluster_schedule: h5py is missing (apt-get install python3-h5py)")
    cfg = json.load(open(a.jobs))
    llmplan = os.path.join(a.build, "search", "llmplan")
    allocs, cluster = sorted(cfg["allocations"]), cfg["cluster_gpus"]
    durs = [job_durations(cfg, j, llmplan, a.out, a.ranks) for j in cfg["jobs"]]
    print(f"cluster: {cluster} GPUs of {cfg['system']}; job durations in days (fastest plan per allocation)")
    print(f"{'job':<30}" + "".join(f"{g:>9}" for g in allocs))
    for j, d in zip(cfg["jobs"], durs):
        print(f"{j['name']:<30}" + "".join(f"{d[g][0]:>9.1f}" if g in d else f"{'-':>9}" for g in allocs))
    best, plan = space_sharing(durs, allocs, cluster)
    seq = sum(d[cluster][0] for d in durs) if all(cluster in d for d in durs) else float("inf")
    eq = max(allocs[0], max([g for g in allocs if g <= cluster // len(durs)], default=allocs[0]))
    equal = max(d[eq][0] if eq in d else float("inf") for d in durs)
    print(f"\nspace sharing (best allocation): makespan {best:.1f} days")
    for j, g, d in zip(cfg["jobs"], plan or [], durs):
        print(f"  {j['name']:<30} {g:>5} GPUs  {d[g][1]:<16} {d[g][0]:>7.1f} days")
    print(f"time sharing (whole cluster, one job after another): makespan {seq:.1f} days")
    print(f"equal split ({eq} GPUs each): makespan {equal:.1f} days")
    return 0


if __name__ == "__main__":
    sys.exit(main())
