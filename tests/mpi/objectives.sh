#!/usr/bin/env bash
# Issue #17: the optional objectives ("objectives": tokens_per_usd, loss).
# From sweep.h5's rows (and `llmplan loss` for L(N, D)) this recomputes
# tokens_per_usd_optimal, loss_optimal, top_loss's order and the (cost, loss)
# front pareto_loss; checks tokens_per_usd x cost_usd = the budget on every
# row of a system with goodput (the bill's tokens per dollar); the outputs
# do not depend on the rank count; bad "objectives" are refused by name.
source "$(dirname "$0")/lib.bash" "$@"
command -v h5dump >/dev/null || { echo "SKIP: h5dump not found (hdf5-tools)"; exit 77; }

cat >"$SCRATCH/obj.json" <<'JSON'
{"models": ["gpt3-350m", "gpt3-1.3b", "gpt3-2.7b"],
 "systems": ["dgx-a100-80gb",
             {"preset": "dgx-h100", "goodput": {"mtbf_gpu_hours": 2000, "checkpoint_s": 120, "restart_s": 900}}],
 "gpus": [8, 16], "training": {"global_batch": 128, "tokens": 2e10},
 "profile": "roofline", "objectives": ["tokens_per_usd", "loss"], "loss_fit": "besiroglu2024",
 "constraints": {"max_cost_usd": 1500}, "best_by": "model", "top_k": 4,
 "space": {"tp": [1, 2], "pp": [1, 2], "micro_batch": [1, 2, 4], "zero": [0, 1]}}
JSON

check "objectives on 1 and 3 ranks"
"$LLMPLAN" search "$SCRATCH/obj.json" -o "$SCRATCH/o1" --quiet 2>"$SCRATCH/err1" ||
    fail "search exited $?: $(cat "$SCRATCH/err1")"
mpi 3 "$LLMPLAN" search "$SCRATCH/obj.json" -o "$SCRATCH/o3" --quiet --chunk 4 ||
    fail "search on 3 ranks exited $?"
diff <(strip_plans "$SCRATCH/o1/plans.json") <(strip_plans "$SCRATCH/o3/plans.json") >/dev/null ||
    fail "plans.json differs between 1 and 3 ranks"

check "optima, top_loss and pareto_loss recomputed from sweep.h5"
for c in index model feasible cost_usd tokens_per_usd memory_per_gpu_gib; do
    h5_values "$SCRATCH/o1/sweep.h5" "/configs/$c" >"$SCRATCH/col_$c" || fail "h5dump $c"
done
h5dump -m %.17g -a /model_params "$SCRATCH/o1/sweep.h5" | python3 -c '
import re, sys
t = sys.stdin.read(); t = t[t.index("DATA {") + 6:]
print("\n".join(re.sub(r"\(\d+\):", " ", t[:t.index("}")]).replace(",", " ").split()))' \
    >"$SCRATCH/params" || fail "h5dump model_params"
while read -r n; do "$LLMPLAN" loss "$n" 2e10 --fit besiroglu2024; done <"$SCRATCH/params" \
    >"$SCRATCH/losses" || fail "llmplan loss"
python3 - "$SCRATCH" <<'PY' || fail "recomputation differs"
import json, sys
d = sys.argv[1]
col = lambda c: [l.strip() for l in open("%s/col_%s" % (d, c))]
models = ["gpt3-350m", "gpt3-1.3b", "gpt3-2.7b"]
loss = [json.loads(l)["loss"] for l in open(d + "/losses")]
rows = [dict(index=int(i), model=m if m in models else models[int(m)], feasible=f == "1",
             cost=float(c), tpu=float(t), mem=float(g))
        for i, m, f, c, t, g in zip(col("index"), col("model"), col("feasible"), col("cost_usd"),
                                    col("tokens_per_usd"), col("memory_per_gpu_gib"))]
for r in rows:
    r["loss"] = loss[models.index(r["model"])]
feas = [r for r in rows if r["feasible"]]
assert feas, "no feasible row"
# the bill's tokens per dollar: a budget of D tokens costs D / tokens_per_usd,
# goodput (the H100 system) and all
for r in feas:
    assert abs(r["tpu"] * r["cost"] / 2e10 - 1) < 1e-9, ("tokens_per_usd x cost != D", r)
