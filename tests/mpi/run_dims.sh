#!/usr/bin/env bash
# Issue #17: the global batch, the sequence length and fine-tuning as
# dimensions of the space ("space": global_batch, seq_len, finetune). The
# outputs do not depend on the rank count nor on an interruption; the
# sweep.h5 columns hold each row's values; every best_by plan (labelled
# NAME[seq_len=N], overridden presets included) re-simulates with
# `llmplan simulate` to the same figures; listing a dimension's default value
# changes nothing; bad values are refused by key.
source "$(dirname "$0")/lib.bash" "$@"
command -v h5dump >/dev/null || { echo "SKIP: h5dump not found (hdf5-tools)"; exit 77; }

cat >"$SCRATCH/dims.json" <<'JSON'
{"model": "gpt3-1.3b",
 "system": {"preset": "dgx-h100", "price_per_gpu_hour_usd": 2.15},
 "gpus": [8, 16], "training": {"global_batch": 256, "tokens": 1e10},
 "profile": "roofline", "best_by": ["seq_len", "global_batch", "finetune"], "top_k": 3,
 "space": {"tp": [1, 2], "cp": [1, 2], "micro_batch": [1, 2, 4], "zero": [0, 1],
           "seq_len": [1024, 2048, 8192], "global_batch": [64, 512],
           "finetune": [false, {"method": "lora", "rank": 8}, {"method": "lora", "rank": 8, "base_bits": 4}]}}
JSON

check "run dimensions on 1 and 2 ranks, and stopped then resumed"
"$LLMPLAN" search "$SCRATCH/dims.json" -o "$SCRATCH/r1" --quiet || fail "search exited $?"
mpi 2 "$LLMPLAN" search "$SCRATCH/dims.json" -o "$SCRATCH/r2" --quiet --chunk 16 ||
    fail "search on 2 ranks exited $?"
same_outputs "$SCRATCH/r1" "$SCRATCH/r2"
"$LLMPLAN" search "$SCRATCH/dims.json" -o "$SCRATCH/rs" --quiet --segment 64 --stop-after 200
[ $? -eq 3 ] || fail "--stop-after did not stop with status 3"
"$LLMPLAN" search "$SCRATCH/dims.json" -o "$SCRATCH/rs" --quiet --segment 64 --resume ||
    fail "resume exited $?"
same_outputs "$SCRATCH/r1" "$SCRATCH/rs"

check "sweep.h5 columns hold each row's seq_len, global_batch and finetune"
for c in index seq_len global_batch finetune micro_batch dp feasible; do
    h5_values "$SCRATCH/r1/sweep.h5" "/configs/$c" >"$SCRATCH/col_$c" || fail "h5dump $c"
done
python3 - "$SCRATCH" <<'PY' || fail "columns"
import sys
d = sys.argv[1]
col = lambda c: [l.strip() for l in open("%s/col_%s" % (d, c))]
rows = list(zip(*(col(c) for c in ("index", "seq_len", "global_batch", "finetune", "micro_batch", "dp"))))
seen = set()
for i, s, g, f, mb, dp in rows:
    assert int(g) % (int(mb) * int(dp)) == 0, ("batch check", i, g, mb, dp)
    seen.add((s, g, f))
want = {(s, g, f) for s in ("1024", "2048", "8192") for g in ("64", "512")
        for f in ("full", "lora-r8", "lora-r8-4bit")}
assert seen == want, sorted(want - seen)
print("ok: %d rows, every (seq_len, global_batch, finetune)" % len(rows))
PY

check "every best_by plan re-simulates to the same figures"
python3 - "$SCRATCH/r1/plans.json" "$SCRATCH" <<'PY' || fail "plans"
import json, sys
p = json.load(open(sys.argv[1]))
gs = p["best_by"]["groups"]
assert len(gs) == 18, len(gs)
for n, g in enumerate(gs):
    f = g["fastest"]
    assert f["training_config"]["global_batch"] == g["global_batch"], "global_batch"
    assert f["seq_len"] == g["seq_len"] if "seq_len" in f else True
    want = "" if g["seq_len"] == 2048 else "[seq_len=%d]" % g["seq_len"]
    assert f["model"] == "gpt3-1.3b" + want, (f["model"], g["seq_len"])
    assert f["system"] == "dgx-h100[price_per_gpu_hour_usd=2.15]", f["system"]
    assert ("finetune" in f["training_config"]) == (g["finetune"] != "full"), "finetune"
    json.dump(f, open("%s/plan%d.json" % (sys.argv[2], n), "w"))
PY
for f in "$SCRATCH"/plan*.json; do
    "$LLMPLAN" simulate "$f" --profile roofline --json >"$f.out" || fail "simulate $f exited $?"
    python3 - "$f" "$f.out" <<'PY' || fail "re-simulated $f differs"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for k in ("iteration_time_s", "memory_per_gpu_gib", "cost_per_iteration_usd", "tokens_per_usd"):
    assert a[k] == b[k], (k, a[k], b[k])
assert a["training"]["cost_usd"] == b["training"]["cost_usd"]
PY
done

check "listing a dimension's default changes nothing"
python3 - "$SCRATCH/dims.json" "$SCRATCH" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["best_by"] = ["gpus"]
sp = d["space"]
for k in ("seq_len", "global_batch", "finetune"):
    sp.pop(k)
json.dump(d, open(sys.argv[2] + "/plain.json", "w"))
sp.update({"seq_len": [2048], "global_batch": [256], "finetune": [False]})
json.dump(d, open(sys.argv[2] + "/listed.json", "w"))
PY
"$LLMPLAN" search "$SCRATCH/plain.json" -o "$SCRATCH/plain" --quiet --no-dataset || fail "plain"
"$LLMPLAN" search "$SCRATCH/listed.json" -o "$SCRATCH/listed" --quiet --no-dataset || fail "listed"
python3 - "$SCRATCH" <<'PY' || fail "a listed default changed the plans"
import json, sys
d = sys.argv[1]
a, b = (json.load(open("%s/%s/plans.json" % (d, k))) for k in ("plain", "listed"))
for x in (a, b):
    for k in ("wall_s", "configs_per_s", "simulated_per_s", "ranks", "sweep"):
        x["stats"].pop(k)
assert a == b
PY

check "bad run dimensions are refused by key"
refused "$SCRATCH/dims.json" 'd["space"]["seq_len"] = [0]' "key 'space.seq_len'"
refused "$SCRATCH/dims.json" 'd["space"]["global_batch"] = [64, 64]' "key 'space.global_batch'"
refused "$SCRATCH/dims.json" 'd["space"]["finetune"] = [True]' "key 'space.finetune\[0\]'"
refused "$SCRATCH/dims.json" 'd["space"]["finetune"] = [{"method": "lora", "rank": 0}]' "space.finetune\[0\]"
refused "$SCRATCH/dims.json" 'd["training"]["finetune"] = {"method": "lora"}' "not both"
echo PASS
