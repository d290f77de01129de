#!/usr/bin/env bash
# Accuracy regression gate: scripts/validate against data/validation/ with the
# per-source MAPE thresholds of scripts/validate (THRESHOLDS); and the shipped
# trust bands (data/trust_bands.json, every plan's "trust") must be the ones
# this tree's validation gives (numbers within 0.05 points: builds may round
# the last bits differently).
#   validate.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
build=$(cd "$(dirname "$bin")/.." && pwd)
rm -rf "$dir" && mkdir -p "$dir"
python3 "$src/scripts/validate" --build "$build" --check --quiet --bands "$dir/bands.json" ||
    exit 1
python3 - "$src/data/trust_bands.json" "$dir/bands.json" <<'PY'
import json, sys
shipped, now = (json.load(open(p)) for p in sys.argv[1:3])
def same(a, b, path):
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{path}: keys {sorted(a)} vs {sorted(b)}"
        for k in a:
            d = same(a[k], b[k], f"{path}.{k}")
            if d: return d
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} entries"
        for i, (x, y) in enumerate(zip(a, b)):
            d = same(x, y, f"{path}[{i}]")
            if d: return d
    elif isinstance(a, float) or isinstance(b, float):
        if abs(a - b) > 0.05:
            return f"{path}: {a} shipped, {b} now"
    elif a != b:
        return f"{path}: {a!r} shipped, {b!r} now"
    return None
d = same(shipped, now, "")
if d:
    sys.exit(f"data/trust_bands.json is stale ({d}); regenerate it: "
             "python3 scripts/validate --build build --quiet --bands data/trust_bands.json")
print("trust bands current")
PY
