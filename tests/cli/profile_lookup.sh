#!/usr/bin/env bash
# `llmplan profile lookup PROFILE TABLE X...`: at a grid point the value is
# the table's own (the same as `profile info`'s sample line, which reads the
# table directly, and as h5py reads the file, on a GEMM at three different
# axis values); the shipped analytical file and `synth` built in memory
# agree; the rate follows from the value (GEMM 2mnk / time, memory GB/s); a
# point beyond the grid says so, and a collective below its smallest message
# is read as the cost model reads it; a missing table, a bad file and bad
# arguments are refused with what was expected.
#   profile_lookup.sh LLMPLAN SRCDIR SCRATCH
set -u
. "$(dirname "$0")/checks.bash" "$@"
prof=$src/data/profiles/h100-sxm.h5

# 1. the 8192^3 sample of `profile info` (ms, 3 decimals) and lookup (us)
info=$("$bin" profile info "$prof" | grep 'gemm fwd bf16 8192^3')
ms=$(printf '%s\n' "$info" | sed -n 's/.*(\([0-9.]*\) ms).*/\1/p')
out=$("$bin" profile lookup "$prof" /gemm/fwd/bf16 8192 8192 8192)
us=$(printf '%s\n' "$out" | sed -n 's/.*(\([0-9.]*\) us).*/\1/p')
tf=$(printf '%s\n' "$out" | sed -n 's/.*, \([0-9.]*\) TFLOP\/s.*/\1/p')
if [ -n "$ms" ] && [ -n "$us" ] && awk -v a="$ms" -v b="$us" -v t="$tf" \
    'BEGIN { exit !(a * 1000 - b < 0.5 && b - a * 1000 < 0.5 && (2 * 8192^3 / (b * 1e-6) / 1e12 - t)^2 < 0.01) }' &&
    ! has "$out" "outside"; then
    ok "lookup at 8192^3 = info's sample ($us us, $tf TFLOP/s)"
else
    bad "8192^3: info '$info', lookup '$out'"
fi

# 2. grid points read with h5py: the stored values themselves, a GEMM at
# three different axis values (the axis order matters), the memory rate
py=$(h5py_python)
close() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > 0 && (a - b) / a < 1e-5 && (b - a) / a < 1e-5) }'; }
value() { printf '%s\n' "$1" | sed -n 's/.*: \([0-9.e+-]*\) s .*/\1/p'; }
if [ -z "$py" ]; then
    bad "no python3 with h5py (apt-get install python3-h5py)"
else
    read -r bytes want < <("$py" -c "import h5py, sys; g = h5py.File(sys.argv[1], 'r')['/mem/swiglu']; \
print('%r %r' % (float(g['axis0'][7]), float(g['value'][7])))" "$prof")
    out=$("$bin" profile lookup "$prof" mem/swiglu "$bytes")
    got=$(value "$out")
    gbs=$(printf '%s\n' "$out" | sed -n 's/.*, \([0-9.]*\) GB\/s.*/\1/p')
    if close "$want" "$got" && awk -v b="$bytes" -v t="$got" -v r="$gbs" \
        'BEGIN { exit !((b / t / 1e9 - r)^2 < 0.01) }'; then
        ok "/mem/swiglu at its 8th grid point ($bytes bytes): $got s = the file's $want, $gbs GB/s"
    else
        bad "grid point: h5py $bytes -> $want, lookup '$out'"
    fi
    read -r m n k want < <("$py" -c "import h5py, sys; g = h5py.File(sys.argv[1], 'r')['/gemm/wgrad/bf16']; \
print('%r %r %r %r' % (float(g['axis0'][7]), float(g['axis1'][4]), float(g['axis2'][2]), \
float(g['value'][7][4][2])))" "$prof")
    got=$(value "$("$bin" profile lookup "$prof" /gemm/wgrad/bf16 "$m" "$n" "$k")")
    swapped=$(value "$("$bin" profile lookup "$prof" /gemm/wgrad/bf16 "$k" "$n" "$m")")
    if close "$want" "$got" && ! close "$want" "$swapped"; then
        ok "/gemm/wgrad/bf16 at m $m n $n k $k: $got s = the file's $want (m and k swapped: $swapped)"
    else
        bad "GEMM grid point: h5py $m $n $k -> $want, lookup $got, swapped $swapped"
    fi
