#!/usr/bin/env bash
# The held-out probe (scripts/heldout_probe.py): every published run it lists
# must still simulate (feasible, one result per row) and be reported with its
# error; nothing is asserted about the errors themselves (they are not fitted).
#   heldout_probe.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
build=$(dirname "$(dirname "$bin")")
export LLMPLAN_DATA=${LLMPLAN_DATA:-$src/data}
out=$(python3 "$src/scripts/heldout_probe.py" --build "$build" --csv "$dir/rows.csv") ||
    { echo "FAIL heldout_probe: $out"; exit 1; }
echo "$out"
rows=$(grep -c '^H[0-9][0-9] ' <<<"$out")
want=$(grep -c '^    ("H[0-9][0-9]"' "$src/scripts/heldout_probe.py")
[ "$rows" -gt 0 ] && [ "$rows" -eq "$want" ] || { echo "FAIL: $rows rows printed, $want listed"; exit 1; }
[ "$(($(wc -l <"$dir/rows.csv") - 1))" -eq "$want" ] || { echo "FAIL: csv rows"; exit 1; }
grep -q '^all ' <<<"$out" || { echo "FAIL: no 'all' line"; exit 1; }
# --whole-batch: the unstated micro-batch of Megatron-LM's rows without a
# pipeline becomes the rank's batch (4 for H14); a pipelined row keeps 1
whole=$(python3 "$src/scripts/heldout_probe.py" --build "$build" --whole-batch) ||
    { echo "FAIL heldout_probe --whole-batch: $whole"; exit 1; }
grep -q '^H14 .*assumed: micro-batch 4,' <<<"$whole" && grep -q '^H18 .*assumed: micro-batch 1,' <<<"$whole" &&
    [ "$(grep '^H14 ' <<<"$whole" | awk '{print $5}')" != "$(grep '^H14 ' <<<"$out" | awk '{print $5}')" ] ||
    { echo "FAIL: --whole-batch rows: $(grep -E '^H1[48] ' <<<"$whole")"; exit 1; }
echo "heldout_probe: $rows rows: ok"
