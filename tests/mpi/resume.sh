#!/usr/bin/env bash
# A sweep stopped by a signal writes a checkpoint and exits 3; --resume (with
# any rank count) finishes it, and the outputs equal an uninterrupted run's.
#   A: 2 ranks; rank 0 alone is signalled mid-run (--stop-after raises SIGUSR1
#      in rank 0 after N indices: the other rank learns through a stop notice);
#      rows and a checkpoint are written after every segment (--checkpoint);
#      resumed on 3 ranks, interrupted again, resumed on 1 rank;
#   B: 2 ranks under mpirun, SIGUSR1 sent to mpirun (which forwards it);
#   C: 1 process without mpirun, SIGTERM.
source "$(dirname "$0")/lib.bash" "$@"

# ~3e6 indices in 12 segments of 2^18, ~2.8e5 simulated (about 2 s on 2 cores, so that a
# signal sent once the run has started lands mid-run)
cat >"$SCRATCH/sweep.json" <<'JSON'
{
  "models": ["gpt3-2.7b", "llama2-13b", "gpt-neox-20b", "gpt3-6.7b", "llama2-7b", "gpt3-13b"],
  "system": "dgx-a100-80gb",
  "gpus": {"min": 8, "max": 2048, "step": "x2"},
  "training": {"global_batch": 1024, "precision": "bf16", "tokens": 1e11},
  "profile": "roofline",
  "space": {"tp": "auto", "pp": "auto", "vp": [1, 2, 4], "micro_batch": "auto",
            "sequence_parallel": "auto", "recompute": "auto", "zero": "auto",
            "schedule": "auto"}
}
JSON
OPTS=(--quiet --segment 262144)
hide_mpirun_noise() { grep -v -E '^-+$|^$|Primary job|non-zero exit|Per user|aborted|detected that|causing|was:|Process name|Exit code' >&2; }

check "reference: uninterrupted run on 2 ranks"
mpi 2 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/ref" "${OPTS[@]}" ||
    fail "reference run exited $?"

check "A: 2 ranks, rank 0 signalled after 300000 of its indices (~600000 in all: 3rd segment)"
mpi 2 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/a" "${OPTS[@]}" --checkpoint 1e-9 \
    --stop-after 300000 2> >(hide_mpirun_noise)
rc=$?
[ $rc -eq 3 ] || fail "expected exit status 3, got $rc"
check "A: checkpoint.bin exists, plans.json does not"
[ -s "$SCRATCH/a/checkpoint.bin" ] || fail "no checkpoint"
[ ! -e "$SCRATCH/a/plans.json" ] || fail "plans.json written by an interrupted run"
check "A: resumed on 3 ranks and interrupted again once rank 0 has done 150000 more"
mpi 3 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/a" "${OPTS[@]}" --resume \
    --stop-after 150000 2> >(hide_mpirun_noise)
rc=$?
[ $rc -eq 3 ] || fail "expected exit status 3, got $rc"
check "A: resumed on 1 rank to completion"
"$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/a" "${OPTS[@]}" --resume ||
    fail "resumed run exited $?"
[ ! -e "$SCRATCH/a/checkpoint.bin" ] || fail "checkpoint left after completion"
check "A: outputs equal the uninterrupted run's"
same_outputs "$SCRATCH/ref" "$SCRATCH/a"

# B and C: the signal goes out as soon as the run has created its sweep.h5.partial
# (handlers are installed by then), so it lands mid-run however fast the
# machine; a run that still finished first fails the test (make the sweep
# bigger then).
check "B: 2 ranks, SIGUSR1 to mpirun once the run has started"
# started directly (not through a shell function) so that $! is mpirun
"$MPIEXEC" --oversubscribe -np 2 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/b" \
    "${OPTS[@]}" 2> >(hide_mpirun_noise) &
pid=$!
wait_for "$SCRATCH/b/sweep.h5.partial"
kill -USR1 $pid
wait $pid
rc=$?
[ $rc -eq 3 ] || fail "expected exit status 3 after SIGUSR1, got $rc"
[ -s "$SCRATCH/b/checkpoint.bin" ] || fail "no checkpoint"
[ ! -e "$SCRATCH/b/sweep.h5" ] || fail "an interrupted run left a sweep.h5 (only sweep.h5.partial)"
check "B: a checkpoint of another sweep is refused"
sed 's/"global_batch": 1024/"global_batch": 512/' "$SCRATCH/sweep.json" >"$SCRATCH/other.json"
cp -r "$SCRATCH/b" "$SCRATCH/b2"
"$LLMPLAN" search "$SCRATCH/other.json" -o "$SCRATCH/b2" "${OPTS[@]}" --resume 2>"$SCRATCH/err.txt"
rc=$?
[ $rc -eq 1 ] && grep -q "belongs to another run: the sweep file.s text changed" "$SCRATCH/err.txt" ||
    { cat "$SCRATCH/err.txt"; fail "expected a refusal (status 1), got $rc"; }
check "B: --resume on 2 ranks completes and equals the reference"
mpi 2 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/b" "${OPTS[@]}" --resume ||
    fail "resumed run exited $?"
same_outputs "$SCRATCH/ref" "$SCRATCH/b"
[ ! -e "$SCRATCH/b/sweep.h5.partial" ] || fail "sweep.h5.partial left after completion"

check "C: 1 process (no mpirun), SIGTERM once the run has started"
"$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/c" "${OPTS[@]}" &
pid=$!
wait_for "$SCRATCH/c/sweep.h5.partial"
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 3 ] || fail "expected exit status 3 after SIGTERM, got $rc"
[ -s "$SCRATCH/c/checkpoint.bin" ] || fail "no checkpoint"
check "C: --resume on 1 rank completes and equals the reference"
"$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/c" "${OPTS[@]}" --resume ||
    fail "resumed run exited $?"
same_outputs "$SCRATCH/ref" "$SCRATCH/c"
echo "PASS"
