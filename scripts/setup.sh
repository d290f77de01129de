#!/usr/bin/env bash
# Shared set-up for demo.sh and test.sh: install the Debian packages llmplan
# needs (only those missing), then configure and build into $1 (default
# build/) with any extra CMake arguments that follow.
#   scripts/setup.sh [BUILD_DIR] [cmake args...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true

pkgs="cmake make gcc libc6-dev pkg-config python3 libopenmpi-dev openmpi-bin libhdf5-openmpi-dev hdf5-tools libcjson-dev"
# LLMPLAN_EXTRA_PKGS: more Debian packages a caller needs (test.sh: clang and
# its runtime libraries for the fuzz / clang sanitizer build)
pkgs="$pkgs ${LLMPLAN_EXTRA_PKGS:-}"
missing=""
for p in $pkgs; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "== installing:$missing"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# CUDA 13 lives in its standard location; put nvcc on PATH so CMake finds it
# and builds the profiler (it is skipped where there is no CUDA).
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

echo "== configuring $build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$build.cmake.log" 2>&1 ||
  { cat "$build.cmake.log"; exit 1; }
echo "== building $build"
cmake --build "$build" -j"$(nproc)" 2>&1 | grep -E "warning|error|Error" || true
cmake --build "$build" -j"$(nproc)" >/dev/null
