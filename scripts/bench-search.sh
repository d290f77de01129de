#!/usr/bin/env bash
# Throughput of `llmplan search` on 1 and 2 ranks (a benchmark, not a test).
#
#   scripts/bench-search.sh [BUILD_DIR] [RANKS...]      (default: build 1 2)
#
# For each sweep (data/sweeps/calculon-fig5.json, data/sweeps/demo.json, and
# "scaling": 8 models x 8..4096 GPUs, ~4e5 simulations, long enough to show
# the speed-up) and rank count, runs the search with and without the dataset, and prints: the
# space size, simulated configurations, wall time, indices walked per second,
# configurations simulated per second per core, and the speed-up over 1 rank.
# Environment: PROFILE (default: the sweep's own, i.e. data/profiles/<gpu>.h5),
# REPEAT (best of N runs, default 3), MPIEXEC (default mpirun).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
shift || true
RANKS=${*:-1 2}
LLMPLAN=$BUILD/search/llmplan
MPIEXEC=${MPIEXEC:-mpirun}
REPEAT=${REPEAT:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LLMPLAN_DATA=${LLMPLAN_DATA:-$ROOT/data}
[ -x "$LLMPLAN" ] || { echo "no $LLMPLAN (build first)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
extra=()
[ -n "${PROFILE:-}" ] && extra=(--profile "$PROFILE")

printf '%-14s %-8s %5s %10s %9s %9s %12s %14s %8s\n' sweep dataset ranks space simulated \
    wall_s "indices/s" "sim/s/core" speedup
cat >"$TMP/scaling.json" <<'JSON'
{"models": ["gpt3-1.3b", "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b", "llama2-7b", "llama2-13b",
            "llama3-8b", "gpt-neox-20b"],
 "system": "dgx-a100-80gb", "gpus": {"min": 8, "max": 4096, "step": "x2"},
 "training": {"global_batch": 1024, "precision": "bf16", "tokens": 1e11},
 "space": {"tp": "auto", "pp": "auto", "vp": [1, 2, 4], "micro_batch": "auto",
           "sequence_parallel": "auto", "recompute": "auto", "zero": "auto", "schedule": "auto"}}
JSON
for sweep in calculon-fig5 demo scaling; do
    file=$ROOT/data/sweeps/$sweep.json
    [ "$sweep" = scaling ] && file=$TMP/scaling.json
    for ds in no yes; do
        base=""
        for n in $RANKS; do
            best=""
            for _ in $(seq "$REPEAT"); do
                rm -rf "$TMP/out"
                args=(search "$file" -o "$TMP/out" --quiet "${extra[@]}")
                [ "$ds" = no ] && args+=(--no-dataset)
                "$MPIEXEC" --oversubscribe -np "$n" "$LLMPLAN" "${args[@]}" >/dev/null 2>&1 ||
                    { echo "$sweep: search failed on $n ranks" >&2; exit 1; }
                w=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stats"]["wall_s"])' "$TMP/out/plans.json")
                if [ -z "$best" ] || python3 -c "import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))" "$w" "$best"; then
                    best=$w
                fi
            done
            read -r space sim <<<"$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["stats"]; print(s["space_size"], s["evaluated"])' "$TMP/out/plans.json")"
            [ -z "$base" ] && base=$best
            python3 - "$sweep" "$ds" "$n" "$space" "$sim" "$best" "$base" <<'PY'
import sys
sweep, ds, n, space, sim, wall, base = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
print("%-14s %-8s %5d %10d %9d %9.3f %12.0f %14.0f %8.2f" % (sweep, ds, n, space, sim, wall, space / wall, sim / wall / n, base / wall))
PY
        done
    done
done
echo
echo "wall_s: best of $REPEAT (stats.wall_s: from the start of the sweep to the reduced results,"
echo "MPI start-up and profile loading excluded); $(nproc) cores; $(uname -m)"
