#!/usr/bin/env bash
# Throughput of `llmplan search` on 1 and 2 ranks (a benchmark, not a test).
#
#   scripts/bench-search.sh [BUILD_DIR] [RANKS...]      (default: build 1 2)
#
# For each sweep (data/sweeps/calculon-fig5.json; "calculon-shared": the same
# space reduced to the dimensions Calculon also has, i.e. without cp;
# data/sweeps/demo.json; and "scaling": 8 models x 8..4096 GPUs, ~7e5
# simulations, long enough to show the speed-up) and rank count, runs the
# search with the dataset, without it, and without it with --prune (issue
# #20), and prints: the space size, simulated configurations, those pruned
# (--prune: bounded, never solved; not counted as simulated), the sweep's wall time (stats.wall_s), the ranks' whole
# process time (MPI_Init, profile loading and output included; mpirun's own
# launch excluded), indices walked per second, configurations simulated per
# second per core on each of the two times, and the speed-up over 1 rank.
# Environment: PROFILE (default: the sweep's own, i.e. data/profiles/<gpu>.h5),
# REPEAT (best of N runs, default 3), MPIEXEC (default mpirun), SWEEPS (a subset of
# "calculon-fig5 calculon-shared demo scaling"), DATASETS (a subset of "no yes prune").
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
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian package time)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
extra=()
[ -n "${PROFILE:-}" ] && extra=(--profile "$PROFILE")

printf '%-15s %-7s %5s %10s %9s %9s %8s %9s %11s %11s %12s %7s\n' sweep dataset ranks space \
    simulated pruned wall_s process_s "indices/s" "sim/s/core" "proc/s/core" speedup
cat >"$TMP/scaling.json" <<'JSON'
{"models": ["gpt3-1.3b", "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b", "llama2-7b", "llama2-13b",
            "llama3-8b", "gpt-neox-20b"],
 "system": "dgx-a100-80gb", "gpus": {"min": 8, "max": 4096, "step": "x2"},
 "training": {"global_batch": 1024, "precision": "bf16", "tokens": 1e11},
 "space": {"tp": "auto", "pp": "auto", "vp": [1, 2, 4], "micro_batch": "auto",
           "sequence_parallel": "auto", "recompute": "auto", "zero": "auto", "schedule": "auto"}}
JSON
python3 - "$ROOT/data/sweeps/calculon-fig5.json" "$TMP/calculon-shared.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["name"] = "calculon-shared"
d["space"]["cp"] = [1]
json.dump(d, open(sys.argv[2], "w"))
PY
for sweep in ${SWEEPS:-calculon-fig5 calculon-shared demo scaling}; do
    file=$ROOT/data/sweeps/$sweep.json
    [ "$sweep" = scaling ] && file=$TMP/scaling.json
    [ "$sweep" = calculon-shared ] && file=$TMP/calculon-shared.json
    for ds in ${DATASETS:-no yes prune}; do
        base=""
        for n in $RANKS; do
            best=""
            bestp=""
            for _ in $(seq "$REPEAT"); do
                rm -rf "$TMP/out" "$TMP"/time.*
                args=(search "$file" -o "$TMP/out" --quiet "${extra[@]}")
                [ "$ds" = no ] && args+=(--no-dataset)
                [ "$ds" = prune ] && args+=(--no-dataset --prune)
                # each rank's elapsed time, from exec to exit
                "$MPIEXEC" --oversubscribe -np "$n" sh -c \
                    '/usr/bin/time -f %e -o "$0/time.${OMPI_COMM_WORLD_RANK:-0}" "$@"' \
                    "$TMP" "$LLMPLAN" "${args[@]}" >/dev/null 2>&1 ||
                    { echo "$sweep: search failed on $n ranks" >&2; exit 1; }
                w=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stats"]["wall_s"])' "$TMP/out/plans.json")
                p=$(cat "$TMP"/time.* | sort -g | tail -1)
                if [ -z "$best" ] || python3 -c "import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))" "$w" "$best"; then
                    best=$w
                fi
                if [ -z "$bestp" ] || python3 -c "import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))" "$p" "$bestp"; then
                    bestp=$p
                fi
            done
            read -r space sim pruned <<<"$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["stats"]; print(s["space_size"], s["evaluated"], s.get("pruned", 0))' "$TMP/out/plans.json")"
            [ -z "$base" ] && base=$best
            python3 - "$sweep" "$ds" "$n" "$space" "$sim" "$best" "$base" "$bestp" "$pruned" <<'PY'
import sys
sweep, ds, n, space, sim, wall, base, proc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7]), float(sys.argv[8])
pruned = int(sys.argv[9])
print("%-15s %-7s %5d %10d %9d %9d %8.3f %9.2f %11.0f %11.0f %12.0f %7.2f" % (sweep, ds, n, space, sim, pruned, wall, proc, space / wall, sim / wall / n, sim / proc / n, base / wall))
PY
        done
    done
done
echo
echo "wall_s: best of $REPEAT (stats.wall_s: from the start of the sweep to the reduced results,"
echo "MPI start-up and profile loading excluded); process_s: best of $REPEAT of the slowest rank's"
echo "elapsed time (MPI_Init, loading and outputs included, mpirun's launch excluded);"
echo "$(nproc) cores; $(uname -m); load average $(cut -d' ' -f1-3 /proc/loadavg)"
