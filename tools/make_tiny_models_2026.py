#!/usr/bin/env python3
"""Tiny random-weight models and golden outputs for the 2026 families (Qwen3.5-MoE, GLM-5,
MiniMax-M2, Kimi-K2.5).

The companion of `make_tiny_models.py` (same prompt, decode protocol, checks, golden files and
format; its helpers are imported, not copied) for the families that transformers 4.57 does not
have, or whose checkpoint format it does not load. It needs a transformers 5.x release and
compressed-tensors, pinned in `tools/requirements-goldens-2026.txt`:

- `qwen3_5_moe` (Qwen3.5-397B-A17B style): `Qwen3_5MoeForCausalLM` with a
  `Qwen3_5MoeTextConfig`: gated delta-net linear attention on layers 0-2, gated full attention
  on layer 3, every layer MoE with a gated shared expert.
- `glm_moe_dsa` (GLM-5 style): `GlmMoeDsaForCausalLM`: MLA plus the DeepSeek-sparse-attention
  indexer (top-4 of the keys), layer 0 dense, layers 1-2 MoE with DeepSeek-V3 routing.
- `minimax_m2` (MiniMax-M2 / M2.5 style): `MiniMaxM2ForCausalLM`: GQA whose q_norm / k_norm
  are one RMSNorm over all heads of the layer (`qk_norm_type: per_layer`), rotary on the first
  half of each head (`rotary_dim`), every layer MoE with sigmoid scores and a selection-only
  `e_score_correction_bias`, Mixtral's `block_sparse_moe` names.
- `kimi_k2_5` (Kimi-K2.5 style): the text model of `KimiK25ForConditionalGeneration`, a
  DeepSeek-V3 (`DeepseekV3ForCausalLM`: MLA, yarn, layer 0 dense, layers 1-2 MoE with
  noaux_tc routing in one group, a shared expert) whose routed experts are compressed-tensors
  `pack-quantized` INT4 (symmetric, group 32), quantized and packed by compressed-tensors itself.

What differs from `make_tiny_models.py`:

1. transformers 5 is asked for eager attention *and* eager experts (`experts_implementation`,
   its default is grouped_mm); the gated delta-net uses its pure-torch fallbacks
   (`torch_chunk_gated_delta_rule` for prefill, `torch_recurrent_gated_delta_rule` for decode,
   `torch_causal_conv1d_update`), since neither `fla` nor `causal_conv1d` is installed; the
   script checks which functions ran.
2. Initialisation (`init_tensor_2026`): Qwen3.5's RMSNorms are zero-centred (`(1 + w)·x̂`), so
   their weights are drawn 0.2·N(0,1) (effective gain 1 + 0.2·N); the gated RMSNorm of the
   delta-net multiplies by `w` and keeps 1 + 0.2·N; `A_log` ~ U(-3, 0) (decay rates
   A = e^A_log in [0.05, 1]); conv1d N(0,1)/sqrt(kernel); fused experts [E, out, in]
   N(0,1)/sqrt(in). Everything else follows `init_tensor`.
3. Checkpoint layout as published. transformers 5.13's `save_pretrained` writes routed experts
   one by one (`mlp.experts.{e}.{gate,up,down}_proj.weight`, reversing its load-time fusion),
   which is what GLM-5's checkpoints use; Qwen3.5's checkpoints store each decoder layer's
   experts fused, so they are rewritten as `mlp.experts.gate_up_proj` [E, 2I, H] and
   `mlp.experts.down_proj` [E, H, I] (`fuse_experts`). Either way the directory is reloaded with
   `from_pretrained` and checked bit-identical. MiniMax-M2's conversion mapping (Mixtral's plus
   `block_sparse_moe.e_score_correction_bias`) writes the published
   `block_sparse_moe.experts.{e}.w1/w2/w3.weight` as is. Text-model names carry the `model.`
   prefix (no `model.language_model.`). config.json drops the keys transformers 5 derives and the
   published configs do not carry (GLM: `layer_types`, `mlp_layer_types`, `indexer_types`),
   after checking that the reload derives them again.
4. Extra checks: GLM's indexer choices are recomputed in float64 and must match, with a
   margin, and the indexer must change the logits; Qwen3.5's prefill must be independent of the
   delta-rule chunk size (the 12-token prompt fits in one 64-token chunk, so the multi-chunk
   path is checked with chunk size 4 instead, not stored). MiniMax-M2: the correction bias must
   change some token's experts, and the logits must move when the q/k norms are taken per head
   instead of over the whole layer, and when RoPE turns all of head_dim instead of `rotary_dim`.
5. MiniMax-M2's partial RoPE: transformers 5.13 (up to 5.17) does not read the published
   `rotary_dim` key (huggingface/transformers#48241; fixed in 5.18.0 by #48486, which maps it
   to `partial_rotary_factor = rotary_dim / head_dim`): loaded as published, the model rotates
   all of head_dim. The tiny config therefore states both, `rotary_dim` (what MiniMax's config
   and parsers use) and `rope_parameters.partial_rotary_factor` = rotary_dim / head_dim (what
   5.13 reads), and the script checks that the model rotates exactly `rotary_dim` dims. The
   math is otherwise unchanged up to 5.24.0, which reproduces these goldens (within 1.5e-6)
   from the fixture with `rope_parameters` replaced by the published `rope_theta` + `rotary_dim`.

6. Kimi-K2.5 (`quantize_experts_int4`, `kimi_config_json`, `load_kimi_reference`): the float
   model is saved as the others, then compressed-tensors quantizes the routed experts the way
   llm-compressor does (its `apply_quantization_config` with Kimi-K2.5's published
   quantization_config picks exactly the routed experts through its targets and ignore list;
   min-max scales = group absmax / 7.5; `compress_module` writes `weight_packed` I32 [out, in/8],
   `weight_scale` [out, in/32] in the weight's dtype (F32 here), `weight_shape` I64 [2]).
   config.json becomes the published wrapper (model_type kimi_k25, the text model in
   `text_config` with model_type kimi_k2, rope_theta + rope_scaling, and `quantization_config`
   inside text_config, as published). transformers has no kimi_k25, so the reference is
   `DeepseekV3ForCausalLM.from_pretrained` on text_config (model_type deepseek_v3) and the
   fixture's weights: transformers 5.13 hands the quantization_config to compressed-tensors,
   which decompresses the experts ((nibble - 8) * scale, exact in float32). Checked: the
   library's decompression equals an independent decoder bit for bit, the loaded weights equal
   the float model's with the experts so dequantized, and running that float model without
   compressed-tensors gives the same prefill logits; reading the nibbles highest first, as two's
   complement, with one scale per row, or not quantizing at all must each move the logits.
   Weight names keep the `model.` prefix (the published checkpoint: `language_model.model.`).

Usage:  python3 tools/make_tiny_models_2026.py --out tests/fixtures/tiny [--family NAME ...]
Needs:  pip install -r tools/requirements-goldens-2026.txt   (see tools/README.md)
"""

