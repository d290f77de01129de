#!/usr/bin/env bash
# Issue #17, parts 1 and 2: a kernel profile of another GPU is refused (and
# allowed, loudly, with --allow-profile-mismatch); each system can carry its
# own profile; presets can be partly overridden in run and sweep files.
#   profile_override.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
# `llmplan search` initialises MPI: under the sanitizer build, ignore Open
# MPI's own leaks as tests/mpi/lib.bash does
export LSAN_OPTIONS="suppressions=$src/tests/mpi/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
export LLMPLAN_DATA=${LLMPLAN_DATA:-$src/data}
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
has() { case "$1" in *"$2"*) return 0 ;; esac; return 1; }

cat >"$dir/h100.json" <<'JSON'
{"model": "gpt3-1.3b", "system": "dgx-h100", "gpus": 8,
 "parallel": {"tp": 1, "pp": 1, "micro_batch": 4}, "training": {"global_batch": 256}}
JSON
a100="$src/data/profiles/a100-80gb.h5"

# 1. an A100 profile on an H100 system: refused, one line naming both GPUs
out=$("$bin" simulate "$dir/h100.json" --profile "$a100" 2>&1 >/dev/null)
rc=$?
if [ $rc -eq 1 ] && has "$out" "a100-80gb" && has "$out" "h100-sxm" &&
    has "$out" "--allow-profile-mismatch" && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ]; then
    ok "mismatched profile refused: $out"
else
    bad "mismatched profile: rc $rc: $out"
fi
# allowed: exit 0, a warning on stderr, the flag in the JSON
"$bin" simulate "$dir/h100.json" --profile "$a100" --allow-profile-mismatch --json \
    >"$dir/mm.json" 2>"$dir/mm.err"
rc=$?
if [ $rc -eq 0 ] && grep -q WARNING "$dir/mm.err" &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["profile_gpu_mismatch"] != "a100-80gb")' "$dir/mm.json"; then
    ok "--allow-profile-mismatch warns and flags the output"
else
    bad "--allow-profile-mismatch: rc $rc: $(cat "$dir/mm.err")"
fi
# the matching profile has no flag
"$bin" simulate "$dir/h100.json" --json >"$dir/ok.json" 2>"$dir/ok.err"
if [ $? -eq 0 ] && [ ! -s "$dir/ok.err" ] && ! grep -q profile_gpu_mismatch "$dir/ok.json"; then
    ok "matching profile: no warning, no flag"
else
    bad "matching profile warned or flagged"
fi
# simulate --profile synth, as search has
out=$("$bin" simulate "$dir/h100.json" --profile synth 2>&1)
if [ $? -eq 0 ] && has "$out" "profile synth:h100-sxm"; then ok "simulate --profile synth"; else bad "simulate --profile synth: $out"; fi

# 2. a system's own "profile" key, and the sweep's profile map
cat >"$dir/sys-profile.json" <<JSON
{"model": "gpt3-1.3b", "system": {"preset": "dgx-h100", "profile": "$a100"}, "gpus": 8,
 "parallel": {"tp": 1, "pp": 1, "micro_batch": 4}, "training": {"global_batch": 256}}
JSON
out=$("$bin" simulate "$dir/sys-profile.json" 2>&1 >/dev/null)
if [ $? -eq 1 ] && has "$out" "measured on GPU 'a100-80gb'"; then ok "a system's own profile is checked too"; else bad "system profile key: $out"; fi
cat >"$dir/sweep.json" <<JSON
{"systems": ["dgx-a100-80gb", "dgx-h100"], "model": "gpt3-1.3b", "gpus": [8],
 "training": {"global_batch": 256, "tokens": 1e9},
 "profile": {"dgx-a100-80gb": "$a100", "dgx-h100": "synth"},
 "space": {"micro_batch": [1, 2, 4]}}
JSON
"$bin" search "$dir/sweep.json" -o "$dir/out" --quiet --no-dataset 2>"$dir/search.err"
if [ $? -eq 0 ] && python3 - "$dir/out/plans.json" <<'PY'; then ok "sweep profile map: one profile per system"; else bad "sweep profile map: $(cat "$dir/search.err")"; fi
import json, sys
p = json.load(open(sys.argv[1]))["stats"]["profile"]
sys.exit(not ("dgx-a100-80gb: " in p and "a100-80gb.h5" in p and "dgx-h100: synth:h100-sxm" in p
              and "profile_gpu_mismatch" not in json.load(open(sys.argv[1]))["stats"]))
PY
sed -i 's/"dgx-h100": "synth"/"dgx-h100": "'"${a100//\//\\/}"'"/' "$dir/sweep.json"
out=$("$bin" search "$dir/sweep.json" -o "$dir/out2" --quiet --no-dataset 2>&1)
if [ $? -eq 1 ] && has "$out" "system dgx-h100" && has "$out" "measured on GPU 'a100-80gb'"; then
    ok "search refuses an A100 profile for the H100 system"
else
    bad "search mismatch: $out"
