#!/usr/bin/env bash
# sweep.h5 read into pandas with the one-liner of docs/search.md (Debian's
# python3-h5py and python3-pandas): categorical columns come back as their
# names, infeasible rows have NaN (not 0) time and cost, every column has a
# units attribute, the run-wide settings of each system are columns and
# tokens_per_usd is tokens / (time x GPUs x price); `llmplan export --csv`
# writes the same table, atomically.
#   sweep_pandas.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
export LLMPLAN_DATA="$src/data"
# `search` initialises MPI: under a sanitizer build, ignore Open MPI's own leaks
export LSAN_OPTIONS="suppressions=$src/tests/mpi/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
fail() { echo "FAIL: $*" >&2; exit 1; }

# the interpreter that has Debian's h5py and pandas (python3 on PATH may be
# another installation); scripts/test.sh installs them through setup.sh
py=""
for p in python3 /usr/bin/python3; do
    if "$p" -c "import h5py, pandas" 2>/dev/null; then py=$p && break; fi
done
[ -n "$py" ] || fail "no python3 with h5py and pandas (apt-get install python3-h5py python3-pandas)"

# two systems of different price; GPT-3 175B on 64-128 GPUs: many
# configurations run out of memory, some fit
cat >"$dir/sweep.json" <<'JSON'
{"model": "gpt3-175b", "system": ["dgx-a100-80gb", "dgx-h100"], "gpus": [64, 128],
 "training": {"global_batch": 256, "precision": "bf16", "tokens": 1e10}, "profile": "roofline",
 "space": {"tp": [4, 8], "pp": [4, 8, 16], "micro_batch": [1, 2], "zero": [0, 1],
           "recompute": "auto", "sequence_parallel": "auto"}}
JSON
"$bin" search "$dir/sweep.json" -o "$dir/out" --quiet || fail "search exit $?"
"$bin" export "$dir/out/sweep.h5" --csv "$dir/sweep.csv" || fail "export exit $?"

# the one-liner exactly as documented
line='df = pd.DataFrame({k: pd.Categorical.from_codes(c[:], sorted(e, key=e.get)) if (e := h5py.check_enum_dtype(c.dtype)) else c[:] for k, c in f["configs"].items()})'
grep -qF "$line" "$src/docs/search.md" || fail "docs/search.md does not show the tested one-liner"

"$py" - "$dir/out/sweep.h5" "$dir/sweep.csv" "$src/data/systems" "$line" <<'PY' || exit 1
import json, math, sys
import h5py, numpy as np, pandas as pd
h5, csv, systems, line = sys.argv[1:5]
f = h5py.File(h5, "r")
exec(line)
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        sys.exit(1)
check(f.attrs["format_version"] == 2, "format_version 2")
cols = [c.decode() for c in f.attrs["columns"]]
check(sorted(cols) == sorted(df.columns), "the columns attribute lists every column")
check(all("units" in f["configs"][k].attrs for k in cols), "every column has a units attribute")
units = {k: f["configs"][k].attrs["units"].decode() for k in cols}
check(units["iteration_time_s"] == "s" and units["tokens_per_usd"] == "tokens/USD"
      and units["price_per_gpu_hour_usd"] == "USD/(GPU*h)" and units["recompute"] == "",
      "units of time, tokens per dollar, price, a categorical column")
for k in ("model", "system", "recompute", "schedule", "reason", "precision", "framework"):
    check(isinstance(df[k].dtype, pd.CategoricalDtype), f"{k} is categorical")
check(set(df.system) == {"dgx-a100-80gb", "dgx-h100"}, "system names")
check(set(df.model) == {"gpt3-175b"} and set(df.precision) == {"bf16"}
      and set(df.framework) == {"megatron"}, "model, precision, framework names")
check(set(df.recompute) <= {"none", "selective", "full"} and len(set(df.recompute)) == 3,
      "recompute names")
inf, fea = df[df.feasible == 0], df[df.feasible == 1]
check(len(inf) > 0 and len(fea) > 0, f"both feasible ({len(fea)}) and infeasible ({len(inf)}) rows")
check((inf.reason != "none").all() and (fea.reason == "none").all(), "reason none iff feasible")
nan_cols = ["iteration_time_s", "tokens_per_s", "mfu", "model_tflops_per_gpu", "compute_s",
            "tp_comm_s", "pp_bubble_s", "pp_comm_s", "dp_comm_exposed_s", "optimizer_s",
            "cost_per_iteration_usd", "cost_usd", "gpu_hours", "time_days", "tokens_per_usd",
            "zero3_gather_s"]
check(inf[nan_cols].isna().all().all(), "infeasible rows: NaN in every time and cost column")
check(fea[nan_cols].notna().all().all() and (fea.iteration_time_s > 0).all(),
      "feasible rows: finite figures")
check((inf.memory_per_gpu_gib > 0).all(), "infeasible rows keep their memory figure")
check(df.iteration_time_s.min() == fea.iteration_time_s.min(), "min over the column is a feasible row's")
for name in ("dgx-a100-80gb", "dgx-h100"):
    s = json.load(open(f"{systems}/{name}.json"))
    rows = df[df.system == name]
    check((rows.price_per_gpu_hour_usd == s["price_per_gpu_hour_usd"]).all()
          and (rows.gpus_per_node == s["gpus_per_node"]).all(),
          f"{name}: price {s['price_per_gpu_hour_usd']} and GPUs per node per row")
check((df.seq_len == 2048).all(), "seq_len 2048 (GPT-3)")
# tokens per dollar: one iteration's tokens over its cost
tpu = 256 * 2048 / (fea.iteration_time_s * fea.gpus * fea.price_per_gpu_hour_usd / 3600)
check(np.allclose(fea.tokens_per_usd, tpu, rtol=1e-12), "tokens_per_usd = tokens / cost")
# the CSV is the same table
# %.17g reads back to the same doubles (pandas' default parser is within a
# few ulps; its round_trip parser is exact)
c = pd.read_csv(csv, float_precision="round_trip")
check(list(c.columns) == cols, "CSV header in the columns order")
check(len(c) == len(df), "CSV rows")
for k in cols:
    a, b = df[k], c[k]
    if isinstance(a.dtype, pd.CategoricalDtype):
        same = (a.astype(str).values == b.astype(str).values).all()
    elif a.dtype.kind == "f":
        same = np.array_equal(a.values, b.values.astype(float), equal_nan=True)
    else:
        same = (a.values == b.values).all()
    check(same, f"CSV column {k} equals the HDF5 column") if not same else None
print(f"ok   CSV equals sweep.h5 in all {len(cols)} columns, {len(c)} rows")
PY

# bad input and atomicity
"$bin" export "$dir/sweep.json" --csv "$dir/x.csv" 2>"$dir/err.txt" && fail "a JSON file exported"
grep -q "sweep.json: cannot open" "$dir/err.txt" || fail "message: $(cat "$dir/err.txt")"
"$bin" export "$dir/out/sweep.h5" --csv "$dir/no/such/dir/x.csv" 2>"$dir/err.txt" &&
    fail "export into a missing directory succeeded"
grep -q "cannot create" "$dir/err.txt" || fail "message: $(cat "$dir/err.txt")"
ls "$dir" | grep -q "tmp" && fail "a temporary file was left: $(ls "$dir")"
echo "ok   export: bad input named, no temporary left"
exit 0
