#!/usr/bin/env bash
# The output directory (issue #21): a full disk names its errno, a read-only
# directory is refused before any work (also with --no-dataset), and a run
# that starts afresh says which results it replaces.
source "$(dirname "$0")/lib.bash" "$@"

cat >"$SCRATCH/sweep.json" <<'JSON'
{"model": "gpt3-2.7b", "system": "dgx-a100-80gb", "gpus": [8, 16, 32], "profile": "roofline",
 "training": {"global_batch": 512, "precision": "bf16", "tokens": 1e11},
 "space": {"tp": "auto", "pp": "auto", "micro_batch": "auto", "recompute": "auto", "zero": "auto"}}
JSON

if [ -w /dev/full ]; then
    for n in 1 2; do
        check "full disk on $n rank(s): status 1, the message says ENOSPC, no crash"
        d="$SCRATCH/full$n"
        mkdir -p "$d"
        ln -sf /dev/full "$d/sweep.h5.partial" # every write fails with ENOSPC
        timeout -s KILL 120 "$MPIEXEC" --oversubscribe -np $n "$LLMPLAN" search \
            "$SCRATCH/sweep.json" -o "$d" --quiet >"$SCRATCH/out.txt" 2>&1
        rc=$?
        [ $rc -eq 1 ] || { cat "$SCRATCH/out.txt"; fail "status $rc (139: a crash, 137: a hang)"; }
        grep -q "sweep.h5.partial: .*No space left on device" "$SCRATCH/out.txt" ||
            { cat "$SCRATCH/out.txt"; fail "no errno in the message"; }
    done
else
    echo "note: /dev/full not writable; full-disk case skipped"
fi

# a directory this user may not write to: as root, run as nobody
as_user=()
if [ "$(id -u)" -eq 0 ]; then
    if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
        as_user=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
    else
        echo "note: root without setpriv/nobody; read-only case skipped"
    fi
fi
if [ "$(id -u)" -ne 0 ] || [ ${#as_user[@]} -gt 0 ]; then
    for opt in "" --no-dataset; do
        check "read-only output directory ${opt:-(dataset on)}: refused at once"
        d="$SCRATCH/ro"
        rm -rf "$d" && mkdir -p "$d" && chmod 555 "$d"
        chmod 755 "$SCRATCH"
        start=$(date +%s)
        timeout -s KILL 60 "${as_user[@]}" "$LLMPLAN" search "$SCRATCH/sweep.json" -o "$d" --quiet \
            $opt >"$SCRATCH/out.txt" 2>&1
        rc=$?
        [ $rc -eq 1 ] || { cat "$SCRATCH/out.txt"; fail "status $rc"; }
        grep -q "ro: cannot write to the output directory: Permission denied" "$SCRATCH/out.txt" ||
            { cat "$SCRATCH/out.txt"; fail "message"; }
        [ $(($(date +%s) - start)) -lt 30 ] || fail "refused only after $(($(date +%s) - start)) s"
    done
fi

check "a second run into the same directory says what it replaces"
"$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/twice" --quiet || fail "first run"
"$LLMPLAN" search "$SCRATCH/sweep.json" -o "$SCRATCH/twice" --quiet 2>"$SCRATCH/err.txt" ||
    fail "second run"
grep -q "twice: replacing plans.json, sweep.h5" "$SCRATCH/err.txt" ||
    { cat "$SCRATCH/err.txt"; fail "no word about replacing the results"; }
echo "PASS"
