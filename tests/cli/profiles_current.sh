#!/usr/bin/env bash
# The shipped analytical profiles are what `llmplan profile synth` produces
# now: regenerate each one into scratch and compare the table checksums (the
# provenance attributes carry dates, the tables must be identical).
#   profiles_current.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
pass=0 fail=0
for f in "$src"/data/profiles/*.h5; do
  gpu=$(basename "$f" .h5)
  [ -f "$src/data/gpus/$gpu.json" ] || continue   # measured profiles have no synth twin
  "$bin" profile synth --gpu "$gpu" -o "$dir/$gpu.h5" >/dev/null || { fail=$((fail+1)); echo "FAIL synth $gpu"; continue; }
  a=$("$bin" profile info "$f" | awk '/^checksum:/ {print $2}')
  b=$("$bin" profile info "$dir/$gpu.h5" | awk '/^checksum:/ {print $2}')
  if [ -n "$a" ] && [ "$a" = "$b" ]; then
    pass=$((pass+1)); echo "ok   $gpu $a"
  else
    fail=$((fail+1)); echo "FAIL $gpu: shipped $a, synth now $b (run: llmplan profile synth --gpu $gpu)"
  fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
