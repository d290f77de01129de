#!/usr/bin/env bash
# Measure the device machine's GPU with llmplan-profile (docs/profiler.md, "On
# the device tool"): unpack the profiler bundle carried as a tarball (built
# here by `scripts/profiler-bundle.sh --profiler-only` and `tar -cJf`), add the
# CUDA libraries of that machine's image (the toolkit's, and cuDNN, NCCL and
# cuBLAS from pip's nvidia-* wheels, which the bundle leaves out) to the
# loader's path, and run llmplan-profile on its one GPU, writing profile.h5,
# profile.log and gpu.txt into OUT ($OUT on the device). The presets come from
# this source tree's data/. Options after OUT go to llmplan-profile (default:
# GEMM, attention and memory-bound tables in bf16 and fp8, about 3.5 minutes on
# an H100 by its --dry-run estimate).
#   usage: scripts/device-profile.sh BUNDLE.tar.xz OUT [llmplan-profile options]
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUNDLE.tar.xz OUT [llmplan-profile options]" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
tarball=$1 out=$2
shift 2
[ $# -gt 0 ] || set -- --only gemm,attn,mem --precisions bf16,fp8
mkdir -p "$out"
work=$(mktemp -d)
tar -C "$work" -xJf "$tarball"
wrapper=$(ls "$work"/*/llmplan-profile 2>/dev/null | head -n 1)
[ -x "$wrapper" ] || { echo "device-profile: no llmplan-profile wrapper in $tarball" >&2; exit 1; }
# the image's CUDA 13 libraries installed as Python wheels (nvidia/*/lib)
wheels=$(python3 -c 'import glob, os, site
print(":".join(sorted({d for b in site.getsitepackages() for d in glob.glob(os.path.join(b, "nvidia", "*", "lib"))})))' 2>/dev/null || true)
export LD_LIBRARY_PATH="${wheels}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LLMPLAN_DATA="$src/data" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ nvidia-smi -L || echo "(nvidia-smi -L failed)"; } >"$out/gpu.txt" 2>&1
set +e
"$wrapper" "$@" -o "$out/profile.h5" >"$out/profile.log" 2>&1
rc=$?
set -e
tail -n 20 "$out/profile.log"
echo "device-profile: llmplan-profile exit $rc; $(cat "$out/gpu.txt" | head -n 1)"
exit $rc