# Code layout: this entry point (command line) and the package tools/tiny2026/ beside it, which
# imports the helpers of make_tiny_models.py:
#   families.py         the tiny configs, published expert layouts, derived / passed-through keys
#   weights.py          init_tensor_2026, reinit_model_2026; fusing / splitting routed experts
#   probes.py           RouterProbe2026, IndexerProbe (GLM-5), DeltaRuleCounter (Qwen3.5)
#   checks.py           the common checks, GLM-5's indexer, Qwen3.5's delta rule, MiniMax-M2
#   kimi_int4.py        Kimi-K2.5's quantization_config, quantize_experts_int4, the INT4 decoder
#   kimi_checkpoint.py  Kimi-K2.5's config.json wrapper, names, reference load and checks
#   goldens.py          golden.safetensors and golden.json
#   build.py            build_family: model, checkpoint, reload, checks, goldens

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_tiny_models import FAMILIES as FAMILIES_2025  # noqa: E402  (the 2024-2025 families' script, same directory)
from tiny2026.build import build_family  # noqa: E402
from tiny2026.families import FAMILIES  # noqa: E402
# golden.json's "weights" names these as functions of this script: re-exported from the package.
from tiny2026.kimi_int4 import quantize_experts_int4  # noqa: E402,F401
from tiny2026.weights import init_tensor_2026  # noqa: E402,F401

TRANSFORMERS_VERSION = "5.13.0"  # see tools/requirements-goldens-2026.txt for why this release


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="output root, e.g. tests/fixtures/tiny")
    ap.add_argument("--family", action="append", choices=[f.name for f in FAMILIES],
                    help="only these families (repeatable); default all")
    args = ap.parse_args(argv)

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    transformers.logging.set_verbosity_error()
    if transformers.__version__ != TRANSFORMERS_VERSION:
        print(f"warning: transformers {transformers.__version__}; the fixtures were made with "
              f"{TRANSFORMERS_VERSION} (tools/requirements-goldens-2026.txt)", file=sys.stderr)

    for i, fam in enumerate(FAMILIES):
        if args.family and fam.name not in args.family:
            continue
        # seeds continue after the families of make_tiny_models.py
        g = build_family(fam, len(FAMILIES_2025) + i, args.out)
        s = g["stats"]
        print(f"{fam.name:12s} tokens={g['generated_tokens']} max|logit|={s['max_abs_logit']:.2f} "
              f"fp32-fp64={max(s['max_abs_diff_fp32_vs_fp64_prefill'], s['max_abs_diff_fp32_vs_fp64_decode']):.2e} "
              f"gap={s['min_greedy_top1_top2_gap']:.3f} router_margin={s['min_router_margin']:.4f}"
              + (f" indexer_margin={s['min_indexer_topk_margin']:.4f}" if "min_indexer_topk_margin" in s else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
