#!/usr/bin/env bash
# Issue #17 parts 3-4: constraints are applied before ranking (counted per
# constraint), best_by keeps the fastest and cheapest plan of every group,
# and both are recomputed here from sweep.h5's rows; the results do not
# depend on the rank count; GPU-count ranges go past 64 values.
source "$(dirname "$0")/lib.bash" "$@"
command -v h5dump >/dev/null || { echo "SKIP: h5dump not found (hdf5-tools)"; exit 77; }

sweep() { # sweep FILE CONSTRAINTS-JSON
    cat >"$1" <<JSON
{"models": ["gpt3-1.3b", "gpt3-2.7b"], "systems": ["dgx-a100-80gb", "dgx-h100"],
 "gpus": [8, 16, 32], "training": {"global_batch": 256, "tokens": 1e10},
 "profile": "roofline", "best_by": ["system", "gpus"], $2
 "space": {"tp": [1, 2, 4], "pp": [1, 2], "micro_batch": [1, 2, 4, 8],
           "recompute": "auto", "zero": [0, 1]}}
JSON
}
cols="index system gpus feasible iteration_time_s cost_usd time_days memory_per_gpu_gib mfu"
dump() { # dump DIR: one line per row, the columns above (one h5dump, one python)
    h5dump -m %.17g $(for c in $cols; do printf -- '-d /configs/%s ' "$c"; done) "$1/sweep.h5" |
        python3 -c '
import re, sys
text, cols = sys.stdin.read(), sys.argv[1].split()
data = {}
for m in re.finditer(r"DATASET \"/configs/(\w+)\"", text):
    start = text.index("DATA {", m.end()) + 6
    body = re.sub(r"\(\d+\):", " ", text[start:text.index("}", start)])
    data[m.group(1)] = body.replace(",", " ").split()
for row in zip(*(data[c] for c in cols)):
    print(" ".join(row))
' "$cols" >"$1/rows.txt" || fail "h5dump $1"
    [ -s "$1/rows.txt" ] || fail "no rows in $1/sweep.h5"
}

check "an unconstrained sweep, for the thresholds"
sweep "$SCRATCH/free.json" ""
"$LLMPLAN" search "$SCRATCH/free.json" -o "$SCRATCH/free" --quiet || fail "search exited $?"
dump "$SCRATCH/free"
read -r days mfu < <(python3 - "$SCRATCH/free/rows.txt" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
f = [r for r in rows if r[3] == "1"]
print(statistics.median(float(r[6]) for r in f), statistics.median(float(r[8]) for r in f))
PY
)
cons="\"constraints\": {\"max_days\": $days, \"min_memory_headroom_gib\": 20, \"min_mfu\": $(python3 -c "print($mfu * 0.9)"), \"max_gpus\": 16},"
sweep "$SCRATCH/cons.json" "$cons"

check "constrained sweep on 1 and 3 ranks"
"$LLMPLAN" search "$SCRATCH/cons.json" -o "$SCRATCH/c1" --quiet || fail "search exited $?"
mpi 3 "$LLMPLAN" search "$SCRATCH/cons.json" -o "$SCRATCH/c3" --quiet --chunk 8 ||
    fail "search on 3 ranks exited $?"
same_outputs "$SCRATCH/c1" "$SCRATCH/c3"
dump "$SCRATCH/c1"

check "exclusions, optima and groups recomputed from sweep.h5"
python3 - "$SCRATCH/c1/rows.txt" "$SCRATCH/c1/plans.json" <<'PY' || fail "recomputation differs"
import json, sys
GIB = 1024.0 ** 3
d = json.load(open(sys.argv[2]))
st = d["stats"]
k = st["constraints"]
cap = 80.0  # GiB: A100 80GB and H100 SXM
rows = []
for l in open(sys.argv[1]):
    i, sysi, gpus, feas, t, cost, days, mem, mfu = l.split()
    # h5dump prints the system enumeration's name (sweep.h5 format 2)
    sysi = ["dgx-a100-80gb", "dgx-h100"].index(sysi) if not sysi.isdigit() else int(sysi)
    rows.append(dict(index=int(i), system=sysi, gpus=int(gpus), feasible=feas == "1",
                     time=float(t), cost=float(cost), days=float(days), mem=float(mem),
                     mfu=float(mfu)))
