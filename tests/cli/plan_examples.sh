#!/usr/bin/env bash
# The planning examples in docs/search.md are what the code gives now: each
# sweep is run and its table compared (scripts/plan_examples --check).
#   plan_examples.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
build=$(dirname "$(dirname "$bin")")
python3 "$src/scripts/plan_examples" --build "$build" --check "$src/docs/search.md" || exit 1
echo "PASS"
