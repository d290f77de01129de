#!/usr/bin/env bash
# `llmplan profile compare MEASURED.h5 MODEL`: the analytical profile set
# beside itself gives a ratio of exactly 1 at every point of every table;
# another GPU's profile gives the ratios the two datasheets imply (an H100
# GEMM faster than an A100's, most so for long kernels); the CSV holds one
# row per compared point; a profile as llmplan-profile writes it (its GPU
# named as the CUDA device is, a table left out) is compared with --gpu and
# without the table; bad input is refused with the file named.
#   profile_compare.sh LLMPLAN SRCDIR SCRATCH
set -u
. "$(dirname "$0")/checks.bash" "$@"

# 1. a written synth profile against synth built in memory: every ratio 1
"$bin" profile synth --gpu a100-80gb -o "$dir/a.h5" >/dev/null || bad "profile synth"
out=$("$bin" profile compare "$dir/a.h5" synth 2>&1)
rc=$?
rows=$(printf '%s\n' "$out" | grep -c '^/')
notone=$(printf '%s\n' "$out" | awk '/^\// && ($3 != 0 || $4 != "1.000" || $5 != "1.000" || $6 != "1.000")' | wc -l)
if [ $rc -eq 0 ] && [ "$rows" -ge 40 ] && [ "$notone" -eq 0 ]; then
    ok "a profile against its own model: $rows tables, none skipped, every ratio 1.000"
else
    bad "self-compare: rc $rc, $rows tables, $notone not 1: $out"
fi

# 2. another GPU's profile: H100 GEMMs faster than the A100's, more so for
# long kernels (the peak ratio) than for launch-bound ones; CSV row count
out=$("$bin" profile compare "$src/data/profiles/a100-80gb.h5" "$src/data/profiles/h100-sxm.h5" \
    --csv "$dir/cmp.csv" 2>"$dir/err")
rc=$?
line=$(printf '%s\n' "$out" | grep '^/gemm/fwd/bf16 ')
read -r _ pts _ geo _ _ short _ _ long <<<"$line"
if [ $rc -eq 0 ] && awk -v g="$geo" -v s="$short" -v l="$long" \
    'BEGIN { exit !(g < 1 && l < s && l > 0.25 && l < 0.45) }' && has "$(cat "$dir/err")" "comparing GPU"; then
    ok "A100 vs H100 bf16 GEMM: geomean $geo, <10us $short, >=1ms $long"
else
    bad "cross-GPU: rc $rc, line '$line', stderr $(cat "$dir/err")"
fi
total=$(printf '%s\n' "$out" | awk '/^\// && $2 ~ /^[0-9]+$/ { n += $2 } END { print n }')
csvrows=$(($(wc -l <"$dir/cmp.csv") - 1))
if [ "$(head -n 1 "$dir/cmp.csv")" = "table,axes,axis0,axis1,axis2,axis3,measured,model,ratio" ] &&
    [ "$csvrows" -eq "$total" ] && grep -q '^/gemm/fwd/bf16,m|n|k,' "$dir/cmp.csv"; then
    ok "CSV: one row per compared point ($csvrows)"
else
    bad "CSV: $csvrows rows for $total points; head $(head -n 2 "$dir/cmp.csv")"
fi

# 3. profiles as llmplan-profile writes them: the GPU named as the CUDA
# device names it (no preset: --gpu picks the synth model's), and a run that
# left a required table out (compared without it; the other side says so)
py=$(h5py_python)
if [ -z "$py" ]; then
    bad "no python3 with h5py (apt-get install python3-h5py)"
