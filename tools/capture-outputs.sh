#!/usr/bin/env bash
# tools/capture-outputs.sh BUILD OUTDIR: the deterministic outputs of plan (every bundled
# scenario, text and JSON), simulate (the shipped plans), run (the six tiny fixtures on one rank,
# three at TP 2 over two MPI ranks: tokens, memory, ops and collectives without their timings),
# inspect and topo, one file each. Run it on two builds and `diff -r` the folders to show that
# a refactor changes no figure. Needs python3 (JSON digests) and mpirun.
set -u
B=$(realpath "$1"); mkdir -p "$2"; O=$(realpath "$2")
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for s in scenarios/*.json; do n=$(basename $s .json)
  $B/dayzero plan $s > $O/plan-$n.txt 2>/dev/null; echo "exit $?" >> $O/plan-$n.txt
  $B/dayzero plan $s --json > $O/plan-$n.json 2>/dev/null
done
$B/dayzero simulate --model DeepSeek-V3 --cluster h200-2x8 --plan scenarios/plans/deepseek-v3-h200-2x8-ep16.json > $O/sim1.txt 2>&1
$B/dayzero simulate --model DeepSeek-V3 --cluster h200-2x8 --plan scenarios/plans/deepseek-v3-h200-2x8-ep16-bf16.json --json > $O/sim2.json 2>&1
$B/dayzero simulate --model Llama-3.1-8B --cluster h100x1 --plan scenarios/plans/llama-3.1-8b-h100-tp1.json > $O/sim3.txt 2>&1
for f in llama qwen3 mixtral qwen3_moe deepseek_v3 gpt_oss; do
  $B/dayzero run --weights tests/fixtures/tiny/$f --prompt-len 12 --decode-steps 4 --batch 2 --out $tmp/m-$f.json > /dev/null 2>&1
  python3 -c "import json,sys; m=json.load(open('$tmp/m-$f.json')); print(m['tokens']); r=m['ranks'][0]['memory']; print(r['weights_bytes'], r['kv_bytes'], r['workspace_bytes']); print(sorted(set((o['name'],o['kind'],o['variant'],tuple(o['shape']),o['calls'],o['flops'],o['bytes']) for o in m['ops'])))" > $O/run-$f.txt
done
for f in llama deepseek_v3 mixtral; do
  mpirun --allow-run-as-root --oversubscribe -np 2 $B/dayzero run --weights tests/fixtures/tiny/$f --tp 2 --prompt-len 9 --decode-steps 3 --out $tmp/m2-$f.json > /dev/null 2>&1
  python3 -c "import json,sys; m=json.load(open('$tmp/m2-$f.json')); print(m['tokens']); print([ (r['memory']['weights_bytes'], r['memory']['kv_bytes']) for r in m['ranks']]); print(sorted(set((o['rank'],o['name'],o['variant'],tuple(o['shape']),o['calls'],o['flops'],o['bytes']) for o in m['ops']))); print(sorted(set((c['rank'],c['collective'],c['ranks'],c['size_bytes'],c['calls']) for c in m['collectives'])))" > $O/run2-$f.txt
done
for m in DeepSeek-V3 gpt-oss-20b Qwen3-30B-A3B Llama-3.1-70B; do $B/dayzero inspect $m --json > $O/inspect-$m.json 2>&1; done
$B/dayzero topo h200-2x8 > $O/topo.txt 2>&1
