#!/usr/bin/env bash
# Every GPU check, on a machine with a GPU, in one run, with one summary at the end.
#
#   bash scripts/gpu-deps.sh     # here, once: the .deb files the GPU machine lacks
#   bash tests/gpu/run.sh        # there (the device run carries gpu-deps/)
#
# The GPU machine has CUDA, CMake and ninja but no Debian -dev packages and no
# network: what the checks build with comes from gpu-deps/*.deb, unpacked with
# dpkg -x into a prefix (GoogleTest built from its sources with that machine's
# compiler). The build holds only what the checks use (DAYZERO_GPU_CHECKS_ONLY:
# core, model, plan, executor, cuda, tests/cuda) for the GPU it finds
# (CMAKE_CUDA_ARCHITECTURES=native). DAYZERO_REQUIRE_GPU=1 makes a check that finds
# no GPU fail instead of skipping. Results: $OUT/gpu-checks.xml when OUT is set.
# Exit status: 0 when every check passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
work=${DAYZERO_GPU_WORK:-/tmp/dayzero-gpu}
prefix="$work/prefix"
build="$work/build"
mkdir -p "$prefix" "$build"
summary=()
step() {  # step NAME COMMAND...: runs it, logs to $work/NAME.log, records PASS/FAIL
  local name=$1
  shift
  local t0=$SECONDS
  if "$@" >"$work/$name.log" 2>&1; then
    summary+=("PASS  $name ($((SECONDS - t0)) s)")
    return 0
  fi
  summary+=("FAIL  $name ($((SECONDS - t0)) s): $(tail -n 3 "$work/$name.log" | tr '\n' ' ')")
  return 1
}
finish() {
  echo
  echo "== DayZero GPU checks: $(date -u +%FT%TZ) on $(hostname)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/   GPU: /'
  printf '   %s\n' "${summary[@]}"
  local failed
  failed=$(printf '%s\n' "${summary[@]}" | grep -c '^FAIL' || true)
  echo "== $failed failed of ${#summary[@]}"
  [ "$failed" -eq 0 ]
  exit $?
}

unpack() {
  shopt -s nullglob
  local debs=("$root"/gpu-deps/*.deb)
  if [ ${#debs[@]} -eq 0 ]; then echo "no gpu-deps/*.deb: using the system's packages"; return 0; fi
  for d in "${debs[@]}"; do dpkg -x "$d" "$prefix"; done
  if [ -d "$prefix/usr/src/googletest" ] && [ ! -f "$prefix/gtest/lib/libgtest.a" ] &&
    [ ! -f "$prefix/gtest/lib64/libgtest.a" ]; then
    cmake -S "$prefix/usr/src/googletest" -B "$work/gtest-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$prefix/gtest" -DBUILD_GMOCK=OFF &&
      cmake --build "$work/gtest-build" -j "$(nproc)" && cmake --install "$work/gtest-build"
  fi
}
# NCCL: the CUDA toolkit's when it has nccl.h, else the one PyTorch's wheels bring
# (nvidia-nccl: include/ and lib/), which the tests then load (LD_LIBRARY_PATH).
nccl_root=""
if ! ls /usr/local/cuda/include/nccl.h >/dev/null 2>&1; then
  nccl_root=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
  [ -n "$nccl_root" ] && export LD_LIBRARY_PATH="$nccl_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
configure() {
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAYZERO_GPU_CHECKS_ONLY=ON \
    -DDAYZERO_NCCL_ROOT="$nccl_root" \
    -DCMAKE_CUDA_ARCHITECTURES="${DAYZERO_CUDA_ARCHS:-native}" \
    -DCMAKE_PREFIX_PATH="$prefix/gtest;$prefix/usr;$prefix/usr/share" -DEigen3_DIR="$prefix/usr/share/eigen3/cmake"
}

step unpack-deps unpack || finish
step configure configure || finish
step build cmake --build "$build" -j "$(nproc)" || finish
xml=()
[ -n "${OUT:-}" ] && xml=(--output-junit "$OUT/gpu-checks.xml")
export DAYZERO_REQUIRE_GPU=${DAYZERO_REQUIRE_GPU:-1}
step cuda-tests ctest --test-dir "$build" --output-on-failure "${xml[@]}"
# Each test's own line (passed, failed, skipped) in the summary.
while IFS= read -r line; do summary+=("  $line"); done < <(grep -E "Test +#[0-9]+:" "$work/cuda-tests.log" | sed 's/^ *[0-9]*\/[0-9]* //')
# What this GPU reaches (HBM copy, the reference GEMM): the limits the ops are set against.
limits() {  # exit status 2 (no GPU) is a skip unless a GPU is required
  "$build/cuda/cuda-limits" --json "${OUT:-$work}/cuda-limits.json"
  local rc=$?
  [ "$rc" -eq 2 ] && [ "$DAYZERO_REQUIRE_GPU" != 1 ] && return 0
  return "$rc"
}
step cuda-limits limits
while IFS= read -r line; do summary+=("  $line"); done < <(grep -E "^  " "$work/cuda-limits.log")
finish