else
    cp "$dir/a.h5" "$dir/dev.h5"
    "$py" -c "import h5py, numpy, sys; f = h5py.File(sys.argv[1], 'r+'); del f.attrs['gpu']; \
f.attrs['gpu'] = numpy.bytes_(b'NVIDIA A100-SXM4-80GB')" "$dir/dev.h5"
    out=$("$bin" profile compare "$dir/dev.h5" synth 2>&1)
    rc=$?
    if [ $rc -eq 1 ] && has "$out" "NVIDIA A100-SXM4-80GB" && has "$out" "--gpu"; then
        ok "a device-named GPU without --gpu: refused, --gpu named"
    else
        bad "device-named GPU: rc $rc: $out"
    fi
    out=$("$bin" profile compare "$dir/dev.h5" synth --gpu a100-80gb 2>&1)
    rc=$?
    notone=$(printf '%s\n' "$out" | awk '/^\// && ($4 != "1.000" || $6 != "1.000")' | wc -l)
    if [ $rc -eq 0 ] && [ "$notone" -eq 0 ]; then ok "--gpu a100-80gb: every ratio 1.000"; else bad "--gpu: rc $rc: $out"; fi
    # a required table removed; the file's checksum made the tables' again
    cp "$dir/a.h5" "$dir/part.h5"
    "$py" -c "import h5py, sys; f = h5py.File(sys.argv[1], 'r+'); \
del f['/mem/rmsnorm']" "$dir/part.h5"
    sum=$("$bin" profile compare "$dir/part.h5" synth 2>&1 | sed -n 's/.*its tables give \([0-9a-f]\{16\}\).*/\1/p')
    "$py" -c "import h5py, numpy, sys; f = h5py.File(sys.argv[1], 'r+'); \
del f.attrs['checksum']; f.attrs['checksum'] = numpy.bytes_(sys.argv[2].encode())" "$dir/part.h5" "$sum"
    strict=$("$bin" profile check "$dir/part.h5" 2>&1)
    out=$("$bin" profile compare "$dir/part.h5" synth 2>&1)
    rc=$?
    back=$("$bin" profile compare "$dir/a.h5" "$dir/part.h5" 2>&1)
    rc2=$?
    if has "$strict" "required table /mem/rmsnorm is missing" && [ $rc -eq 0 ] &&
        ! has "$out" "/mem/rmsnorm " && has "$out" "/gemm/fwd/bf16 " && [ $rc2 -eq 0 ] &&
        has "$back" "$(printf '%-34s (not in %s)' /mem/rmsnorm "$dir/part.h5")"; then
        ok "a profile without a required table: compared without it, and named as absent"
    else
        bad "partial profile: sum '$sum', check: $strict; rc $rc / $rc2: $out / $back"
    fi
fi

# 4. bad input
out=$("$bin" profile compare "$dir/none.h5" synth 2>&1)
rc=$?
if [ $rc -eq 1 ] && has "$out" "$dir/none.h5"; then ok "missing file named: $out"; else bad "missing file: rc $rc: $out"; fi
out=$("$bin" profile compare "$dir/a.h5" 2>&1)
rc=$?
if [ $rc -eq 2 ]; then ok "one file: usage error"; else bad "one file: rc $rc: $out"; fi
out=$("$bin" profile compare "$dir/a.h5" synth --csv "$dir/no/such/dir.csv" 2>&1)
rc=$?
if [ $rc -eq 1 ] && has "$out" "no/such/dir.csv"; then ok "unwritable CSV named"; else bad "unwritable CSV: rc $rc: $out"; fi
printf 'not hdf5\n' >"$dir/bad.h5"
out=$("$bin" profile compare "$dir/a.h5" "$dir/bad.h5" 2>&1)
rc=$?
if [ $rc -eq 1 ] && has "$out" "bad.h5"; then ok "malformed model file named"; else bad "malformed: rc $rc: $out"; fi
out=$("$bin" profile compare "$dir/a.h5" "$dir/a.h5" --gpu a100-80gb 2>&1)
rc=$?
if [ $rc -eq 1 ] && has "$out" "--gpu"; then ok "--gpu with a MODEL file refused"; else bad "--gpu with a file: rc $rc: $out"; fi
exit $((fails > 0))