fi
"$bin" search "$dir/sweep.json" -o "$dir/out3" --quiet --no-dataset --allow-profile-mismatch 2>"$dir/s3.err"
if [ $? -eq 0 ] && grep -q WARNING "$dir/s3.err" && python3 -c '
import json, sys; s = json.load(open(sys.argv[1]))["stats"]
sys.exit(not ("dgx-h100: profile of a100-80gb" in s["profile_gpu_mismatch"] and "MEASURED ON a100-80gb" in s["profile"]))' "$dir/out3/plans.json"; then
    ok "search --allow-profile-mismatch flags plans.json"
else
    bad "search --allow-profile-mismatch: $(cat "$dir/s3.err")"
fi
cat >"$dir/badmap.json" <<'JSON'
{"system": "dgx-h100", "model": "gpt3-1.3b", "gpus": 8, "training": {"global_batch": 256},
 "profile": {"dgx-h200": "synth"}}
JSON
out=$("$bin" search "$dir/badmap.json" -o "$dir/out4" --quiet --no-dataset 2>&1)
if [ $? -eq 1 ] && has "$out" "profile.dgx-h200" && has "$out" "a system of the sweep"; then ok "profile map: unknown system refused"; else bad "profile map unknown system: $out"; fi

# 3. preset overrides: the preset's figures with the given keys replaced
cat >"$dir/ov.json" <<'JSON'
{"model": {"preset": "gpt3-1.3b", "seq_len": 512},
 "system": {"preset": "dgx-h100", "price_per_gpu_hour_usd": 2.0, "inter_node": {"bw_GBps_per_gpu": 25}},
 "gpus": 8, "parallel": {"tp": 1, "pp": 1, "micro_batch": 4}, "training": {"global_batch": 256}}
JSON
"$bin" simulate "$dir/ov.json" --json --profile roofline >"$dir/ov.out" 2>&1 || bad "override run failed: $(cat "$dir/ov.out")"
"$bin" simulate "$dir/h100.json" --json --profile roofline >"$dir/base.out" 2>&1
if python3 - "$dir/ov.out" "$dir/base.out" <<'PY'; then ok "model and system overrides applied"; else bad "overrides not applied"; fi
import json, sys
o, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
# 512-token sequences: 4x fewer tokens per iteration than the preset's 2048
assert o["seq_len"] == 512 and b["seq_len"] == 2048, (o["seq_len"], b["seq_len"])
# $2.00 instead of the preset's price: cost per GPU-second is price / 3600
c = o["cost_per_iteration_usd"] / (o["iteration_time_s"] * 8)
assert abs(c - 2.0 / 3600) < 1e-12 * c, c
PY
out=$("$bin" simulate "$dir/ov.json" --profile roofline 2>&1)
if has "$out" "gpt3-1.3b[seq_len=512]" && has "$out" "dgx-h100[price_per_gpu_hour_usd=2,inter_node=...]"; then
    ok "overridden presets are named after their overrides"
else
    bad "override names: $out"
fi
sed 's/"seq_len": 512/"seq_len": 512, "sequence": 4/' "$dir/ov.json" >"$dir/ovbad.json"
out=$("$bin" simulate "$dir/ovbad.json" --profile roofline 2>&1 >/dev/null)
if [ $? -eq 1 ] && has "$out" "$dir/ovbad.json" && has "$out" "unknown key 'model.sequence'"; then ok "an unknown override key is refused: $out"; else bad "bad override: $out"; fi
sed 's/"preset": "gpt3-1.3b"/"preset": "gpt9"/' "$dir/ov.json" >"$dir/ovbad2.json"
out=$("$bin" simulate "$dir/ovbad2.json" --profile roofline 2>&1 >/dev/null)
if [ $? -eq 1 ] && has "$out" "model.preset" && has "$out" "gpt9"; then ok "an unknown preset is refused: $out"; else bad "bad preset: $out"; fi
# in a sweep: overridden presets side by side with the plain ones
cat >"$dir/ovsweep.json" <<'JSON'
{"models": ["mixtral-8x7b", {"preset": "mixtral-8x7b", "seq_len": 512}],
 "system": {"preset": "dgx-h100", "price_per_gpu_hour_usd": 2.0}, "gpus": [64],
 "training": {"global_batch": 512, "tokens": 1e10}, "profile": "roofline",
 "space": {"ep": [8], "tp": [1, 2], "micro_batch": [1], "zero": [1], "recompute": ["full"]}}
JSON
"$bin" search "$dir/ovsweep.json" -o "$dir/ovout" --quiet 2>"$dir/ovs.err"
if [ $? -eq 0 ] && python3 - "$dir/ovout/plans.json" <<'PY'; then ok "sweep with overridden presets"; else bad "sweep overrides: $(cat "$dir/ovs.err")"; fi
import json, sys
d = json.load(open(sys.argv[1]))
names = {p["model"] for p in d["top_time"]}
assert names == {"mixtral-8x7b", "mixtral-8x7b[seq_len=512]"}, names
assert {p["system"] for p in d["top_time"]} == {"dgx-h100[price_per_gpu_hour_usd=2]"}
PY
[ $fails -eq 0 ] || { echo "$fails FAILED"; exit 1; }
echo "PASS"
