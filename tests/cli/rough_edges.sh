#!/usr/bin/env bash
# Issue #17 rough edges: --trace into a missing directory names the file
# asked for (not an internal temporary); an MPI world of one rank under a
# launcher that started more tasks warns.
#   rough_edges.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
# `llmplan search` initialises MPI: under the sanitizer build, ignore Open
# MPI's own leaks as tests/mpi/lib.bash does
export LSAN_OPTIONS="suppressions=$src/tests/mpi/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
export LLMPLAN_DATA=${LLMPLAN_DATA:-$src/data}
cat >"$dir/run.json" <<'JSON'
{"model": "gpt3-1.3b", "system": "dgx-a100-80gb", "gpus": 8,
 "parallel": {"tp": 1, "pp": 1, "micro_batch": 4}, "training": {"global_batch": 256}}
JSON
out=$("$bin" simulate "$dir/run.json" --profile roofline --trace "$dir/missing/t.json" 2>&1 >/dev/null)
case "$out" in
*"$dir/missing/t.json: cannot create"*) ;;
*) echo "FAIL --trace into a missing directory: $out"; exit 1 ;;
esac
case "$out" in *".tmp."*) echo "FAIL the message names the temporary: $out"; exit 1 ;; esac
echo "ok   --trace: $out"
cat >"$dir/sweep.json" <<'JSON'
{"model": "gpt3-1.3b", "system": "dgx-a100-80gb", "gpus": 8, "profile": "roofline",
 "training": {"global_batch": 256}}
JSON
out=$(SLURM_NTASKS=4 "$bin" search "$dir/sweep.json" -o "$dir/out" --quiet --no-dataset 2>&1)
case "$out" in *"WARNING: the MPI world has 1 rank but the launcher started 4 tasks"*) ;;
*) echo "FAIL no world-size warning: $out"; exit 1 ;; esac
out=$(env -u SLURM_NTASKS -u PMI_SIZE -u PMIX_SIZE -u OMPI_COMM_WORLD_SIZE -u MPI_LOCALNRANKS \
    "$bin" search "$dir/sweep.json" -o "$dir/out2" --quiet --no-dataset 2>&1)
case "$out" in *WARNING*) echo "FAIL a warning without a launcher: $out"; exit 1 ;; esac
echo "ok   world-size warning"
echo "PASS"