p = json.load(open(d + "/o1/plans.json"))
ok = [r for r in feas if r["cost"] <= 1500]
excl = p["stats"]["excluded_by_constraint"].get("max_cost_usd", 0)
assert excl == len(feas) - len(ok) > 0, (excl, len(feas), len(ok))
# memory tie-break in GiB here, bytes in the tool: same order
best_tpu = min(ok, key=lambda r: (-r["tpu"], r["mem"], r["index"]))
assert p["tokens_per_usd_optimal"]["index"] == best_tpu["index"], "tokens_per_usd_optimal"
order = sorted(ok, key=lambda r: (r["loss"], r["cost"], r["mem"], r["index"]))
assert p["loss_optimal"]["index"] == order[0]["index"], "loss_optimal"
assert abs(p["loss_optimal"]["loss"] - order[0]["loss"]) < 1e-12, "loss value"
got = [e["index"] for e in p["top_loss"]]
assert got == [r["index"] for r in order][:len(got)] or any("equivalent_to" in e for e in p["top_loss"]), ("top_loss", got)
front = [r for r in ok if not any(
    (o["cost"] <= r["cost"] and o["loss"] <= r["loss"]) and
    (o["cost"] < r["cost"] or o["loss"] < r["loss"] or (o["mem"], o["index"]) < (r["mem"], r["index"]))
    for o in ok if o is not r)]
front.sort(key=lambda r: (r["cost"], r["loss"], r["mem"], r["index"]))
assert [e["index"] for e in p["pareto_loss"]] == [r["index"] for r in front], \
    ("pareto_loss", [e["index"] for e in p["pareto_loss"]], [r["index"] for r in front])
# a cheaper plan of a larger model lowers the loss: the front has more than one model
assert len({r["model"] for r in front}) > 1, "front of one model"
for g in p["best_by"]["groups"]:
    for k in ("fastest", "cheapest", "most_tokens_per_usd", "lowest_loss"):
        assert g[k]["model"] == g["model"] if isinstance(g[k]["model"], str) else True, k
    mine = [r for r in ok if r["model"] == g["model"]]
    b = min(mine, key=lambda r: (r["loss"], r["cost"], r["mem"], r["index"]))
    assert g["lowest_loss"]["index"] == b["index"], ("group lowest_loss", g["model"])
assert p["stats"]["loss_fit"] == "besiroglu2024"
print("ok: %d feasible, %d ranked, front of %d" % (len(feas), len(ok), len(front)))
PY

check "no optional lists unless asked for"
python3 - "$SCRATCH/obj.json" "$SCRATCH/plain.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("objectives", "loss_fit"):
    d.pop(k)
json.dump(d, open(sys.argv[2], "w"))
PY
"$LLMPLAN" search "$SCRATCH/plain.json" -o "$SCRATCH/plain" --quiet --no-dataset || fail "plain"
python3 - "$SCRATCH/plain/plans.json" <<'PY' || fail "optional keys without objectives"
import json, sys
p = json.load(open(sys.argv[1]))
bad = [k for k in ("top_loss", "top_tokens_per_usd", "pareto_loss", "loss_optimal") if k in p]
assert not bad and "lowest_loss" not in p["best_by"]["groups"][0], bad
assert "loss" not in p["time_optimal"]
PY

check "bad objectives are refused by key"
refused "$SCRATCH/obj.json" 'd["objectives"] = ["speed"]' "key 'objectives'"
refused "$SCRATCH/obj.json" 'd["objectives"] = ["loss", "loss"]' "given twice"
refused "$SCRATCH/obj.json" 'd["training"].pop("tokens"); d.pop("constraints")' "expects a token budget"
refused "$SCRATCH/obj.json" 'd["loss_fit"] = "kaplan2020"' "key 'loss_fit'"
refused "$SCRATCH/obj.json" 'd["objectives"] = ["tokens_per_usd"]' "only with \"loss\""
refused "$SCRATCH/obj.json" 'd["training"]["finetune"] = {"method": "lora"}' "not of fine-tuning"
echo PASS
