#!/usr/bin/env bash
# A sweep killed hard (SIGKILL of every rank or of one) while it writes rows,
# a damaged sweep.h5.partial, and two searches on one directory (issue #21).
# --resume must verify the partial dataset against the checkpoint, never
# write into a damaged one, finish under a time limit, and produce outputs
# equal to an uninterrupted run's.
#   HARDKILL_TRIALS=20 bash crash_resume.sh LLMPLAN SRC SCRATCH  (default 2)
source "$(dirname "$0")/lib.bash" "$@"
TRIALS=${HARDKILL_TRIALS:-2}
LIMIT=${HARDKILL_TIMEOUT:-300}

# ~1.4e6 indices in ~21 segments of 2^16 (about 5 s on 2 ranks); --checkpoint
# 1e-9: rows and a checkpoint after every segment, so a kill lands mid-write
# often
cat >"$SCRATCH/sweep.json" <<'JSON'
{
  "models": ["gpt3-2.7b", "llama2-7b"],
  "system": "dgx-a100-80gb",
  "gpus": {"min": 8, "max": 2048, "step": "x2"},
  "training": {"global_batch": 1024, "precision": "bf16", "tokens": 1e11},
  "profile": "roofline",
  "space": {"tp": "auto", "pp": "auto", "vp": [1, 2, 4], "micro_batch": "auto",
            "sequence_parallel": "auto", "recompute": "auto", "zero": "auto",
            "schedule": "auto"}
}
JSON
OPTS=(--quiet --segment 65536 --checkpoint 1e-9)
quiet_mpirun() { grep -v -E '^-+$|^$|Primary job|non-zero exit|Per user|aborted|detected that|causing|was:|Process name|Exit code|Signal|signal|exited on|mpirun|killed' >&2 || true; }

check "reference: uninterrupted run on 2 ranks"
mpi 2 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/ref" "${OPTS[@]}" ||
    fail "reference run exited $?"

# resume DIR: --resume on 2 ranks under a time limit until it completes
# (a resume may itself be killed in the trials below; here it must finish)
resume_ok() {
    timeout -s KILL "$LIMIT" "$MPIEXEC" --oversubscribe -np 2 "$LLMPLAN" search \
        "$SCRATCH/sweep.json" -o "$1" "${OPTS[@]}" --resume 2>"$SCRATCH/resume_err.txt"
    local rc=$?
    [ $rc -eq 0 ] || { cat "$SCRATCH/resume_err.txt"; fail "resume of $1 exited $rc (137: hung past ${LIMIT} s)"; }
    same_outputs "$SCRATCH/ref" "$1"
}

pass=0
for t in $(seq 1 "$TRIALS"); do
    d="$SCRATCH/kill$t"
    rm -rf "$d"
    "$MPIEXEC" --oversubscribe -np 2 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$d" \
        "${OPTS[@]}" 2> >(quiet_mpirun) &
    pid=$!
    wait_for "$d/checkpoint.bin"
    # a pseudo-random moment within the next second (the run takes ~5 s)
    sleep "0.$(( (t * 7919) % 10 ))$(( (t * 104729) % 10 ))"
    ranks=$(pgrep -P "$pid" -f "llmplan search" || true)
    if [ $((t % 2)) -eq 1 ]; then
        victims=$ranks                          # every rank at once
    else
        victims=$(echo "$ranks" | head -1)      # one rank: mpirun aborts the rest
    fi
    [ -n "$victims" ] && kill -KILL $victims 2>/dev/null
    wait $pid 2>/dev/null
    if [ -e "$d/plans.json" ]; then
        echo "trial $t: the run finished before the kill (not counted)"
        continue
    fi
    resume_ok "$d"
    [ ! -e "$d/sweep.h5.partial" ] || fail "trial $t: sweep.h5.partial left after completion"
    pass=$((pass + 1))
    echo "trial $t: killed ($(echo $victims | wc -w) rank(s)); resumed to identical outputs" \
        "$(ls "$d" | grep -q damaged && echo '(damaged file set aside, started over)')"
done
check "hard-kill trials: $pass of $TRIALS passed"
[ $pass -ge 1 ] || fail "no trial interrupted the run"

check "a damaged sweep.h5.partial is set aside and the sweep starts over"
d="$SCRATCH/damaged"
mpi 2 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$d" "${OPTS[@]}" --stop-after 200000 \
    2> >(quiet_mpirun)
[ $? -eq 3 ] || fail "expected exit status 3 from --stop-after"
size=$(stat -c %s "$d/sweep.h5.partial")
# zeros over the middle of the file: chunk data and B-tree nodes
dd if=/dev/zero of="$d/sweep.h5.partial" bs=1 seek=$((size / 3)) count=$((size / 3)) \
    conv=notrunc status=none
timeout -s KILL "$LIMIT" "$MPIEXEC" --oversubscribe -np 2 "$LLMPLAN" search "$SCRATCH/sweep.json" \
    -o "$d" "${OPTS[@]}" --resume 2>"$SCRATCH/err.txt"
rc=$?
[ $rc -eq 0 ] || { cat "$SCRATCH/err.txt"; fail "resume after damage exited $rc"; }
grep -q "sweep.h5.partial: the partial dataset does not match the checkpoint" "$SCRATCH/err.txt" ||
    { cat "$SCRATCH/err.txt"; fail "no message about the damaged file"; }
[ -e "$d/sweep.h5.partial.damaged" ] || fail "the damaged file was not kept aside"
same_outputs "$SCRATCH/ref" "$d"

check "a truncated sweep.h5.partial: same"
d="$SCRATCH/truncated"
mpi 2 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$d" "${OPTS[@]}" --stop-after 200000 \
    2> >(quiet_mpirun)
truncate -s $(($(stat -c %s "$d/sweep.h5.partial") / 2)) "$d/sweep.h5.partial"
resume_ok "$d"

check "a second search on the same directory is refused while the first runs"
d="$SCRATCH/twice"
"$MPIEXEC" --oversubscribe -np 2 "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$d" "${OPTS[@]}" \
    2> >(quiet_mpirun) &
pid=$!
wait_for "$d/sweep.h5.partial"
"$LLMPLAN" search "$SCRATCH/sweep.json" -o "$d" "${OPTS[@]}" 2>"$SCRATCH/err.txt"
rc=$?
kill -USR1 $pid
wait $pid
[ $rc -eq 1 ] && grep -q "another llmplan search is using this output directory" "$SCRATCH/err.txt" ||
    { cat "$SCRATCH/err.txt"; fail "second search: status $rc"; }
resume_ok "$d"
echo "PASS"
