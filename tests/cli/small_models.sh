#!/usr/bin/env bash
# The findings of Ashkboos et al. 2024 that llmplan supports, as directions
# (scripts/small_models.py --check: exits 1 when one goes the other way).
#   small_models.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
build=$(dirname "$(dirname "$bin")")
python3 "$src/scripts/small_models.py" --build "$build" --out "$dir" --no-plots --check >"$dir/log" 2>&1
rc=$?
grep -E '^(ok|FAIL|disagrees)' "$dir/log"
[ $rc -eq 0 ] || { tail -5 "$dir/log"; echo "FAIL small_models --check (rc $rc)"; exit 1; }
echo "small_models findings: ok"
