#!/usr/bin/env bash
# Accuracy regression gate: scripts/validate against data/validation/ with the
# per-source MAPE thresholds of scripts/validate (THRESHOLDS).
#   validate.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2
build=$(cd "$(dirname "$bin")/.." && pwd)
exec python3 "$src/scripts/validate" --build "$build" --check --quiet
