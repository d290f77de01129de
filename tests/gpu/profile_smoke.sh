#!/usr/bin/env bash
# GPU smoke test of llmplan-profile: a --quick run on this node's GPU(s), and
# the profile it writes must pass `llmplan profile check`.
# argv: $1 llmplan binary, $2 source dir, $3 scratch dir. Exits 77 (skip)
# where there is no GPU or llmplan-profile was not built.
set -u
llmplan=$1
src=$2
scratch=$3
profile=$(dirname "$llmplan")/../profiler/llmplan-profile

if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "skip: no GPU (nvidia-smi -L failed)"
    exit 77
fi
if [ ! -x "$profile" ]; then
    echo "skip: $profile not built (CUDA not found at configure time)"
    exit 77
fi
mkdir -p "$scratch"
rm -f "$scratch/p.h5"
export LLMPLAN_DATA=${LLMPLAN_DATA:-$src/data}

ngpu=$(nvidia-smi -L | grep -c '^GPU')
if [ "$ngpu" -ge 2 ] && [ -n "${MPIEXEC:-}" ]; then
    # collectives need one rank per GPU
    n=$(( ngpu < 8 ? ngpu : 8 ))
    run=("$MPIEXEC" -np "$n" "$profile")
else
    run=("$profile")
fi
if ! timeout 600 "${run[@]}" --quick -o "$scratch/p.h5" >"$scratch/profile.log" 2>&1; then
    echo "FAIL: llmplan-profile --quick"
    cat "$scratch/profile.log"
    exit 1
fi
tail -n 5 "$scratch/profile.log"
[ -s "$scratch/p.h5" ] || { echo "FAIL: no profile written"; exit 1; }

if "$llmplan" profile check "$scratch/p.h5" >"$scratch/check.log" 2>&1; then
    cat "$scratch/check.log"
    echo "ok: profile check passed"
    exit 0
fi
cat "$scratch/check.log"
echo "FAIL: llmplan profile check"
exit 1
