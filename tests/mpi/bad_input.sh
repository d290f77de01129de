#!/usr/bin/env bash
# Malformed sweeps and bad options: a one-line message naming the file and the
# key, exit status 1 (2 for usage), on any rank count, without hanging.
source "$(dirname "$0")/lib.bash" "$@"

cat >"$SCRATCH/unknown.json" <<'JSON'
{"model": "gpt3-13b", "system": "dgx-a100-80gb", "gpus": 8,
 "training": {"global_batch": 64}, "space": {"tp": [1, 2], "pipeline": 2}}
JSON
cat >"$SCRATCH/range.json" <<'JSON'
{"model": "gpt3-13b", "system": "dgx-a100-80gb", "gpus": {"min": 8, "max": 4, "step": "x2"},
 "training": {"global_batch": 64}}
JSON
for n in 1 2; do
    check "unknown key on $n rank(s): status 1, names space.pipeline"
    mpi $n "$LLMPLAN" search "$SCRATCH/unknown.json" -o "$SCRATCH/o" 2>"$SCRATCH/err.txt"
    rc=$?
    [ $rc -eq 1 ] || fail "status $rc"
    grep -q "unknown.json: unknown key 'space.pipeline'" "$SCRATCH/err.txt" ||
        { cat "$SCRATCH/err.txt"; fail "message"; }
    [ "$(grep -c "^llmplan: " "$SCRATCH/err.txt")" = 1 ] || fail "not printed exactly once"
    check "bad range on $n rank(s): status 1, names gpus.max"
    mpi $n "$LLMPLAN" search "$SCRATCH/range.json" -o "$SCRATCH/o" 2>"$SCRATCH/err.txt"
    [ $? -eq 1 ] && grep -q "gpus.max" "$SCRATCH/err.txt" || { cat "$SCRATCH/err.txt"; fail "range"; }
    check "missing file on $n rank(s): status 1"
    mpi $n "$LLMPLAN" search "$SCRATCH/none.json" -o "$SCRATCH/o" 2>"$SCRATCH/err.txt"
    [ $? -eq 1 ] && grep -q "none.json" "$SCRATCH/err.txt" || { cat "$SCRATCH/err.txt"; fail "missing"; }
    check "missing profile on $n rank(s): status 1, says how to make one"
    mpi $n "$LLMPLAN" search "$SCRATCH/range.json" -o "$SCRATCH/o" --profile "$SCRATCH/no.h5" \
        2>"$SCRATCH/err.txt"
    [ $? -eq 1 ] || fail "status"
done
check "bad option: status 2"
"$LLMPLAN" search "$SCRATCH/unknown.json" --chunk 0 2>/dev/null
[ $? -eq 2 ] || fail "--chunk 0 accepted"
"$LLMPLAN" search 2>/dev/null
[ $? -eq 2 ] || fail "no sweep file accepted"
check "--help: status 0"
"$LLMPLAN" search --help | grep -q "usage:" || fail "--help"
echo "PASS"
