#!/usr/bin/env bash
# Issue #20: the summary's line of schedule work ("schedules: S solved, M
# answered by the memo; O operations in the solved ones, P% extrapolated")
# sums every rank's simulators. Each simulated configuration that fits asks
# for one schedule, so S + M is stats.feasible (this sweep has no other
# refusal than memory): on 1 rank and on 3 (how many the memo answers may
# differ with how the indices are dealt; the sum may not), with --prune too
# (only the configurations the bound could not decide are simulated), and
# operations are counted for what was solved.
source "$(dirname "$0")/lib.bash" "$@"

cat >"$SCRATCH/s.json" <<'JSON'
{"models": ["gpt3-1.3b", "gpt3-6.7b"], "system": "dgx-a100-80gb",
 "gpus": [8, 32, 128], "training": {"global_batch": 512, "tokens": 2e10},
 "profile": "roofline",
 "space": {"tp": "auto", "pp": "auto", "vp": [1, 2], "micro_batch": [1, 2, 4],
           "recompute": "auto", "zero": [0, 1], "schedule": "auto"}}
JSON

# one run: the schedules line against plans.json's counters
one() { # one NAME RANKS EXTRA...
    local name=$1 n=$2
    shift 2
    mpi "$n" "$LLMPLAN" search "$SCRATCH/s.json" -o "$SCRATCH/$name" --no-dataset "$@" \
        >"$SCRATCH/$name.out" 2>&1 || { cat "$SCRATCH/$name.out"; fail "$name: search failed"; }
    python3 - "$SCRATCH/$name.out" "$SCRATCH/$name/plans.json" <<'PY' || fail "$name: schedules line"
import json, re, sys
text = open(sys.argv[1]).read()
m = re.search(r"schedules: (\d+) solved, (\d+) answered by the memo; (\d+) operations "
              r"in the solved ones, ([0-9.]+)% extrapolated", text)
if not m:
    sys.exit("no schedules line in:\n" + text)
solved, memo, ops, pct = int(m[1]), int(m[2]), int(m[3]), float(m[4])
st = json.load(open(sys.argv[2]))["stats"]
reasons = set(st.get("infeasible_by_reason", {}))
if not reasons <= {"out_of_memory"}:
    sys.exit(f"other refusals than memory: {reasons}")
if solved + memo != st["feasible"] or solved == 0 or ops < solved or not 0 <= pct <= 100:
    sys.exit(f"solved {solved} + memo {memo} vs feasible {st['feasible']}; ops {ops}, {pct}%")
print(f"{solved} {memo} {ops} {st['feasible']}")
PY
}
a=$(one r1 1) && b=$(one r3 3) && c=$(one p1 1 --prune) || exit 1
check "1 rank: solved / memo / ops / feasible $a; 3 ranks: $b; --prune: $c"
[ "$(echo "$a" | awk '{print $1 + $2}')" = "$(echo "$b" | awk '{print $1 + $2}')" ] ||
    fail "solved + memo differ between 1 and 3 ranks: $a / $b"
[ "$(echo "$c" | awk '{print ($1 + $2 < $4 + 1) && ($4 > 0)}')" = 1 ] || fail "--prune: $c"
[ "$(echo "$c" | awk '{print $1}')" -lt "$(echo "$a" | awk '{print $1}')" ] ||
    fail "--prune solved no fewer schedules: $c against $a"
echo "sched_stats: all passed"
