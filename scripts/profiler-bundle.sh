#!/usr/bin/env bash
# Package llmplan-profile and llmplan for a GPU node that has CUDA (driver,
# runtime, cuBLAS, cuDNN, NCCL) but none of the Debian packages they were
# built against (Open MPI, HDF5, cJSON): the binaries, every non-CUDA shared
# library they load, Open MPI's plugins, orted (which MPI_Init starts for a
# singleton run without mpirun), its help and config files, PMIx's plugins,
# the data/ presets, and wrapper scripts that point the loader and Open MPI
# at the bundle.
#
# usage: scripts/profiler-bundle.sh [--profiler-only] [BUILD_DIR [OUT_DIR]]
#        (defaults: build-gpu, bundle; run from the source tree)
# --profiler-only: llmplan-profile alone, without llmplan and the presets
# (LLMPLAN_DATA then points at a source tree's data/): small enough to travel
# beside the working tree to the device machine (64 MiB in all; docs/profiler.md)
# then:  OUT_DIR/llmplan-profile --help      (any directory, any environment)
#        OUT_DIR/mpirun -np 8 OUT_DIR/llmplan-profile ...
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
only=0
if [ "${1:-}" = --profiler-only ]; then
    only=1
    shift
fi
build=${1:-$src/build-gpu}
out=${2:-bundle}

bins=("$build/profiler/llmplan-profile")
[ "$only" = 1 ] || bins+=("$build/search/llmplan")
for b in "${bins[@]}"; do
    [ -x "$b" ] || { echo "profiler-bundle: $b not built" >&2; exit 1; }
done

# Libraries the target node provides itself (glibc, the driver, the CUDA
# toolkit libraries the profiler is built for).
exclude='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libutil\.so|libresolv\.so|libcuda|libcudart|libcublas|libcudnn|libnccl|libnvidia|libnvrtc|libnvJitLink|libcupti)'

ompi_path() { ompi_info --path "$1" 2>/dev/null | sed -n 's/^ *[A-Za-z]*: *//p' | head -n 1; }
pkglibdir=$(ompi_path pkglibdir)
pkgdatadir=$(ompi_path pkgdatadir)
sysconfdir=$(ompi_path sysconfdir)
[ -d "$pkglibdir" ] || { echo "profiler-bundle: Open MPI plugin dir not found (ompi_info)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/openmpi" "$out/lib/hwloc" "$out/share" "$out/etc"
cp -L "${bins[@]}" "$out/bin/"
for tool in orted orterun; do
    if p=$(command -v "$tool"); then cp -L "$p" "$out/bin/"; fi
done
cp -L "$pkglibdir"/*.so "$out/lib/openmpi/"

# PMIx (Open MPI 4 uses the system's): its own plugins and help files.
pmixlib=$(ldd "$pkglibdir"/mca_pmix_ext*.so 2>/dev/null | awk '/libpmix\.so/ {print $3; exit}' || true)
[ -n "${pmixlib:-}" ] && pmixlib=$(readlink -f "$pmixlib")
if [ -n "${pmixlib:-}" ] && [ -d "$(dirname "$pmixlib")/pmix" ]; then
    mkdir -p "$out/lib/pmix"
    cp -L "$(dirname "$pmixlib")"/pmix/*.so "$out/lib/pmix/"
fi
[ -d /usr/share/pmix ] && cp -rL /usr/share/pmix "$out/share/pmix"
[ -n "$pkgdatadir" ] && [ -d "$pkgdatadir" ] && cp -rL "$pkgdatadir" "$out/share/openmpi"
[ -n "$sysconfdir" ] && [ -d "$sysconfdir" ] && cp -rL "$sysconfdir" "$out/etc/openmpi"
[ "$only" = 1 ] || cp -r "$src/data" "$out/data"

# Every shared library loaded by the binaries and the plugins, transitively
# (ldd resolves the closure), except the excluded ones.
objs=("$out"/bin/* "$out"/lib/openmpi/*.so)
[ -d "$out/lib/pmix" ] && objs+=("$out"/lib/pmix/*.so)
missing=0
while read -r name path; do
    [ -n "$name" ] || continue
    if [[ "$name" =~ $exclude ]]; then continue; fi
    if [ "$path" = "not" ]; then
        echo "profiler-bundle: note: $name not found (a plugin's optional dependency)" >&2
        missing=1
        continue
    fi
    [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
done < <(for o in "${objs[@]}"; do ldd "$o" 2>/dev/null; done |
         awk '/=>/ {print $1, $3} !/=>/ && /^\t\// {n=$1; sub(".*/", "", n); print n, $1}' |
         sort -u)

wrapper() {
    cat >"$out/$1" <<EOF
#!/bin/sh
# $1 from an llmplan bundle (scripts/profiler-bundle.sh).
here=\$(cd "\$(dirname "\$0")" && pwd)
# Open MPI: every install dir relocated into the bundle (installdirs "env").
export OPAL_PREFIX="\$here" OPAL_EXEC_PREFIX="\$here" OPAL_BINDIR="\$here/bin"
export OPAL_LIBDIR="\$here/lib" OPAL_PKGLIBDIR="\$here/lib/openmpi"
export OPAL_DATAROOTDIR="\$here/share" OPAL_DATADIR="\$here/share" OPAL_PKGDATADIR="\$here/share/openmpi"
export OPAL_SYSCONFDIR="\$here/etc/openmpi"
export PMIX_PKGLIBDIR="\$here/lib/pmix"
# hwloc's optional plugins (GL, OpenCL, PCI via libpciaccess) are not needed
export HWLOC_PLUGINS_PATH="\$here/lib/hwloc"
# singleton MPI_Init starts orted from PATH; mpirun starts it on every node
export PATH="\$here/bin:\$PATH"
cuda=\${CUDA_HOME:-/usr/local/cuda}
export LD_LIBRARY_PATH="\$here/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}:\$cuda/lib64:\$cuda/lib"
export LLMPLAN_DATA="\${LLMPLAN_DATA:-\$here/data}"
exec "\$here/bin/$2" "\$@"
EOF
    chmod +x "$out/$1"
}
wrapper llmplan-profile llmplan-profile
[ "$only" = 1 ] || wrapper llmplan llmplan
[ -x "$out/bin/orterun" ] && wrapper mpirun orterun

du -sh "$out" | awk '{print "profiler-bundle: " $2 " (" $1 ")"}'
[ "$missing" = 0 ] || echo "profiler-bundle: some optional plugin dependencies were not bundled (above)" >&2
exit 0
