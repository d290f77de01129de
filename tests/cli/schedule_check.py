"""The checks of tests/cli/schedule.sh: schedule_check.py LLMPLAN SCRATCH."""
import csv, json, os, subprocess, sys
bin_, d = sys.argv[1], sys.argv[2]
fails = 0
def check(name, ok, detail=""):
    global fails
    print(("ok   " if ok else "FAIL ") + name + (": " + detail if detail else ""))
    fails += not ok
base = {"system": "dgx-a100-80gb", "cluster_gpus": 32, "allocations": [8, 16, 32],
        "framework": "megatron-2021", "training": {"global_batch": 256, "precision": "bf16"},
        "space": {"tp": [1, 2, 4, 8], "micro_batch": [1, 2, 4], "recompute": ["selective", "full"],
                  "zero": [1]},
        "restart_minutes": 5,
        "jobs": [{"name": "a", "model": "gpt3-1.3b", "tokens": 2e9, "gpus": 16,
                  "parallel": {"tp": 2, "micro_batch": 2, "recompute": "full", "zero": 1}},
                 {"name": "b", "model": "gpt3-2.7b", "tokens": 3e9, "arrival_days": 0.01, "gpus": 32,
                  "deadline_days": 0.05,
                  "parallel": {"tp": 4, "micro_batch": 1, "recompute": "selective", "zero": 1}},
                 {"name": "c", "model": "gpt3-1.3b", "tokens": 1e9, "arrival_days": 0.02, "gpus": 8,
                  "parallel": {"tp": 1, "micro_batch": 4, "recompute": "selective", "zero": 1}}]}
def write(obj, name="jobs.json"):
    p = os.path.join(d, name)
    json.dump(obj, open(p, "w"))
    return p
def sched(path, *args):
    return subprocess.run([bin_, "schedule", path] + list(args), capture_output=True, text=True)
p = sched(write(base), "--gantt", d)
check("runs", p.returncode == 0, p.stderr.strip())
out = p.stdout
lines = out.splitlines()
for pol in ("fcfs", "planned", "elastic"):
    check(f"{pol} row", any(l.startswith(pol + " ") for l in lines))
# the own configuration: the days simulate gives
def simulate_days(job):
    par = dict(job["parallel"])
    par["dp"] = job["gpus"] // (par.get("tp", 1) * par.get("pp", 1))
    run = {"model": job["model"], "system": base["system"], "parallel": par,
           "training": dict(base["training"], tokens=job["tokens"]), "framework": base["framework"]}
    r = subprocess.run([bin_, "simulate", "--batch", "-"], input=json.dumps(run) + "\n",
                       capture_output=True, text=True)
    return json.loads(r.stdout)["training"]["time_days"]
rows = {}
for l in lines:  # the first table (the second, per allocation, starts with the names too)
    if l and l.split()[0] in ("a", "b", "c"):
        rows.setdefault(l.split()[0], l)
for job in base["jobs"]:
    f = rows[job["name"]].split()
    # columns: name arrives deadline tokens GPUs <own cfg: 6 words> days <plan cfg> days
    own_days = float(f[11])
    plan_days = float(f[-1])
    sim = simulate_days(job)
    check(f"{job['name']} own = simulate", abs(own_days - sim) < 0.006, f"{own_days} vs {sim:.4f}")
    check(f"{job['name']} plan no slower than own", plan_days <= own_days + 0.005,
          f"{plan_days} vs {own_days}")
# Gantt: fcfs holds each job on its gpus for its own time, once
segs = list(csv.DictReader(open(os.path.join(d, "fcfs.csv"))))
check("fcfs one segment per job", len(segs) == 3, str(len(segs)))
for s in segs:
    job = base["jobs"][int(s["job"])]
    dur = float(s["end_days"]) - float(s["start_days"])
    check(f"fcfs {job['name']} duration", abs(dur - simulate_days(job)) < 1e-6 * max(1, dur) + 1e-9,
          f"{dur}")
    check(f"fcfs {job['name']} gpus", int(s["gpus"]) == job["gpus"])
# elastic: never more GPUs held than the cluster at any time
segs = list(csv.DictReader(open(os.path.join(d, "elastic.csv"))))
events = sorted({float(s["start_days"]) for s in segs})
peak = max(sum(int(s["gpus"]) for s in segs
               if float(s["start_days"]) <= t < float(s["end_days"])) for t in events)
check("elastic within the cluster", peak <= base["cluster_gpus"], str(peak))
# bad input, with the key named
def bad(mut, want, *args):
    obj = json.loads(json.dumps(base))
    mut(obj)
    p = sched(write(obj, "bad.json"), *args)
    check("refuses: " + want, p.returncode != 0 and want in p.stderr, p.stderr.strip()[:200])
