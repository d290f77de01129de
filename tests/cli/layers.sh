#!/usr/bin/env bash
# The house drawn from the code (scripts/layers): the repository's layers
# have no include cycle, and a core file that includes the io header is
# reported as one (exit 1).
#   layers.sh LLMPLAN SRC_DIR SCRATCH
set -euo pipefail
src=$2
scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch"
out=$(python3 "$src/scripts/layers")
grep -q "^no cycle$" <<<"$out" || { echo "FAIL: the tree has a cycle: $out"; exit 1; }
grep -q "src/core   -> (nothing)" <<<"$out" || { echo "FAIL: src/core depends on something"; exit 1; }
echo "ok   no cycle"
# a copy where the core includes io.h
mkdir -p "$scratch/tree/scripts"
cp -r "$src/include" "$src/src" "$scratch/tree/"
echo '#include "llmplan/io.h"' >>"$scratch/tree/src/core/sim.c"
if python3 "$src/scripts/layers" --root "$scratch/tree" >"$scratch/out.txt"; then
    echo "FAIL: the injected cycle was not found"
    cat "$scratch/out.txt"
    exit 1
fi
grep -q "^CYCLE among: src/core, src/io$" "$scratch/out.txt" || { cat "$scratch/out.txt"; exit 1; }
echo "ok   injected cycle found"
