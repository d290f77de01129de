#!/usr/bin/env bash
# Issue #17 part 6: plans the model cannot tell apart (same model, system and
# GPU count, identical time and cost: recompute none vs selective under
# FlashAttention in Megatron-DeepSpeed, whose legacy transformer.py
# checkpoints only the unfused attention core) are collapsed in the top lists into the one needing the
# least memory, with the others' indices in "equivalent_to"; a top list of
# top_k still shows top_k distinct plans (it keeps top_k classes).
#   equivalent.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
# `llmplan search` initialises MPI: under the sanitizer build, ignore Open
# MPI's own leaks as tests/mpi/lib.bash does
export LSAN_OPTIONS="suppressions=$src/tests/mpi/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
export LLMPLAN_DATA=${LLMPLAN_DATA:-$src/data}
cat >"$dir/sweep.json" <<'JSON'
{"model": "gpt3-1.3b", "system": "dgx-a100-80gb", "gpus": [8, 16],
 "framework": "megatron-deepspeed",
 "training": {"global_batch": 256, "tokens": 1e10, "flash_attention": true},
 "space": {"tp": [1, 2], "micro_batch": [1, 2, 4], "recompute": ["none", "selective"],
           "zero": [0, 1]},
 "top_k": 1000}
JSON
"$bin" search "$dir/sweep.json" -o "$dir/out" --quiet --no-dataset || { echo "FAIL search"; exit 1; }
python3 - "$dir/out/plans.json" <<'PY' || { echo "FAIL"; exit 1; }
import json, sys
d = json.load(open(sys.argv[1]))
feasible = d["stats"]["feasible"]
for name in ("top_time", "top_cost"):
    plans = d[name]
    kept = [p["index"] for p in plans]
    eq = [i for p in plans for i in p.get("equivalent_to", [])]
    # every feasible plan appears once: kept, or as an equivalent of a kept one
    assert sorted(kept + eq) == sorted(set(kept + eq)) and len(kept) + len(eq) == feasible, name
    assert eq, "%s: no equivalent plans collapsed" % name
    # no two kept plans are equivalent
    sig = [(p["gpus"], p["iteration_time_s"], p["training"]["cost_usd"]) for p in plans]
    assert len(sig) == len(set(sig)), name
print("collapsed", len(eq), "of", feasible)
PY
[ $? -eq 0 ] || exit 1
# the kept plan of a class needs no more memory than its equivalents
python3 - "$dir/out/plans.json" "$dir" <<'PY' || { echo "FAIL memory tie-break"; exit 1; }
import json, sys
d = json.load(open(sys.argv[1]))
p = next(p for p in d["top_time"] if p.get("equivalent_to"))
json.dump({"model": "gpt3-1.3b", "system": "dgx-a100-80gb", "gpus": p["gpus"],
           "framework": "megatron-deepspeed",
           "parallel": p["parallel"], "training": p["training_config"]}, open(sys.argv[2] + "/kept.json", "w"))
open(sys.argv[2] + "/kept.txt", "w").write("%r %r %d\n" % (p["iteration_time_s"], p["memory_per_gpu_gib"], p["equivalent_to"][0]))
PY
read -r t mem other <"$dir/kept.txt"
# the equivalent: the kept plan with recompute selective (the only dimension
# that differs in this sweep when time and cost are identical)
python3 - "$dir/kept.json" "$dir/other.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["parallel"]["recompute"] = "selective" if r["parallel"]["recompute"] == "none" else "none"
json.dump(r, open(sys.argv[2], "w"))
PY
"$bin" simulate "$dir/other.json" --json >"$dir/other.out" || { echo "FAIL simulate"; exit 1; }
python3 - "$dir/other.out" "$t" "$mem" <<'PY' || { echo "FAIL: the equivalent is not what the kept plan claims"; exit 1; }
import json, sys
o = json.load(open(sys.argv[1]))
t, mem = float(sys.argv[2]), float(sys.argv[3])
assert o["iteration_time_s"] == t, (o["iteration_time_s"], t)
assert o["memory_per_gpu_gib"] >= mem, (o["memory_per_gpu_gib"], mem)
PY
# top lists refill: with top_k 3 each list still shows 3 distinct plans, the
# first 3 of the long list, with the same equivalent_to lists
python3 - "$dir/sweep.json" "$dir/k3.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["top_k"] = 3
json.dump(d, open(sys.argv[2], "w"))
PY
"$bin" search "$dir/k3.json" -o "$dir/k3" --quiet --no-dataset || { echo "FAIL search k3"; exit 1; }
python3 - "$dir/out/plans.json" "$dir/k3/plans.json" <<'PY' || { echo "FAIL: top lists do not refill"; exit 1; }
import json, sys
full, k3 = (json.load(open(f)) for f in sys.argv[1:3])
for name in ("top_time", "top_cost"):
    got = [(p["index"], sorted(p.get("equivalent_to", []))) for p in k3[name]]
    want = [(p["index"], sorted(p.get("equivalent_to", []))) for p in full[name][:3]]
    assert len(got) == 3 and got == want, (name, got, want)
    assert any(e for _, e in got), name + ": no collapsed plan among the first 3"
PY
echo "PASS"
