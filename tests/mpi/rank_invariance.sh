#!/usr/bin/env bash
# plans.json and sweep.h5 do not depend on the rank count (1, 2, 3, 4 and 8 ranks,
# oversubscribed where the machine has fewer cores),
# the chunk size or the segment size.
source "$(dirname "$0")/lib.bash" "$@"

cat >"$SCRATCH/sweep.json" <<'JSON'
{
  "models": ["gpt3-2.7b", "gpt3-13b"],
  "systems": ["dgx-a100-80gb", "dgx-h100"],
  "gpus": {"min": 16, "max": 128, "step": "x2"},
  "training": {"global_batch": 256, "precision": "bf16", "tokens": 1e11},
  "profile": "roofline",
  "top_k": 5,
  "space": {"tp": [1, 2, 4, 8], "pp": "auto", "vp": [1, 2], "micro_batch": [1, 2, 4],
            "sequence_parallel": "auto", "recompute": ["none", "full"], "zero": [0, 1, 3]}
}
JSON

for n in 1 2 3 4 8; do
    check "search on $n rank(s)"
    mpi $n "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/np$n" --quiet --chunk 8 \
        --segment 20000 || fail "search on $n ranks exited $?"
done
check "a second 4-rank run with other chunk and segment sizes"
mpi 4 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/np4b" --quiet --chunk 1000 \
    || fail "search exited $?"

ev=$(json_get "$SCRATCH/np1/plans.json" 'd["stats"]["evaluated"]')
fe=$(json_get "$SCRATCH/np1/plans.json" 'd["stats"]["feasible"]')
check "the sweep is not trivial: evaluated=$ev feasible=$fe"
[ "$ev" -gt 1000 ] && [ "$fe" -gt 100 ] || fail "too small a sweep to test anything"
check "counters add up"
json_get "$SCRATCH/np1/plans.json" \
    'd["stats"]["evaluated"] + d["stats"]["skipped"] == d["stats"]["space_size"] and d["stats"]["evaluated"] == d["stats"]["feasible"] + sum(d["stats"]["infeasible_by_reason"].values())' |
    grep -q True || fail "counters do not add up"
check "ranks recorded"
[ "$(json_get "$SCRATCH/np3/plans.json" 'd["stats"]["ranks"]')" = 3 ] || fail "stats.ranks"

for n in 2 3 4 4b 8; do
    check "np1 == np$n (plans.json modulo timing, every sweep.h5 column)"
    same_outputs "$SCRATCH/np1" "$SCRATCH/np$n"
done
if command -v h5dump >/dev/null; then
    check "sweep.h5 has one row per evaluated configuration, sorted by index"
    h5_values "$SCRATCH/np2/sweep.h5" /configs/index >"$SCRATCH/index.txt"
    rows=$(wc -l <"$SCRATCH/index.txt")
    [ "$rows" = "$ev" ] || fail "sweep.h5 has $rows rows, expected $ev"
    sort -n -u -c "$SCRATCH/index.txt" || fail "rows not sorted by index"
    check "time_optimal's row is in sweep.h5 with the same iteration time"
    idx=$(json_get "$SCRATCH/np2/plans.json" 'd["time_optimal"]["index"]')
    t=$(json_get "$SCRATCH/np2/plans.json" 'repr(d["time_optimal"]["iteration_time_s"])')
    row=$(grep -n -x "$idx" "$SCRATCH/index.txt" | cut -d: -f1)
    [ -n "$row" ] || fail "index $idx not in sweep.h5"
    h5t=$(h5_values "$SCRATCH/np2/sweep.h5" /configs/iteration_time_s | sed -n "${row}p")
    python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-12 * a)" \
        "$t" "$h5t" || fail "iteration time $t in plans.json, $h5t in sweep.h5"
fi
echo "PASS"
