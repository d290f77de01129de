#!/usr/bin/env bash
# The house drawn from the code (scripts/layers): the repository's layers
# have no include cycle, the parallel dataset writer stands on the core
# alone, and an include that closes a cycle is reported as one (exit 1): a
# core file that includes the io header, the writer including the driver's.
#   layers.sh LLMPLAN SRC_DIR SCRATCH
set -euo pipefail
src=$2
scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch"
out=$(python3 "$src/scripts/layers")
grep -q "^no cycle$" <<<"$out" || { echo "FAIL: the tree has a cycle: $out"; exit 1; }
grep -q "src/core   -> (nothing)" <<<"$out" || { echo "FAIL: src/core depends on something"; exit 1; }
grep -q "src/io_par -> src/core$" <<<"$out" || { echo "FAIL: src/io_par depends on more than the core: $out"; exit 1; }
echo "ok   no cycle"
# inject NAME FILE HEADER EXPECTED: a copy of include/, src/ and search/
# where FILE also includes HEADER must fail with the line EXPECTED (an
# extended regular expression: the layers left over, the cycle and those
# standing on it)
inject() {
    local tree="$scratch/$1"
    mkdir -p "$tree"
    cp -r "$src/include" "$src/src" "$src/search" "$tree/"
    echo "#include \"$3\"" >>"$tree/$2"
    if python3 "$src/scripts/layers" --root "$tree" >"$scratch/$1.txt"; then
        echo "FAIL: $2 including $3 was not found as a cycle"
        cat "$scratch/$1.txt"
        exit 1
    fi
    grep -Eq "^$4\$" "$scratch/$1.txt" || { cat "$scratch/$1.txt"; exit 1; }
    echo "ok   $2 -> $3: cycle found"
}
inject core src/core/sim.c llmplan/io.h "CYCLE among: search, src/core, src/io, src/io_par"
inject writer src/io_par/sweep_h5.c llmplan/search_mpi.h "CYCLE among: search, src/io_par"