bad(lambda o: o["jobs"][0].update(colour=1), "jobs[0].colour")
bad(lambda o: o["jobs"][1].update(gpus=30), "jobs[1].gpus")
bad(lambda o: o.pop("cluster_gpus"), "cluster_gpus")
bad(lambda o: o.update(allocations=[16, 8]), "allocations[1]")
bad(lambda o: o["jobs"][2].pop("parallel"), "needs every job's 'gpus' and 'parallel'",
    "--policy", "fcfs")
bad(lambda o: o["jobs"][0].update(model="no-such-model"), "jobs[0]")
p = sched(write(base), "--policy", "sjf")
check("refuses an unknown policy", p.returncode == 2 and "--policy" in p.stderr)
# two pools (partitions of two systems): a job's own configuration runs on
# its pool's system, every policy keeps each pool within its GPUs, and the
# Gantt CSVs name the pool of every segment
mixed = json.loads(json.dumps(base))
del mixed["system"], mixed["cluster_gpus"]
mixed["pools"] = [{"system": "dgx-a100-80gb", "gpus": 32}, {"system": "dgx-h100", "gpus": 16}]
mixed["jobs"][0]["pool"] = "dgx-h100"
gd = os.path.join(d, "mixed")
os.makedirs(gd, exist_ok=True)
p = sched(write(mixed, "mixed.json"), "--gantt", gd)
check("pools run", p.returncode == 0, p.stderr.strip())
check("per-pool utilisation reported", "GPU util per pool: dgx-a100-80gb" in p.stdout)
def simulate_on(job, system):
    par = dict(job["parallel"])
    par["dp"] = job["gpus"] // (par.get("tp", 1) * par.get("pp", 1))
    run = {"model": job["model"], "system": system, "parallel": par,
           "training": dict(base["training"], tokens=job["tokens"]), "framework": base["framework"]}
    r = subprocess.run([bin_, "simulate", "--batch", "-"], input=json.dumps(run) + "\n",
                       capture_output=True, text=True)
    return json.loads(r.stdout)["training"]["time_days"]
rows = {l.split()[0]: l for l in reversed(p.stdout.splitlines()) if l and l.split()[0] in ("a", "b", "c")}
own_a = float(rows["a"].split()[11])
check("a's own configuration on its pool's system", abs(own_a - simulate_on(mixed["jobs"][0], "dgx-h100")) < 0.006,
      f"{own_a} vs {simulate_on(mixed['jobs'][0], 'dgx-h100'):.4f}")
for pol in ("fcfs", "planned", "elastic"):
    segs = list(csv.DictReader(open(os.path.join(gd, pol + ".csv"))))
    ok = all(s["pool_name"] == mixed["pools"][int(s["pool"])]["system"] for s in segs)
    for i, q in enumerate(mixed["pools"]):
        mine = [s for s in segs if int(s["pool"]) == i]
        ev = sorted({float(s["start_days"]) for s in mine})
        peak = max([sum(int(s["gpus"]) for s in mine
                        if float(s["start_days"]) <= t < float(s["end_days"])) for t in ev] or [0])
        ok = ok and peak <= q["gpus"]
    check(f"{pol}: each pool within its GPUs", ok)
    if pol != "elastic":
        check(f"{pol}: a runs in its pool", all(s["pool"] == "1" for s in segs if s["job"] == "0"))
def bad_mixed(mut, want):
    obj = json.loads(json.dumps(mixed))
    mut(obj)
    p = sched(write(obj, "bad.json"))
    check("refuses: " + want, p.returncode != 0 and want in p.stderr, p.stderr.strip()[:200])
# a profile per pool, as a sweep's {system: profile} map
pm = json.loads(json.dumps(mixed))
pm["profile"] = {"dgx-a100-80gb": "roofline", "dgx-h100": "synth"}
p = sched(write(pm, "pm.json"), "--policy", "elastic")
check("a profile per pool", p.returncode == 0 and "dgx-a100-80gb (profile roofline)" in p.stdout
      and "dgx-h100 (profile synth" in p.stdout, (p.stdout.splitlines() or [p.stderr])[0][:200])
bad_mixed(lambda o: o.update(profile={"dgx-b200": "roofline"}), "profile.dgx-b200")
bad_mixed(lambda o: o["jobs"][0].update(pool="dgx-b200"), "jobs[0].pool")
bad_mixed(lambda o: o.update(system="dgx-h100"), "either 'pools' or 'system'")
bad_mixed(lambda o: o["pools"].append({"system": "dgx-h100", "gpus": 8}), "pools[2].system")
bad_mixed(lambda o: o["pools"][1].pop("gpus"), "pools[1].gpus")
bad_mixed(lambda o: o["pools"][1].update(colour=1), "pools[1].colour")
sys.exit(1 if fails else 0)
