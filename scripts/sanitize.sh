#!/usr/bin/env bash
# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer, in its
# own build tree (build-sanitize/). CI runs it after README's test command
# (.ci/run). Usage: bash scripts/sanitize.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
# The benchmarks are left out (DAYZERO_BUILD_BENCH=OFF): they are timed, not tested,
# and building them again under the sanitizers costs CI minutes and checks nothing.
# So is the GUI (DAYZERO_BUILD_GUI=OFF): its widgets are presentation over the library
# calls checked here, its tests run in the plain build, and compiling Qt's headers again
# cost CI several minutes. -O1 with line tables only (-g1) keeps the reports' file:line
# while compiling faster than RelWithDebInfo's -O2 -g.
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DDAYZERO_SANITIZE=ON -DDAYZERO_BUILD_BENCH=OFF -DDAYZERO_BUILD_GUI=OFF >/dev/null
cmake --build build-sanitize -j 2
# Every test under ASan (memory errors) and UBSan (undefined behaviour; any report fails).
# Leaks are checked too, except in the MPI tests: OpenMPI's plugins are unloaded before
# exit, so LeakSanitizer cannot tell their allocations (kept for the process's life)
# from ours. The suppressions are third-party libraries' own process-lifetime caches.
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# OpenMPI's shared-memory transport and ASan's shadow mappings do not always agree;
# the TCP and self transports are enough for the tests' 2-4 local ranks.
export OMPI_MCA_btl="self,tcp"
ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1" ctest --test-dir build-sanitize --output-on-failure -j 2 -LE mpi "$@"
ASAN_OPTIONS="detect_leaks=0:strict_string_checks=1" ctest --test-dir build-sanitize --output-on-failure -j 2 -L mpi "$@"
