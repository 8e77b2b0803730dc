#!/usr/bin/env bash
# A sharded checkpoint with one shard deleted, run on 2 pipeline stages: the rank
# whose layers live in the missing shard cannot read them, and every rank must
# stop with a message naming the file, with a non-zero exit status, within the
# CTest timeout (never a hang).
# usage: mpi_missing_shard.sh DAYZERO CONFIG_DIR WORK_DIR MPIRUN
set -u
dayzero=$1 config=$2 work=$3 mpirun=$4
rm -rf "$work" && mkdir -p "$work"
"$dayzero" synth "$config" --out "$work/ckpt" --shard-gb 0.0002 >/dev/null || exit 1
shards=("$work"/ckpt/model-*.safetensors)
[ ${#shards[@]} -ge 2 ] || { echo "expected several shards, got ${#shards[@]}"; exit 1; }
last=${shards[-1]}
rm "$last"
out=$("$mpirun" --allow-run-as-root --oversubscribe -np 2 "$dayzero" run --weights "$work/ckpt" --pp 2 \
      --prompt-len 4 --decode-steps 1 --out "$work/m.json" 2>&1)
rc=$?
echo "$out"
echo "exit status: $rc"
[ $rc -ne 0 ] || { echo "FAIL: a run with a missing shard exited 0"; exit 1; }
name=$(basename "$last")
for r in 0 1; do
  echo "$out" | grep -q "rank $r: error: .*$name" || { echo "FAIL: rank $r did not report $name"; exit 1; }
done
[ ! -e "$work/m.json" ] || { echo "FAIL: measurements written for a failed run"; exit 1; }
echo "PASS: every rank reported the missing $name"