fi

# 3. synth in memory = the shipped analytical file (profiles_current.sh keeps
# them equal); a collective's fraction has no rate
a=$("$bin" profile lookup "$prof" /attention/fused/causal/bwd/bf16 96 3000 128)
b=$("$bin" profile lookup synth /attention/fused/causal/bwd/bf16 96 3000 128 --gpu h100-sxm)
c=$("$bin" profile lookup "$prof" /coll/allgather/inter 3e7 48)
if [ -n "$a" ] && [ "$a" = "$b" ] && has "$c" "of the nominal bus bandwidth" && ! has "$c" "/s"; then
    ok "synth --gpu h100-sxm = the shipped file between grid points; collectives as fractions"
else
    bad "synth vs file: '$a' / '$b'; coll '$c'"
fi

# 4. beyond the grid: said so; a collective below its smallest message takes
# that message's time, as the cost model reads it (its fraction scales
# with the size: cost_table.c tb_coll)
out=$("$bin" profile lookup "$prof" /gemm/fwd/bf16 1e6 64 64)
if has "$out" "outside the grid"; then ok "m 1e6 beyond the grid: flagged"; else bad "beyond: '$out'"; fi
lo=$("$bin" profile lookup "$prof" /coll/allreduce/inter 1024 16 | sed -n 's/.*: \([0-9.e+-]*\) of the.*/\1/p')
b8=$("$bin" profile lookup "$prof" /coll/allreduce/inter 8 16)
f8=$(printf '%s\n' "$b8" | sed -n 's/.*: \([0-9.e+-]*\) of the.*/\1/p')
if has "$b8" "outside the grid" && close "$(awk -v l="$lo" 'BEGIN { print l * 8 / 1024 }')" "$f8"; then
    ok "an 8-byte all-reduce: the 1 KiB one's time (fraction $f8 = $lo x 8 / 1024)"
else
    bad "below the collective grid: 1 KiB $lo, 8 B '$b8'"
fi

# 5. bad input
chk() { # expected rc, expected text, args...
    local want=$1 text=$2
    shift 2
    local o r
    o=$("$bin" profile lookup "$@" 2>&1)
    r=$?
    if [ $r -eq "$want" ] && has "$o" "$text"; then ok "refused: $* ($text)"; else bad "$*: rc $r: $o"; fi
}
chk 2 "has 3 axes (m n k), 2 coordinates given" "$prof" /gemm/fwd/bf16 1 2
chk 2 "no table '/gemm/sideways/bf16'" "$prof" /gemm/sideways/bf16 1 2 3
chk 2 "'-5' is not a coordinate" "$prof" /mem/copy -5
chk 2 "'1e' is not a coordinate" "$prof" /mem/copy 1e
chk 2 "synth needs --gpu" synth /mem/copy 1
chk 2 "--gpu names synth's GPU" "$prof" /mem/copy 1 --gpu a100-80gb
chk 2 "more than" "$prof" /mem/copy 1 2 3 4 5
chk 2 "--gpu needs a value" "$prof" /mem/copy 1 --gpu
chk 2 "unexpected argument '--fast'" --fast "$prof" /mem/copy 1
chk 1 "$dir/none.h5" "$dir/none.h5" /mem/copy 1
chk 1 "no-such-gpu" synth /mem/copy 1 --gpu no-such-gpu
chk 1 "has no table /gemm/fwd/fp8" synth /gemm/fwd/fp8 1 1 1 --gpu a100-80gb
printf 'not hdf5\n' >"$dir/bad.h5"
chk 1 "$dir/bad.h5" "$dir/bad.h5" /mem/copy 1

[ $fails -eq 0 ] && echo "profile_lookup: all passed" || echo "profile_lookup: $fails failed"
exit $((fails > 0))
