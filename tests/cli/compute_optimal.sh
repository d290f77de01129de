#!/usr/bin/env bash
# scripts/compute_optimal.py's selection, worked by hand on three plans of
# two shapes (dollars and seconds per token, as the script derives them from
# a sweep row): within a budget and a deadline a plan trains
# min(B / c, T / t) tokens, a shape keeps its plan with the most, and the
# 20-tokens-per-parameter rule takes a shape's cheapest plan that trains 20 N
# tokens within both (a plan that misses the deadline never counts).
#   compute_optimal.sh LLMPLAN SRCDIR SCRATCH
set -u
src=$2
# the interpreter that has Debian's numpy (python3 on PATH may be another
# installation); scripts/test.sh installs it with python3-h5py
py=""
for p in python3 /usr/bin/python3; do
    if "$p" -c "import numpy" 2>/dev/null; then py=$p && break; fi
done
[ -n "$py" ] || { echo "FAIL: no python3 with numpy (apt-get install python3-numpy)"; exit 1; }
PYTHONPATH="$src/scripts" "$py" - <<'PY'
import numpy as np
import compute_optimal as co
cols = {"model": np.array([0, 0, 1])}
c = np.array([1e-6, 2e-6, 3e-6])    # $ per token
t = np.array([1e-6, 0.5e-6, 1e-6])  # s per token
params = np.array([1e9, 2e9])
fails = []
def check(name, ok, detail):
    print(("ok   " if ok else "FAIL ") + name + ": " + detail)
    fails.append(name) if not ok else None
# B = $10, T = 4 s: plan 0 trains min(1e7, 4e6) = 4e6 (the deadline binds),
# plan 1 min(5e6, 8e6) = 5e6 (the budget binds): shape 0 keeps plan 1;
# shape 1's only plan trains min(3.33e6, 4e6)
best, d = co.best_per_shape(cols, 2, c, t, 10.0, 4.0)
check("shape 0 keeps the plan with the most tokens", best[0] == 1 and abs(d[0] - 5e6) < 1, f"{best[0]}, {d[0]:.6g}")
check("shape 1: the budget binds", best[1] == 2 and abs(d[1] - 10 / 3e-6) < 1, f"{best[1]}, {d[1]:.6g}")
# B = $1e5, T = 3e4 s, D = 20 N: shape 0 (2e10 tokens): plan 0 $2e4 in 2e4 s,
# plan 1 $4e4 in 1e4 s -> plan 0, the cheaper; shape 1 (4e10): $1.2e5 > B -> none
r = co.rule20(cols, params, c, t, 1e5, 3e4)
check("rule 20: the cheapest plan within budget and deadline", r == {0: 0}, str(r))
# a deadline of 1.5e4 s: plan 0 (2e4 s) misses it, plan 1 (1e4 s) is taken
r = co.rule20(cols, params, c, t, 1e5, 1.5e4)
check("rule 20: a plan that misses the deadline never counts", r == {0: 1}, str(r))
# a deadline no plan meets: nothing
r = co.rule20(cols, params, c, t, 1e9, 1e3)
check("rule 20: none within the deadline", r == {}, str(r))
raise SystemExit(1 if fails else 0)
PY