def violated(r):  # the first one, in the order of stats (src/core/constraints.c)
    if r["gpus"] > k["max_gpus"]: return "max_gpus"
    if not r["days"] <= k["max_days"]: return "max_days"
    if not cap - r["mem"] >= k["min_memory_headroom_gib"] - 1e-9: return "min_memory_headroom_gib"
    if not r["mfu"] >= k["min_mfu"]: return "min_mfu"
    return None
feas = [r for r in rows if r["feasible"]]
by = {}
for r in feas:
    v = violated(r)
    if v: by[v] = by.get(v, 0) + 1
assert by == st["excluded_by_constraint"], (by, st["excluded_by_constraint"])
assert sum(by.values()) == st["excluded"] and all(n > 0 for n in by.values()), by
ok = [r for r in feas if not violated(r)]
assert ok, "nothing admissible"
fast = min(ok, key=lambda r: (r["time"], r["index"]))
cheap = min(ok, key=lambda r: (r["cost"], r["index"]))
assert d["time_optimal"]["index"] == fast["index"], (d["time_optimal"]["index"], fast)
assert d["cost_optimal"]["index"] == cheap["index"]
for p in d["top_time"] + d["top_cost"] + d["pareto"]:
    assert p["gpus"] <= 16 and p["training"]["time_days"] <= k["max_days"] and p["mfu"] >= k["min_mfu"]
names = ["dgx-a100-80gb", "dgx-h100"]
groups = {}
for r in ok:
    groups.setdefault((names[r["system"]], r["gpus"]), []).append(r)
got = {(g["system"], g["gpus"]): g for g in d["best_by"]["groups"]}
assert d["best_by"]["dimensions"] == ["system", "gpus"]
assert sorted(got) == sorted(groups), (sorted(got), sorted(groups))
for key, rs in groups.items():
    assert got[key]["fastest"]["index"] == min(rs, key=lambda r: (r["time"], r["index"]))["index"], key
    assert got[key]["cheapest"]["index"] == min(rs, key=lambda r: (r["cost"], r["index"]))["index"], key
    assert got[key]["fastest"]["system"] == key[0] and got[key]["fastest"]["gpus"] == key[1]
print("excluded", by, "groups", len(groups))
PY

check "GPU counts: a range of node multiples past 64 values; \"auto\" needs max_gpus"
cat >"$SCRATCH/range.json" <<'JSON'
{"model": "gpt3-1.3b", "system": "dgx-a100-80gb", "gpus": {"min": 8, "max": 1024, "step": "node"},
 "training": {"global_batch": 1024}, "profile": "roofline", "best_by": "gpus",
 "space": {"micro_batch": [1]}}
JSON
"$LLMPLAN" search "$SCRATCH/range.json" -o "$SCRATCH/range" --quiet --no-dataset || fail "range exited $?"
json_get "$SCRATCH/range/plans.json" 'd["stats"]["space_size"] == 128 and [g["gpus"] for g in d["best_by"]["groups"]] == [8, 16, 32, 64, 128, 256, 512, 1024]' |
    grep -q True || fail "128 node multiples, groups at the powers of two (dp divides 1024)"
sed 's/{"min": 8, "max": 1024, "step": "node"}/"auto"/' "$SCRATCH/range.json" >"$SCRATCH/auto.json"
out=$("$LLMPLAN" search "$SCRATCH/auto.json" -o "$SCRATCH/auto" --quiet 2>&1) && fail "auto without max_gpus accepted"
case "$out" in *"'gpus'"*"constraints.max_gpus"*) ;; *) fail "auto message: $out" ;; esac
echo "PASS"
