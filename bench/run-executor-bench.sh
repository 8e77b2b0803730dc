#!/usr/bin/env bash
# The executor on a synthetic DeepSeek-V3 with its real layer shapes, truncated to
# 2 layers: layer 0 dense (MLA + the 18432-wide MLP), layer 1 MoE (MLA + all 256
# routed experts of 2048 + 1 shared expert), FP8 block-scaled as published, plus the
# real 129280-token embedding and LM head. The MTP module is dropped
# (num_nextn_predict_layers = 0): `run` never reads it and it would add another
# ~11 GB MoE layer to the checkpoint. Runs on 1 rank, then on 2 ranks (DP 2 x EP 2,
# then TP 2), and prints bench_executor's table: step times and the GEMMs' GFLOP/s
# against this CPU's measured peak.
#
#   bench/run-executor-bench.sh [BUILD_DIR]        (default: build)
#
# Environment:
#   DAYZERO_BENCH_DIR    results and the model config (default /tmp/dayzero-bench-ds2)
#   DAYZERO_BENCH_CKPT   the checkpoint (default $DAYZERO_BENCH_DIR/ckpt; ~16 GB); reused
#                        when present and `dayzero check` accepts it
#   PROMPT_LEN (64), DECODE_STEPS (4), ITERATIONS (3), RUN_TIMEOUT_S (3600 per run)
#   DAYZERO_THREADS      kernel threads per rank (default: cores / ranks on the node)
set -u -o pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 1; }
dz=$build/dayzero  # cli/CMakeLists.txt puts it at the top of the build tree
[[ -x $dz ]] || dz=$build/cli/dayzero
bench=$build/bench/bench_executor
for exe in "$dz" "$bench"; do
  [[ -x $exe ]] || { echo "missing $exe: build it first (ninja -C $build dayzero bench_executor)" >&2; exit 1; }
done
dir=${DAYZERO_BENCH_DIR:-/tmp/dayzero-bench-ds2}
ckpt=${DAYZERO_BENCH_CKPT:-$dir/ckpt}
prompt_len=${PROMPT_LEN:-64}
decode_steps=${DECODE_STEPS:-4}
iterations=${ITERATIONS:-3}
run_timeout=${RUN_TIMEOUT_S:-3600}
mkdir -p "$dir/model" "$(dirname "$ckpt")"

# 1. The config: DeepSeek-V3's own, cut to one dense + one MoE layer, no MTP.
jq '.num_hidden_layers = 2 | .first_k_dense_replace = 1 | .num_nextn_predict_layers = 0' \
  "$root/scenarios/models/DeepSeek-V3/config.json" > "$dir/model/config.json"
echo "== model: DeepSeek-V3 shapes, 2 layers (layer 0 dense, layer 1 MoE with all 256 routed experts), no MTP"

# 2. The checkpoint: reuse one that `check` accepts; else check the size against the disk, then synth.
if [[ -f $ckpt/config.json ]] && diff -q <(jq -S . "$ckpt/config.json") <(jq -S . "$dir/model/config.json") > /dev/null &&
   "$dz" check "$ckpt" > "$dir/check.log" 2>&1; then
  echo "== reusing the checkpoint in $ckpt ($(du -sh "$ckpt" | cut -f1))"
else
  need=$("$dz" inspect "$dir/model" --json | jq '.weights_bytes.checkpoint')
  avail=$(df --output=avail -B1 "$(dirname "$ckpt")" | tail -1)
  awk -v n="$need" -v a="$avail" -v d="$(dirname "$ckpt")" 'BEGIN { printf "== checkpoint: %.1f GB (1e9 bytes) as " \
    "DeepSeek-V3 stores it (FP8 experts of the MoE layer ~11 GB); %.1f GB free under %s\n", n / 1e9, a / 1e9, d }' 
  if (( need + 2000000000 > avail )); then
    echo "not enough disk for the checkpoint: set DAYZERO_BENCH_CKPT to a path with more room" >&2
    exit 1
  fi
  rm -rf "$ckpt"
  "$dz" synth "$dir/model" --out "$ckpt" || { echo "synth failed" >&2; exit 1; }
fi
echo "memory: $(free -g | awk '/^Mem:/ {print $2 " GiB total, " $7 " GiB available"}'); the runs map the checkpoint"

common=(--weights "$ckpt" --prompt-len "$prompt_len" --decode-steps "$decode_steps" --iterations "$iterations")
results=()

# run NAME OUT.json COMMAND...: runs it with a log; a refusal or failure is reported and the script goes on.
run() {
  local name=$1 out=$2 log=$dir/${2%.json}.log
  shift 2
  echo
  echo "== $name: $*"
  local t0=$SECONDS rc=0
  timeout "$run_timeout" "$@" > "$log" 2>&1 || rc=$?
  if (( rc == 0 )) && [[ -f $dir/$out ]]; then
    grep -E '^(generated tokens|prefill)' "$log"
    echo "   done in $((SECONDS - t0)) s; measurements in $dir/$out"
    results+=("$dir/$out")
  elif grep -qi 'not supported' "$log"; then
    echo "   REFUSED (not supported yet by this build): $(grep -i -m1 'not supported' "$log")"
  elif (( rc == 124 )); then
    echo "   TIMED OUT after $run_timeout s (log: $log)"
  else
    echo "   FAILED with exit status $rc (log: $log): $(grep -m1 -i 'error' "$log")"
  fi
}

mpi=(mpirun -np 2 --allow-run-as-root --oversubscribe)
rm -f "$dir"/m1.json "$dir"/m2.json "$dir"/m2tp.json
run "1 rank" m1.json "$dz" run "${common[@]}" --out "$dir/m1.json"
run "2 ranks, DP 2 x EP 2" m2.json "${mpi[@]}" "$dz" run "${common[@]}" --dp 2 --ep 2 --out "$dir/m2.json"
run "2 ranks, TP 2" m2tp.json "${mpi[@]}" "$dz" run "${common[@]}" --tp 2 --out "$dir/m2tp.json"

echo
if (( ${#results[@]} == 0 )); then
  echo "no run succeeded: nothing to report" >&2
  exit 1
fi
"$bench" "${results[@]}"
