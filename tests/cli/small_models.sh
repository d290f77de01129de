#!/usr/bin/env bash
# The findings of Ashkboos et al. 2024 that llmplan supports, as directions
# (scripts/small_models.py --check: exits 1 when one goes the other way), on
# each cloud's instances (--cloud aws, gcp, azure: their own networks and
# prices); a price set of another cloud's instances is refused.
#   small_models.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
build=$(dirname "$(dirname "$bin")")
for cloud in aws gcp azure; do
    python3 "$src/scripts/small_models.py" --build "$build" --out "$dir/$cloud" --cloud "$cloud" \
        --no-plots --check >"$dir/$cloud.log" 2>&1
    rc=$?
    echo "== $cloud"
    grep -E '^(ok|FAIL|disagrees)' "$dir/$cloud.log"
    [ $rc -eq 0 ] || { tail -5 "$dir/$cloud.log"; echo "FAIL small_models --cloud $cloud --check (rc $rc)"; exit 1; }
done
grep -q '^Instances: A100-40GB `gcp-a2-highgpu-8g`' "$dir/gcp/small_models.md" ||
    { echo "FAIL gcp tables do not name their instances"; exit 1; }
if python3 "$src/scripts/small_models.py" --build "$build" --out "$dir/bad" --cloud gcp \
    --prices aws-2024 --no-plots >"$dir/bad.log" 2>&1; then
    echo "FAIL aws-2024 prices accepted for gcp instances"; exit 1
fi
grep -q 'price set aws-2024 prices aws instances' "$dir/bad.log" ||
    { cat "$dir/bad.log"; echo "FAIL unclear error for a mismatched price set"; exit 1; }
echo "small_models findings: ok"
