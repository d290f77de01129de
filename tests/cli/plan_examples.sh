#!/usr/bin/env bash
# The planning examples in docs/search.md are what the code gives now: each
# sweep is run and its table compared (scripts/plan_examples --check).
#   plan_examples.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
# `llmplan search` initialises MPI: under the sanitizer build, ignore Open
# MPI's own leaks as tests/mpi/lib.bash does
export LSAN_OPTIONS="suppressions=$src/tests/mpi/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
build=$(dirname "$(dirname "$bin")")
python3 "$src/scripts/plan_examples" --build "$build" --check "$src/docs/search.md" || exit 1
echo "PASS"
