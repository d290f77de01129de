#!/usr/bin/env bash
# Issue #17 part 7: cost closer to a bill. Billing per node (12 GPUs on
# 8-GPU nodes pay for 16), energy (GPUs x power x PUE x $/kWh) and goodput
# (Young/Daly checkpointing under failures lengthens the run), each against
# its formula (src/core/bill.c) computed here by hand.
#   bill.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
export LLMPLAN_DATA=${LLMPLAN_DATA:-$src/data}
run() { # run NAME SYSTEM-JSON
    cat >"$dir/$1.json" <<JSON
{"model": "gpt3-1.3b", "system": $2, "gpus": 12,
 "parallel": {"tp": 1, "pp": 1, "micro_batch": 4}, "training": {"global_batch": 96, "tokens": 1e10}}
JSON
    "$bin" simulate "$dir/$1.json" --json --profile roofline >"$dir/$1.out" || { echo "FAIL simulate $1"; exit 1; }
}
run plain '"dgx-h100"'
run node '{"preset": "dgx-h100", "billing": "node"}'
run energy '{"preset": "dgx-h100", "energy": {"pue": 1.3, "usd_per_kwh": 0.12}}'
run goodput '{"preset": "dgx-h100", "goodput": {"mtbf_gpu_hours": 2000, "checkpoint_s": 120, "restart_s": 900}}'
python3 - "$dir" "$src/data/gpus/h100-sxm.json" <<'PY' || { echo FAIL; exit 1; }
import json, math, sys
d = sys.argv[1]
r = {k: json.load(open("%s/%s.out" % (d, k))) for k in ("plain", "node", "energy", "goodput")}
p, t = r["plain"], r["plain"]["training"]
secs = t["time_days"] * 86400
def close(a, b): return abs(a - b) <= 1e-9 * abs(b)
# billing per node: 12 GPUs on 8-GPU nodes are billed as 16, time unchanged
assert r["node"]["iteration_time_s"] == p["iteration_time_s"]
assert close(r["node"]["training"]["cost_usd"], t["cost_usd"] * 16 / 12), r["node"]["training"]
assert close(r["node"]["cost_per_iteration_usd"], p["cost_per_iteration_usd"] * 16 / 12)
assert r["node"]["training"]["gpu_hours"] == t["gpu_hours"]
# energy: 12 GPUs x TDP x PUE 1.3 at $0.12/kWh on top of the GPU-hours
tdp = json.load(open(sys.argv[2]))["tdp_w"]
energy = 12 * tdp * 1.3 / 1000 * 0.12 * secs / 3600
assert close(r["energy"]["training"]["cost_usd"], t["cost_usd"] + energy), (r["energy"]["training"], energy)
# goodput: M = 2000 h x 3600 / 12 GPUs, tau = sqrt(2 C M), w = C/tau + (tau/2 + R)/M
M = 2000 * 3600 / 12.0
tau = math.sqrt(2 * 120 * M)
w = 120 / tau + (tau / 2 + 900) / M
g = r["goodput"]["training"]
assert close(g["goodput"], 1 - w), (g["goodput"], 1 - w)
assert close(g["time_days"], t["time_days"] / (1 - w)) and close(g["cost_usd"], t["cost_usd"] / (1 - w))
assert r["goodput"]["iteration_time_s"] == p["iteration_time_s"]
assert "goodput" not in t
print("ok   node x%.4f, energy +$%.2f, goodput %.4f" % (16 / 12, energy, 1 - w))
PY
out=$("$bin" simulate <(sed 's/"billing": "node"/"billing": "instance"/' "$dir/node.json") --profile roofline 2>&1 >/dev/null)
case "$out" in *"system.billing"*'"gpu" or "node"'*) ;; *) echo "FAIL bad billing: $out"; exit 1 ;; esac
echo "PASS"
