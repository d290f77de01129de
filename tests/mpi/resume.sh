#!/usr/bin/env bash
# A sweep stopped by a signal writes a checkpoint and exits 3; --resume (with
# any rank count) finishes it, and the outputs equal an uninterrupted run's.
#   A: 2 ranks under mpirun, SIGUSR1 to mpirun (forwarded to the ranks),
#      resumed on 3 ranks;
#   B: 1 process without mpirun, SIGTERM, resumed on 1 rank.
source "$(dirname "$0")/lib.bash" "$@"

# ~1.5e6 indices, ~1.4e5 simulated: a few seconds per run; --segment 2^19 makes
# 3 dataset segments (periodic checkpoints at their ends)
cat >"$SCRATCH/sweep.json" <<'JSON'
{
  "models": ["gpt3-2.7b", "llama2-13b", "gpt-neox-20b"],
  "system": "dgx-a100-80gb",
  "gpus": {"min": 8, "max": 2048, "step": "x2"},
  "training": {"global_batch": 1024, "precision": "bf16", "tokens": 1e11},
  "profile": "roofline",
  "space": {"tp": "auto", "pp": "auto", "vp": [1, 2, 4], "micro_batch": "auto",
            "sequence_parallel": "auto", "recompute": "auto", "zero": "auto",
            "schedule": "auto"}
}
JSON

check "reference: uninterrupted run on 2 ranks"
mpi 2 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/ref" --quiet --segment 524288 || fail "reference run exited $?"

# The signal goes out as soon as the run has created its sweep.h5 (after
# start-up): mid-run however loaded the machine is.
check "A: 2 ranks, SIGUSR1 to mpirun once the run has started"
# started directly (not through a shell function) so that $! is mpirun
"$MPIEXEC" --oversubscribe -np 2 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/a" --quiet --segment 524288 &
pid=$!
wait_for "$SCRATCH/a/sweep.h5"
sleep 0.2
kill -USR1 $pid
wait $pid
rc=$?
[ $rc -eq 3 ] || fail "expected exit status 3 after SIGUSR1, got $rc"
check "A: checkpoint.bin exists, plans.json does not"
[ -s "$SCRATCH/a/checkpoint.bin" ] || fail "no checkpoint"
[ ! -e "$SCRATCH/a/plans.json" ] || fail "plans.json written by an interrupted run"
check "A: --resume on 3 ranks completes"
mpi 3 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/a" --quiet --segment 524288 --resume ||
    fail "resumed run exited $?"
[ ! -e "$SCRATCH/a/checkpoint.bin" ] || fail "checkpoint left after completion"
check "A: outputs equal the uninterrupted run's"
same_outputs "$SCRATCH/ref" "$SCRATCH/a"

check "B: 1 process (no mpirun), SIGTERM once the run has started"
"$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/b" --quiet --segment 524288 &
pid=$!
wait_for "$SCRATCH/b/sweep.h5"
sleep 0.2
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 3 ] || fail "expected exit status 3 after SIGTERM, got $rc"
[ -s "$SCRATCH/b/checkpoint.bin" ] || fail "no checkpoint"
check "B: a checkpoint of another sweep is refused"
sed 's/"top_k"//; s/"global_batch": 1024/"global_batch": 512/' "$SCRATCH/sweep.json" \
    >"$SCRATCH/other.json"
cp -r "$SCRATCH/b" "$SCRATCH/b2"
"$LLMPLAN" search "$SCRATCH/other.json" -o "$SCRATCH/b2" --quiet --segment 524288 --resume 2>"$SCRATCH/err.txt"
rc=$?
[ $rc -eq 1 ] && grep -q "different sweep" "$SCRATCH/err.txt" ||
    { cat "$SCRATCH/err.txt"; fail "expected a refusal (status 1), got $rc"; }
check "B: --resume on 1 rank completes and equals the reference"
"$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/b" --quiet --segment 524288 --resume ||
    fail "resumed run exited $?"
same_outputs "$SCRATCH/ref" "$SCRATCH/b"
echo "PASS"
