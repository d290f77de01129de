#!/usr/bin/env bash
# The test command: install what is missing, build twice (warnings as errors;
# and AddressSanitizer + UndefinedBehaviorSanitizer), run every ctest label but
# gpu in both, then a clang ASan + UBSan build with the libFuzzer harnesses
# (unit tests, then each fuzzer for a bounded time), then the validation
# report with its regression threshold.
#   scripts/test.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

# test-time packages: Debian's h5py and pandas (tests/cli/sweep_pandas.sh
# reads sweep.h5 with docs/search.md's one-liner) and chromium
# (tests/cli/report_html.sh opens the report page headless; installing it
# took 70 s on the 2-core development machine)
LLMPLAN_EXTRA_PKGS="python3-h5py python3-pandas chromium" scripts/setup.sh "$root/build" -DLLMPLAN_WERROR=ON
scripts/setup.sh "$root/build-asan" -DLLMPLAN_WERROR=ON -DLLMPLAN_SANITIZE=ON -DLLMPLAN_PROFILER=OFF

status=0
echo "== tests (normal build)"
(cd build && ctest -LE gpu --output-on-failure -j2) || status=1
echo "== tests (sanitizer build)"
# MPI tests run the real binary many times; under ASan they only repeat the
# normal build's checks slowly, so the sanitizer pass runs unit and golden.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest -L "unit|golden" --output-on-failure -j2) || status=1
echo "== the core and the serial io without the MPI driver (-DLLMPLAN_MPI=OFF): build, unit tests"
# issue #19: no llmplan code needs MPI below src/io_par/, search/ and cli/; neither
# library references an MPI function (the io takes only mpi.h's types from a
# parallel HDF5's hdf5.h)
if scripts/setup.sh "$root/build-nompi" -DLLMPLAN_WERROR=ON -DLLMPLAN_MPI=OFF -DLLMPLAN_PROFILER=OFF; then
  (cd build-nompi && ctest -L unit --output-on-failure -j2) || status=1
  if [ -e build-nompi/search ] || [ -e build-nompi/cli ] || [ -e build-nompi/src/libllmplan_sweep_h5.a ]; then
    echo "FAIL: -DLLMPLAN_MPI=OFF configured the MPI driver, the parallel io or the executable"; status=1
  fi
  if nm -u build-nompi/src/libllmplan_core.a build-nompi/src/libllmplan_io.a | grep -q ' MPI_'; then
    echo "FAIL: the core or the io references MPI:"
    nm -u build-nompi/src/libllmplan_core.a build-nompi/src/libllmplan_io.a | grep ' MPI_'
    status=1
  fi
else
  status=1
fi
echo "== clang sanitizer build (UBSan with float-cast-overflow) and fuzzers (tests/fuzz)"
# clang's -fsanitize=undefined checks float-to-int casts, GCC's does not; the
# same build carries the libFuzzer harnesses, run for a bounded time each
if LLMPLAN_EXTRA_PKGS="clang libclang-rt-14-dev" CC=clang scripts/setup.sh "$root/build-fuzz" \
    -DLLMPLAN_WERROR=ON -DLLMPLAN_FUZZ=ON -DLLMPLAN_PROFILER=OFF; then
  (cd build-fuzz && ASAN_OPTIONS=detect_leaks=1 ctest -L unit --output-on-failure -j2) || status=1
  bash tests/fuzz/run.sh "$root/build-fuzz" "${LLMPLAN_FUZZ_SECONDS:-15}" || status=1
else
  status=1
fi
echo "== validation report (the golden test validate.sh gates on it)"
python3 scripts/validate --build "$root/build" --quiet || status=1
exit $status
