#!/usr/bin/env bash
# Issue #17 part 8: every plan carries "trust", the validated domain nearest
# to it (framework x GPU, from the bands `scripts/validate --bands` writes)
# with that domain's error band. With a hand-written bands file: a plan of a
# validated stack and GPU count is inside; another GPU count, too few rows,
# another stack or no stack at all are flagged with the reason; the time band
# is predicted / (1 + error); a bad file is refused by name; without the file
# plans carry no "trust".
#   trust.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
. "$src/tests/cli/lib.bash" trust_bands.json
cat >"$dir/data/trust_bands.json" <<'JSON'
{"format": "llmplan-trust-bands", "format_version": 1, "command": "hand-written for tests/cli/trust.sh",
 "domains": [
  {"framework": "megatron", "gpu": "h100-sxm", "rows": 12, "gpus_min": 8, "gpus_max": 16,
   "sources": ["a", "b"], "signed_error_pct": {"p10": -20, "median": -5, "p90": 10},
   "mape_pct": 9.5, "mape_pct_calib": 9, "mape_pct_heldout": 10},
  {"framework": "fsdp", "gpu": "a100-80gb", "rows": 3, "gpus_min": 8, "gpus_max": 64,
   "sources": ["c"], "signed_error_pct": {"p10": -3, "median": 1, "p90": 4}, "mape_pct": 3}]}
JSON
cat >"$dir/sweep.json" <<'JSON'
{"model": "gpt3-1.3b", "systems": ["dgx-h100", "dgx-a100-80gb", "dgx-b200"],
 "framework": ["megatron", "fsdp"], "gpus": [8, 32], "profile": "roofline",
 "training": {"global_batch": 256}, "space": {"micro_batch": [1, 2], "zero": [0, 3]},
 "best_by": ["system", "gpus", "framework"]}
JSON
"$bin" search "$dir/sweep.json" -o "$dir/out" --quiet --no-dataset || fail "search exited $?"
python3 - "$dir/out/plans.json" "$dir/data/trust_bands.json" <<'PY' || fail "trust"
import json, sys
p = json.load(open(sys.argv[1]))
bands = {(d["framework"], d["gpu"]): d for d in json.load(open(sys.argv[2]))["domains"]}
gpu = {"dgx-h100": "h100-sxm", "dgx-a100-80gb": "a100-80gb", "dgx-b200": "b200"}
seen = set()
for g in p["best_by"]["groups"]:
    plan = g["fastest"]
    fw = plan["framework"] if isinstance(plan["framework"], str) else plan["framework"]["name"]
    t = plan["trust"]
    key = (fw, gpu[g["system"]])
    if key == ("megatron", "h100-sxm") and g["gpus"] == 8:
        want, note = True, "inside"
    elif key == ("megatron", "h100-sxm"):
        want, note = False, "outside the validated GPU counts (8-16)"
    elif key == ("fsdp", "a100-80gb"):
        want, note = False, "only 3 validated rows"
    elif key[1] in ("h100-sxm", "a100-80gb"):  # the same GPU, another stack
        want, note = False, "nearest: %s on %s" % next(k for k in bands if k[1] == key[1])
    elif fw in ("megatron", "fsdp"):  # b200: the same framework, another GPU
        want, note = False, "nearest: %s on %s" % next(k for k in bands if k[0] == fw)
    assert t["inside"] == want and note in t["note"], (key, g["gpus"], t)
    d = bands[(t["domain"]["framework"], t["domain"]["gpu"])]
    e = d["signed_error_pct"]
    assert t["error_band_pct"] == [e["p10"], e["p90"]], t
    lo, hi = t["iteration_time_band_s"]
    it = plan["iteration_time_s"]
    assert abs(lo - it / (1 + e["p90"] / 100)) < 1e-12 * it and abs(hi - it / (1 + e["p10"] / 100)) < 1e-12 * it
    seen.add((key, t["inside"]))
assert len(seen) >= 5, seen
print("ok:", sorted(seen))
PY

# no validated stack at all: a GPU and a framework nobody validated
python3 - "$dir/data/trust_bands.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["domains"] = [x for x in d["domains"] if x["gpu"] == "a100-80gb"]
json.dump(d, open(sys.argv[1], "w"))
PY
"$bin" search "$dir/sweep.json" -o "$dir/none" --quiet --no-dataset || fail "search exited $?"
python3 - "$dir/none/plans.json" <<'PY' || fail "no stack"
import json, sys
p = json.load(open(sys.argv[1]))
g = [g for g in p["best_by"]["groups"] if g["system"] == "dgx-b200" and g["framework"] == "megatron"][0]
t = g["fastest"]["trust"]
assert t["domain"] is None and not t["inside"] and "no validated stack" in t["note"], t
PY

# simulate carries the same trust as a plan: JSON key and summary line
cat >"$dir/data/trust_bands.json" <<'JSON'
{"format": "llmplan-trust-bands", "format_version": 1, "command": "hand-written for tests/cli/trust.sh",
 "domains": [
  {"framework": "megatron", "gpu": "h100-sxm", "rows": 12, "gpus_min": 8, "gpus_max": 16,
   "sources": ["a", "b"], "signed_error_pct": {"p10": -20, "median": -5, "p90": 10},
   "mape_pct": 9.5, "mape_pct_calib": 9, "mape_pct_heldout": 10}]}
JSON
cat >"$dir/run.json" <<'JSON'
{"model": "gpt3-1.3b", "system": "dgx-h100", "parallel": {"tp": 1, "pp": 1, "dp": 8},
 "training": {"global_batch": 64, "precision": "bf16"}, "framework": "megatron"}
JSON
"$bin" simulate "$dir/run.json" --json >"$dir/sim.json" || fail "simulate exited $?"
python3 - "$dir/sim.json" <<'PY' || fail "simulate --json trust"
import json, sys
r = json.load(open(sys.argv[1]))
t = r["trust"]
assert t["inside"] and t["domain"]["framework"] == "megatron" and t["error_band_pct"] == [-20, 10], t
lo, hi = t["iteration_time_band_s"]
it = r["iteration_time_s"]
assert abs(lo - it / 1.10) < 1e-9 * it and abs(hi - it / 0.80) < 1e-9 * it, (lo, hi, it)
PY
"$bin" simulate "$dir/run.json" | grep -q "^trust      inside the validated domain (megatron on h100-sxm, 12 rows); validated error p10..p90 -20.0..+10.0%" ||
    fail "simulate summary trust line"

echo '{"format": "llmplan-trust-bands", "domains": [{"framework": "megatron"}]}' >"$dir/data/trust_bands.json"
out=$("$bin" simulate "$dir/run.json" 2>&1) && fail "simulate accepted bad bands"
case "$out" in *trust_bands.json*) ;; *) fail "simulate message: $out" ;; esac
out=$("$bin" search "$dir/sweep.json" -o "$dir/bad" --quiet --no-dataset 2>&1) && fail "bad bands accepted"
case "$out" in *trust_bands.json*"domains[0]"*) ;; *) fail "message: $out" ;; esac
rm "$dir/data/trust_bands.json"
"$bin" search "$dir/sweep.json" -o "$dir/absent" --quiet --no-dataset || fail "search exited $?"
grep -q '"trust"' "$dir/absent/plans.json" && fail "trust without a bands file"
"$bin" simulate "$dir/run.json" --json | grep -q '"trust"' && fail "simulate trust without a bands file"
echo PASS
