#!/usr/bin/env bash
# scripts/sbatch/search.sbatch with stand-ins for srun and scontrol: the
# time-limit signal (USR1) requeues the job, a scancel (TERM) does not, and
# the requeue count is capped (issue #17).
#   sbatch.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir/bin"
# srun stand-in: checks --mpi, waits for USR1 like llmplan, exits 3
cat >"$dir/bin/srun" <<'SH'
#!/bin/bash
case "$1" in --mpi=pmix) ;; *) echo "srun stand-in: expected --mpi=pmix first, got $1"; exit 9 ;; esac
trap 'exit 3' USR1
echo started >"$SCRATCH_DIR/started"
for i in $(seq 600); do sleep 0.1; done
exit 0
SH
printf '#!/bin/bash\necho "$@" >>"$SCRATCH_DIR/requeued"\n' >"$dir/bin/scontrol"
chmod +x "$dir/bin/srun" "$dir/bin/scontrol"
export SCRATCH_DIR=$dir PATH="$dir/bin:$PATH" SLURM_JOB_ID=42
job() { # job SIGNAL RESTARTS: run the template, send SIGNAL once the step runs
    rm -f "$dir/started" "$dir/requeued"
    SLURM_RESTART_COUNT=$2 bash "$src/scripts/sbatch/search.sbatch" sweep.json "$dir/out" >"$dir/log" 2>&1 &
    local pid=$! i=0
    while [ ! -e "$dir/started" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    kill -"$1" $pid
    wait $pid
}
job USR1 0; rc=$?
[ $rc -eq 3 ] && grep -q "requeue 42" "$dir/requeued" 2>/dev/null || { cat "$dir/log"; echo "FAIL USR1: no requeue (rc $rc)"; exit 1; }
echo "ok   time limit: requeued"
job TERM 0; rc=$?
[ $rc -eq 3 ] && [ ! -e "$dir/requeued" ] || { cat "$dir/log"; echo "FAIL TERM requeued (rc $rc)"; exit 1; }
echo "ok   scancel: not requeued"
job USR1 10; rc=$?
[ $rc -eq 3 ] && [ ! -e "$dir/requeued" ] && grep -q "10 requeues reached" "$dir/log" || { cat "$dir/log"; echo "FAIL cap"; exit 1; }
echo "ok   requeues capped at MAX_REQUEUES"
echo "PASS"
