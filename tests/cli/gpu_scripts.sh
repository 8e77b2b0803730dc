#!/usr/bin/env bash
# tests/gpu's report scripts on a CPU run, so that a GPU session's few minutes are not
# spent on a script's own error: roofline.py, side_by_side.py and torch_eager.py each
# read a real `dayzero run` Measurements file, print their table, and exit with the
# status their documentation gives.
# usage: gpu_scripts.sh DAYZERO REPO_ROOT WORK_DIR PYTHON
set -u
dz=$1 root=$2 work=$3 py=$4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
"$dz" run --weights "$root/tests/fixtures/tiny/deepseek_v3" --prompt-len 8 --batch 2 --decode-steps 3 \
  --iterations 1 --out "$work/m.json" >/dev/null || fail "dayzero run"
cat >"$work/limits.json" <<'JSON'
[{"what": "copy 1024 MiB", "bytes": 2147483648, "flops": 0, "iterations": 20, "mean_s": 0.0005, "bytes_per_s": 4.3e12, "flops_per_s": 0},
 {"what": "cublaslt gemm 8192^3 bf16", "bytes": 0, "flops": 1.0995e12, "iterations": 20, "mean_s": 0.00139, "bytes_per_s": 0, "flops_per_s": 7.9e14}]
JSON

# roofline.py: the table, and FAIL (exit 1) naming the host clock of a CPU run.
out=$("$py" "$root/tests/gpu/roofline.py" "$work/m.json" "$work/limits.json")
rc=$?
echo "$out"
[ "$rc" -eq 1 ] || fail "roofline.py: exit status $rc on host op times, not 1"
echo "$out" | grep -Eq "^decode +expert_gemm" || fail "roofline.py: no decode expert_gemm row"
echo "$out" | grep -q "FAIL  decode GEMMs .*the host's" || fail "roofline.py: the host clock is not named"
"$py" "$root/tests/gpu/roofline.py" "$work/m.json" "$work/missing.json" 2>/dev/null
[ $? -eq 2 ] || fail "roofline.py: a missing limits file is not exit status 2"

# side_by_side.py against PyTorch results of the same run: slower (exit 0), faster
# (exit 1), another shape (exit 2).
torch_json() {  # FACTOR PROMPT_DELTA OUT: a torch_eager.py result at FACTOR x DayZero's times
  "$py" - "$work/m.json" "$1" "$2" "$3" <<'PY'
import json, sys
m, k, d, out = json.load(open(sys.argv[1])), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
json.dump({"batch": len(m["prompts"]), "prompt_len": len(m["prompts"][0]) + d, "decode_steps": len(m["decode_step_s"]),
           "torch": "test", "dtype": "fp32", "attention": "sdpa", "device": "cpu",
           "prefill_s": k * m["prefill_s"], "first_prefill_s": 2 * k * m["prefill_s"],
           "decode_step_mean_s": k * m["decode_step_mean_s"], "first_decode_step_mean_s": 2 * k * m["decode_step_mean_s"],
           "tokens_agreeing": 8, "tokens_compared": 8}, open(out, "w"))
PY
}
torch_json 10 0 "$work/slow.json" && torch_json 0.1 0 "$work/fast.json" && torch_json 1 1 "$work/other.json" ||
  fail "writing the PyTorch results"
out=$("$py" "$root/tests/gpu/side_by_side.py" "$work/m.json" "$work/slow.json")
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || fail "side_by_side.py: exit status $rc when DayZero is faster, not 0"
echo "$out" | grep -q "^decode step .* 10.00x$" || fail "side_by_side.py: no decode row at 10x"
"$py" "$root/tests/gpu/side_by_side.py" "$work/m.json" "$work/fast.json" >/dev/null
[ $? -eq 1 ] || fail "side_by_side.py: DayZero slower is not exit status 1"
"$py" "$root/tests/gpu/side_by_side.py" "$work/m.json" "$work/other.json" 2>/dev/null
[ $? -eq 2 ] || fail "side_by_side.py: another shape is not exit status 2"

# torch_eager.py: exit status 2 (a skip) where torch or a GPU is missing.
if ! "$py" -c "import torch, transformers; assert torch.cuda.is_available()" 2>/dev/null; then
  "$py" "$root/tests/gpu/torch_eager.py" "$work/m.json" --out "$work/t.json" 2>/dev/null
  [ $? -eq 2 ] || fail "torch_eager.py: no torch or GPU is not exit status 2"
fi
echo "PASS: roofline.py, side_by_side.py and torch_eager.py read a real run and exit as documented"
