#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ in build-fuzz/ (clang-14, ASan + UBSan) and
# runs each for a number of executions or a time, one after the other (docs/FUZZING.md).
#
# Usage: scripts/fuzz.sh [--runs N | --time SECONDS] [--jobs-build N] [TARGET...]
#   TARGET: fuzz_config, fuzz_plan, ... (default: every target in fuzz/CMakeLists.txt)
#   default: --time 120
#
# Each target fuzzes a copy of its seeds (fuzz/corpus/TARGET) in build-fuzz/corpus/TARGET,
# which keeps what it learns between runs; the committed seeds never change. Inputs that
# crash, leak, time out (> 10 s; one that runs within 10 s of CPU time when rerun goes to unconfirmed/)
# or exceed 2 GiB are saved in build-fuzz/findings/TARGET/,
# the output in build-fuzz/logs/TARGET.log. Prints per target: executions, seconds,
# executions per second and new findings; exits 1 when any target found something.
set -euo pipefail
cd "$(dirname "$0")/.."

limit=(-max_total_time=120)
build_jobs=1
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) limit=(-runs="$2"); shift 2 ;;
    --time) limit=(-max_total_time="$2"); shift 2 ;;
    --jobs-build) build_jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [[ ${#targets[@]} -eq 0 ]]; then
  mapfile -t targets < <(sed -n '/^set(DAYZERO_FUZZ_TARGETS/,/^)/p' fuzz/CMakeLists.txt | grep -o 'fuzz_[a-z_]*')
fi

# Longest input per target: a little over its largest seed.
max_len_of() {
  case "$1" in
    fuzz_measurements) echo 32768 ;;
    fuzz_config|fuzz_device_catalog|fuzz_safetensors_header) echo 16384 ;;
    *) echo 8192 ;;
  esac
}

build=build-fuzz
if [[ ! -f $build/build.ninja ]]; then
  cmake -S . -B $build -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DDAYZERO_FUZZ=ON -DDAYZERO_BUILD_TESTS=OFF >/dev/null
fi
cmake --build $build -j "$build_jobs" --target "${targets[@]}"

export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# A timeout or slow unit on a busy machine may be starvation, not the input: each is run
# again, and one that finishes within libFuzzer's 10 s limit in CPU time moves to
# findings/TARGET/unconfirmed/ and is not counted.
recheck() {
  local t=$1 dir=$2 f
  for f in "$dir"/timeout-* "$dir"/slow-unit-*; do
    [[ -f $f ]] || continue
    # 10 s of CPU time, not of wall time: a run at nice 19 beside busy processes may get
    # a few per cent of a core, and a wall-clock limit would starve it again. The wall
    # limit only catches an input that blocks without computing.
    if timeout 300 bash -c 'ulimit -t 10; exec "$0" "$1"' "$build/fuzz/$t" "$f" >/dev/null 2>&1; then
      mkdir -p "$dir/unconfirmed"
      mv "$f" "$dir/unconfirmed/"
      echo "$t: $(basename "$f") runs in under 10 s of CPU time: moved to $dir/unconfirmed/" >&2
    fi
  done
}

mkdir -p $build/logs
printf '%-26s %12s %8s %10s %9s\n' target executions seconds exec/s findings
status=0
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  findings=$build/findings/$t
  mkdir -p "$corpus" "$findings"
  cp -n fuzz/corpus/"$t"/* "$corpus"/
  recheck "$t" "$findings"
  before=$(find "$findings" -maxdepth 1 -type f | wc -l)
  start=$(date +%s)
  "$build/fuzz/$t" "${limit[@]}" -dict=fuzz/dict/"$t".dict -max_len="$(max_len_of "$t")" -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" >"$build/logs/$t.log" 2>&1 || true
  seconds=$(($(date +%s) - start))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/logs/$t.log" | grep -o '[0-9]*$' || echo '?')
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$build/logs/$t.log" | grep -o '[0-9]*$' || echo '?')
  recheck "$t" "$findings"
  new=$(($(find "$findings" -maxdepth 1 -type f | wc -l) - before))
  [[ $new -eq 0 ]] || status=1
  printf '%-26s %12s %8s %10s %9s\n' "$t" "$execs" "$seconds" "$rate" "$new"
done
exit $status
