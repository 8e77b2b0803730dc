#!/usr/bin/env bash
# Errors under mpirun: every rank must stop with a clear message naming what is
# wrong, the exit status must be non-zero, no Measurements may be written, and
# nothing may hang (the CTest timeout):
#  1. a plan for 4 ranks run on 2,
#  2. a plan for another model,
#  3. a sharded checkpoint with one shard deleted, on 2 pipeline stages (the rank
#     whose layers live in the missing shard cannot read them),
#  4. NCCL asked to carry a CPU run's collectives,
#  5. the CUDA backend on a machine without a GPU, or in a build without CUDA
#     (skipped where a GPU is present).
# usage: mpi_errors.sh DAYZERO TINY_FIXTURES_DIR WORK_DIR MPIRUN
set -u
dayzero=$1 tiny=$2 work=$3 mpirun=$4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

# expect NAME PATTERN -- ARGS...: both ranks print "rank r: error: ...PATTERN", exit != 0.
expect() {
  local name=$1 pattern=$2
  shift 3
  local out rc
  out=$("$mpirun" --allow-run-as-root --oversubscribe --tag-output -np 2 "$dayzero" run "$@" --prompt-len 4 --decode-steps 1 \
        --out "$work/$name.json" 2>&1)
  rc=$?
  echo "--- $name (exit status $rc)"
  echo "$out" | grep "error" | head -20
  [ $rc -ne 0 ] || fail "$name: exited 0"
  for r in 0 1; do
    echo "$out" | grep -q "rank $r: error: .*$pattern" || fail "$name: rank $r did not report '$pattern'"
  done
  [ ! -e "$work/$name.json" ] || fail "$name: measurements written for a failed run"
}

# 1. A plan for 4 ranks.
cat > "$work/tp4.json" <<JSON
{"schema_version": 1, "model": "$tiny/llama/config.json", "attention": {"tp": 4}}
JSON
expect ranks "needs 4 ranks but 2 ranks run it" -- "$work/tp4.json" --weights "$tiny/llama"

# 2. A plan made for qwen3 run on llama's weights.
cat > "$work/other.json" <<JSON
{"schema_version": 1, "model": "$tiny/qwen3/config.json", "attention": {"tp": 2}}
JSON
expect model "another model" -- "$work/other.json" --weights "$tiny/llama"

# 3. A missing shard.
"$dayzero" synth "$tiny/llama" --out "$work/ckpt" --shard-gb 0.0002 >/dev/null || fail "synth"
shards=("$work"/ckpt/model-*.safetensors)
[ ${#shards[@]} -ge 2 ] || fail "expected several shards, got ${#shards[@]}"
last=${shards[-1]}
rm "$last"
expect shard "$(basename "$last")" -- --weights "$work/ckpt" --pp 2
# 4. --comm nccl with the CPU backend.
expect comm "needs --backend cuda" -- --weights "$tiny/llama" --tp 2 --comm nccl

# 5. NCCL for the CUDA backend on a machine without a GPU: every rank names the
# reason before any NCCL call (no device, or a build without CUDA, e.g. ASan's).
if ! nvidia-smi -L >/dev/null 2>&1; then
  expect cuda "no CUDA device\|built without CUDA" -- --weights "$tiny/llama" --tp 2 --backend cuda --comm nccl
fi
echo "PASS: every rank reported each error"
