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

from __future__ import annotations

import argparse
import copy
import functools
import json
import math
import shutil
import sys
import types
from pathlib import Path
from typing import Any

import torch

import safetensors.torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_tiny_models import (  # noqa: E402  (the 2024-2025 families' script, same directory)
    DECODE_STEPS,
    FAMILIES as FAMILIES_2025,
    GOLDEN_FORMAT_VERSION,
    HIDDEN,
    MIN_ARGMAX_GAP,
    MIN_DISTINCT_GENERATED,
    MIN_ROUTER_MARGIN,
    PROMPT_LEN,
    PROMPT_SEED,
    VOCAB,
    WEIGHT_SEED,
    Family,
    RouterProbe,
    _topk_margin,
    argmax_gaps,
    float64_reference,
    generate_tokens,
    init_tensor,
    make_prompt,
    run_greedy,
    sha256,
    tensor_table,
    uncached_logits,
    versions,
)

COMMAND = "python3 tools/make_tiny_models_2026.py --out tests/fixtures/tiny"
TRANSFORMERS_VERSION = "5.13.0"  # see tools/requirements-goldens-2026.txt for why this release
MIN_INDEXER_MARGIN = 1e-4  # like MIN_ROUTER_MARGIN: index scores are ~1, fp32 error ~1e-6
MIN_INDEXER_EFFECT = 1e-2  # keeping every key instead of the top-k must move the logits


FAMILIES: list[Family] = [
    Family(
        name="qwen3_5_moe",
        model_class="Qwen3_5MoeForCausalLM",
        config=dict(
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            num_hidden_layers=4,
            # as Qwen3_5MoeTextConfig derives it from full_attention_interval 4 (published: listed)
            layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"],
            full_attention_interval=4,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=32,  # != hidden / heads = 16
            attn_output_gate=True,  # published key; transformers always gates
            linear_conv_kernel_dim=4,
            linear_key_head_dim=16,
            linear_value_head_dim=16,
            linear_num_key_heads=2,
            linear_num_value_heads=4,  # 2 value heads per key head
            num_experts=8,
            num_experts_per_tok=2,
            moe_intermediate_size=32,
            shared_expert_intermediate_size=32,
            mlp_only_layers=[],
            max_position_embeddings=512,
            rms_norm_eps=1e-6,
            # Published: mrope_section [11, 11, 10] for 64 rotary dims (head_dim 256 x 0.25);
            # here 32 x 0.25 = 8 rotary dims = 4 frequencies = 2 + 1 + 1. With text-only
            # positions (t = h = w) the multimodal sections do not change the result.
            # theta 1e4 rather than the published 1e7 so that 3 of the 4 frequencies turn
            # noticeably over 16 positions.
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "partial_rotary_factor": 0.25,
                "mrope_interleaved": True,
                "mrope_section": [2, 1, 1],
            },
            attention_bias=False,
            tie_word_embeddings=False,
            bos_token_id=1,
            eos_token_id=2,
            # Published keys transformers does not read: passed through for parsers.
            mtp_num_hidden_layers=0,  # no MTP tensors (transformers has no MTP module)
            mtp_use_dedicated_embeddings=False,
            mamba_ssm_dtype="float32",
        ),
        notes=[
            "hybrid: gated delta-net (linear attention) on layers 0-2, full attention on layer 3",
            "linear attention: 2 key heads, 4 value heads (each key head serves 2 value heads), head dims 16, conv kernel 4",
            "prefill runs the chunked delta rule (one 64-token chunk: the 12-token prompt is shorter), decode the recurrent rule",
            "full attention: output gate (q_proj emits query and gate per head), q/k norms, partial rotary (8 of 32 dims)",
            "zero-centred RMSNorms ((1 + w) * x_hat); the delta-net's gated RMSNorm uses w * x_hat * silu(z)",
            "every layer MoE: 8 experts top-2 (softmax, top-2 renormalised) plus a shared expert with a sigmoid gate",
            "experts fused as published: mlp.experts.gate_up_proj [E, 2I, H], mlp.experts.down_proj [E, H, I]",
        ],
    ),
    Family(
        name="glm_moe_dsa",
        model_class="GlmMoeDsaForCausalLM",
        config=dict(
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            intermediate_size=128,  # the dense layer 0
            moe_intermediate_size=32,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=4,
            q_lora_rank=48,
            kv_lora_rank=32,
            qk_nope_head_dim=32,
            qk_rope_head_dim=16,
            v_head_dim=24,
            first_k_dense_replace=1,  # layer 0 dense, layers 1-2 MoE
            n_routed_experts=8,
            num_experts_per_tok=2,
            n_group=4,  # DeepSeek-V3 style grouping (published GLM-5: n_group = topk_group = 1)
            topk_group=2,
            n_shared_experts=1,
            routed_scaling_factor=2.5,
            norm_topk_prob=True,
            index_n_heads=8,  # with 2 or 4 heads ReLU zeroes whole keys: ties at the top-k boundary
            index_head_dim=32,
            index_topk=4,  # < the 12-token prompt: rows 4.. drop keys
            max_position_embeddings=1024,
            rms_norm_eps=1e-5,
            rope_parameters={"rope_theta": 10000.0, "rope_type": "default"},
            rope_interleave=True,
            indexer_rope_interleave=True,
            attention_bias=False,
            tie_word_embeddings=False,
            bos_token_id=0,
            eos_token_id=1,
            # Published keys transformers does not read: passed through for parsers.
            num_nextn_predict_layers=0,
            scoring_func="sigmoid",
            topk_method="noaux_tc",
            moe_layer_freq=1,
        ),
        notes=[
            "MLA (q_lora 48, kv_lora 32, qk_nope 32, qk_rope 16, v 24) with interleaved RoPE on the rope dims",
            "DSA indexer: 8 heads of dim 32 (first 16 dims roped, interleaved), LayerNorm on its key, ReLU scores, top-4 keys per query",
            "first_k_dense_replace 1: layer 0 dense, layers 1-2 MoE",
            "sigmoid routing, noaux_tc grouped top-k (n_group 4, topk_group 2) with a non-zero e_score_correction_bias",
            "experts saved one by one as published (mlp.experts.{e}.{gate,up,down}_proj.weight)",
            "num_nextn_predict_layers 0: no MTP tensors",
        ],
    ),
    Family(
        name="minimax_m2",
        model_class="MiniMaxM2ForCausalLM",
        config=dict(
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            intermediate_size=32,  # each routed expert's width (MiniMax: no dense layer, no shared expert)
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=32,  # heads x head_dim = 128 = 2 x hidden, as published (48 x 128 = 2 x 3072)
            num_local_experts=8,
            num_experts_per_tok=2,
            max_position_embeddings=512,
            rms_norm_eps=1e-6,
            # Published: rope_theta 5e6 at the top level and rotary_dim 64 of head_dim 128, which
            # transformers 5.13 does not read (see the module docstring, point 5). Here 16 of 32
            # dims (the same half), stated twice; theta 1e4 rather than 5e6 so that several of the
            # 8 frequencies turn noticeably over 16 positions.
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
            rotary_dim=16,
            tie_word_embeddings=False,
            bos_token_id=1,
            eos_token_id=2,
            # Published keys transformers does not read (hard-wired: whole-layer q/k norms, sigmoid
            # scores, the correction bias, no shared expert, no MTP): passed through for parsers.
            use_qk_norm=True,
            qk_norm_type="per_layer",
            scoring_func="sigmoid",
            use_routing_bias=True,
            shared_intermediate_size=0,
            # Published: use_mtp true, num_mtp_modules 3, mtp_transformer_layers 1, but no MTP
            # tensors in the checkpoint (transformers has no MTP module either): none here.
            use_mtp=False,
            num_mtp_modules=0,
            mtp_transformer_layers=1,
        ),
        notes=[
            "GQA 4 heads / 2 kv heads, head_dim 32 (heads x head_dim = 128 = 2 x hidden)",
            "q_norm / k_norm: one RMSNorm over all heads of the layer (weights [4*32], [2*32]; qk_norm_type per_layer), before RoPE",
            "partial RoPE: rotate-half on the first 16 of 32 dims of each head (rotary_dim 16 = partial_rotary_factor 0.5), theta 1e4",
            "every layer MoE: 8 experts top-2, sigmoid scores; e_score_correction_bias (non-zero) for the choice only; weights = unbiased scores renormalised, no scaling factor",
            "Mixtral naming: block_sparse_moe.gate.weight, block_sparse_moe.e_score_correction_bias, block_sparse_moe.experts.{e}.w1/w2/w3.weight",
            "no shared expert, no MTP tensors (use_mtp false, num_mtp_modules 0); float32, no quantization_config",
        ],
    ),
    Family(
        name="kimi_k2_5",
        model_class="DeepseekV3ForCausalLM",  # the text model of KimiK25ForConditionalGeneration
        config=dict(
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            intermediate_size=128,  # the dense layer 0
            # A multiple of the INT4 group (32): gate/up rows (64 inputs) have 2 groups, down_proj
            # rows (32 inputs) 1. (64 gave a routing decision with a margin of 1.06e-4, just above
            # MIN_ROUTER_MARGIN; 32 gives 0.010.)
            moe_intermediate_size=32,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=4,
            q_lora_rank=48,
            kv_lora_rank=32,
            qk_nope_head_dim=32,
            qk_rope_head_dim=16,
            v_head_dim=24,
            first_k_dense_replace=1,  # layer 0 dense, layers 1-2 MoE
            n_routed_experts=8,
            num_experts_per_tok=2,
            n_group=1,  # as published (no group restriction; deepseek_v3 covers groups)
            topk_group=1,
            n_shared_experts=1,
            routed_scaling_factor=2.827,  # as published
            norm_topk_prob=True,
            max_position_embeddings=2048,  # factor x original, as published (64 x 4096 = 262144)
            rms_norm_eps=1e-5,
            # Published: rope_theta 5e4, yarn factor 64 over original 4096, mscale = mscale_all_dim
            # = 1, beta 32 / 1. Here original 32 so that yarn's ramp falls inside the 8
            # frequencies: frequency 0 kept, 1 divided by 1.97, 2-7 by 64.
            rope_theta=50000.0,
            rope_scaling={
                "beta_fast": 32.0,
                "beta_slow": 1.0,
                "factor": 64.0,
                "mscale": 1.0,
                "mscale_all_dim": 1.0,
                "original_max_position_embeddings": 32,
                "type": "yarn",
            },
            attention_bias=False,
            tie_word_embeddings=False,
            bos_token_id=0,
            eos_token_id=1,
            # Published keys transformers does not read: passed through for parsers.
            num_nextn_predict_layers=0,
            scoring_func="sigmoid",
            topk_method="noaux_tc",
            moe_layer_freq=1,
        ),
        notes=[
            "Kimi-K2.5 layout: config.json is the KimiK25ForConditionalGeneration wrapper (model_type kimi_k25), the text model in text_config (model_type kimi_k2, DeepSeek-V3 fields, quantization_config inside it as published); text weights only, named model.* (published: language_model.model.*)",
            "MLA (q_lora 48, kv_lora 32, qk_nope 32, qk_rope 16, v 24), interleaved RoPE, yarn (theta 5e4, factor 64, original 32, mscale = mscale_all_dim = 1)",
            "first_k_dense_replace 1: layer 0 dense, layers 1-2 MoE; 8 routed experts (moe_intermediate 32) top-2, sigmoid + noaux_tc with a non-zero correction bias, n_group = topk_group = 1, routed_scaling_factor 2.827, 1 shared expert",
            "routed experts compressed-tensors pack-quantized INT4 (symmetric, group 32, written by compressed-tensors itself): mlp.experts.{e}.{gate,up,down}_proj.weight_packed I32 [out, in/8], weight_scale F32 [out, in/32], weight_shape I64 [2]; everything else F32",
            "goldens from the checkpoint as loaded by transformers + compressed-tensors (experts dequantized: (nibble - 8) * scale, exact in float32)",
        ],
    ),
]

# Config keys transformers 5 adds that the published config.json does not carry; they are
# re-derived identically on load (checked).
DERIVED_KEYS = {
    "qwen3_5_moe": [],
    "glm_moe_dsa": ["layer_types", "mlp_layer_types", "indexer_types"],
    "minimax_m2": [],
    "kimi_k2_5": [],  # its config.json is written by kimi_config_json
}
PASSTHROUGH_KEYS = [
    "num_nextn_predict_layers", "scoring_func", "topk_method", "moe_layer_freq", "indexer_rope_interleave",
    "rope_interleave", "first_k_dense_replace", "attn_output_gate", "mtp_num_hidden_layers",
    "mtp_use_dedicated_embeddings", "mamba_ssm_dtype", "full_attention_interval", "mlp_only_layers",
    "rotary_dim", "use_qk_norm", "qk_norm_type", "use_routing_bias", "shared_intermediate_size", "use_mtp",
    "num_mtp_modules", "mtp_transformer_layers",
]
MIN_NORM_EFFECT = 1e-2  # MiniMax-M2: per-head q/k norms or full-width RoPE instead must move the logits


# --------------------------------------------------------------------------------------------
# Weights
# --------------------------------------------------------------------------------------------


def zero_centred_norm_params(model: torch.nn.Module) -> set[str]:
    """Names of the weights of norms computing (1 + w) * x_hat (Qwen3.5's Qwen3_5MoeRMSNorm)."""
    return {
        f"{name}.weight" if name else "weight"
        for name, mod in model.named_modules()
        if type(mod).__name__ == "Qwen3_5MoeRMSNorm"
    }


def init_tensor_2026(name: str, shape: torch.Size, gen: torch.Generator, fam: Family, zero_centred: bool) -> torch.Tensor:
    """`init_tensor` plus the tensors the 2026 families add (see the module docstring)."""
    def randn() -> torch.Tensor:
        return torch.randn(shape, generator=gen, dtype=torch.float32)

    if zero_centred:
        return 0.2 * randn()
    if name.endswith("linear_attn.A_log"):
        return torch.rand(shape, generator=gen, dtype=torch.float32) * 3.0 - 3.0
    if name.endswith("conv1d.weight"):  # [channels, 1, kernel], depthwise
        return randn() / math.sqrt(shape[-1])
    if name.endswith("mlp.experts.gate_up_proj") or name.endswith("mlp.experts.down_proj"):  # [E, out, in]
        return randn() / math.sqrt(shape[-1])
    return init_tensor(name, shape, gen, fam)


def reinit_model_2026(model: torch.nn.Module, fam: Family, seed: int) -> None:
    """Overwrite every tensor of the state dict, in sorted name order, from one generator."""
    gen = torch.Generator().manual_seed(seed)
    zc = zero_centred_norm_params(model)
    sd = model.state_dict()
    with torch.no_grad():
        for name in sorted(sd):
            t = sd[name]
            if not t.is_floating_point():
                raise ValueError(f"unexpected non-float tensor {name}")
            t.copy_(init_tensor_2026(name, t.shape, gen, fam, name in zc))


def expert_layout(path: Path) -> str:
    """"fused", "per_expert", "block_sparse_moe" or "none": how a saved checkpoint names the
    routed experts (`block_sparse_moe`: Mixtral's `block_sparse_moe.experts.{e}.w1/w2/w3.weight`)."""
    names = tensor_table(path)
    fused = any(n.endswith("mlp.experts.gate_up_proj") for n in names)
    per = any(n.endswith(".gate_proj.weight") and ".mlp.experts." in n for n in names)
    w123 = any(".block_sparse_moe.experts." in n and n.endswith(".w1.weight") for n in names)
    assert fused + per + w123 <= 1, "several expert layouts in one file"
    return "fused" if fused else "per_expert" if per else "block_sparse_moe" if w123 else "none"


def fuse_experts(path: Path, num_experts: int) -> None:
    """Rewrite `mlp.experts.{e}.{gate,up,down}_proj.weight` as Qwen3.5's published fused tensors
    `mlp.experts.gate_up_proj` [E, 2I, H] (gate rows 0..I-1, up rows I..2I-1, per expert) and
    `mlp.experts.down_proj` [E, H, I]: the layout of transformers' parameters, used as
    `gate, up = (x @ gate_up_proj[e].T).chunk(2)`, `out = (silu(gate) * up) @ down_proj[e].T`."""
    sd = safetensors.torch.load_file(str(path))
    out: dict[str, torch.Tensor] = {}
    prefixes = sorted({n[: n.index(".mlp.experts.") + len(".mlp.experts.")] for n in sd if ".mlp.experts." in n})
    for name, t in sd.items():
        if ".mlp.experts." not in name:
            out[name] = t
    for p in prefixes:
        gate = [sd.pop(f"{p}{e}.gate_proj.weight") for e in range(num_experts)]
        up = [sd.pop(f"{p}{e}.up_proj.weight") for e in range(num_experts)]
        down = [sd.pop(f"{p}{e}.down_proj.weight") for e in range(num_experts)]
        out[f"{p}gate_up_proj"] = torch.stack([torch.cat([g, u], dim=0) for g, u in zip(gate, up)]).contiguous()
        out[f"{p}down_proj"] = torch.stack(down).contiguous()
    left = [n for n in sd if ".mlp.experts." in n]
    assert not left, left
    safetensors.torch.save_file(dict(sorted(out.items())), str(path), metadata={"format": "pt"})


def split_experts(path: Path, num_experts: int, inter: int) -> None:
    """The inverse of `fuse_experts`: fused tensors to GLM-5's published per-expert names
    `mlp.experts.{e}.gate_proj.weight` [I, H], `up_proj.weight` [I, H], `down_proj.weight` [H, I]."""
    sd = safetensors.torch.load_file(str(path))
    out: dict[str, torch.Tensor] = {}
    for name, t in sd.items():
        if name.endswith("mlp.experts.gate_up_proj"):
            p = name[: -len("gate_up_proj")]
            assert t.shape[0] == num_experts and t.shape[1] == 2 * inter, (name, t.shape)
            for e in range(num_experts):
                out[f"{p}{e}.gate_proj.weight"] = t[e, :inter].clone().contiguous()
                out[f"{p}{e}.up_proj.weight"] = t[e, inter:].clone().contiguous()
        elif name.endswith("mlp.experts.down_proj"):
            p = name[: -len("down_proj")]
            for e in range(num_experts):
                out[f"{p}{e}.down_proj.weight"] = t[e].clone().contiguous()
        else:
            out[name] = t
    safetensors.torch.save_file(dict(sorted(out.items())), str(path), metadata={"format": "pt"})


# Published checkpoints: Qwen3.5 stores each decoder layer's experts fused, GLM-5 one by one,
# MiniMax-M2 one by one under Mixtral's names.
PUBLISHED_EXPERT_LAYOUT = {
    "qwen3_5_moe": "fused",
    "glm_moe_dsa": "per_expert",
    "minimax_m2": "block_sparse_moe",
    "kimi_k2_5": "per_expert",  # before quantize_experts_int4 replaces each `.weight` by its packed triple
}


# --------------------------------------------------------------------------------------------
# Probes
# --------------------------------------------------------------------------------------------


class RouterProbe2026(RouterProbe):
    """`RouterProbe` for the routers of the 2026 families (same margins, same float64 recompute)."""

    def __init__(self, model: torch.nn.Module, family: str):
        super().__init__(model, family)
        for name, mod in model.named_modules():
            cls = type(mod).__name__
            if cls == "Qwen3_5MoeTopKRouter":
                self.handles.append(mod.register_forward_hook(self._qwen3_5))
            elif cls == "GlmMoeDsaTopkRouter":
                self.handles.append(mod.register_forward_hook(self._glm))
            elif cls == "MiniMaxM2TopKRouter":
                self.handles.append(mod.register_forward_hook(self._minimax))

    def _qwen3_5(self, mod, inputs, output):
        x = inputs[0].reshape(-1, mod.hidden_dim).double()
        logits = x @ mod.weight.double().T
        self._note(_topk_margin(logits, mod.top_k), x.shape[0])  # softmax is monotonic
        chosen = output[2].sort(dim=-1).values
        assert torch.equal(chosen, logits.topk(mod.top_k, dim=-1).indices.sort(dim=-1).values), "qwen3.5 routing"

    def _deepseek(self, mod, inputs, output):
        """transformers 5's `DeepseekV3TopkRouter` (Kimi-K2.5's text model): with groups, the
        recompute of `RouterProbe._deepseek` (whose attribute names are 4.x's); with one group
        (Kimi) the margin of the top-k of the biased scores, and the choice and weights must
        equal transformers'."""
        if hasattr(mod, "n_routed_experts"):
            return super()._deepseek(mod, inputs, output)
        view = types.SimpleNamespace(
            config=types.SimpleNamespace(hidden_size=mod.hidden_dim),
            weight=mod.weight,
            e_score_correction_bias=mod.e_score_correction_bias,
            n_routed_experts=mod.num_experts,
            n_group=mod.num_group,
            topk_group=mod.topk_group,
            top_k=mod.top_k,
        )
        if mod.num_group > 1:
            return super()._deepseek(view, inputs, output)
        # One group (Kimi): no group choice, so no group margin; the top-k of scores + bias.
        x = inputs[0].reshape(-1, mod.hidden_dim).double()
        scores = torch.sigmoid(x @ mod.weight.double().T)
        biased = scores + mod.e_score_correction_bias.double()
        self._note(_topk_margin(biased, mod.top_k), x.shape[0])
        chosen = biased.topk(mod.top_k, dim=-1).indices.sort(dim=-1).values
        assert torch.equal(chosen, output[2].sort(dim=-1).values), "deepseek routing"
        no_bias = scores.topk(mod.top_k, dim=-1).indices.sort(dim=-1).values
        self.bias_changed += int((chosen != no_bias).any(-1).sum())
        w = scores.gather(1, output[2])
        w = w / w.sum(-1, keepdim=True) * mod.routed_scaling_factor
        assert float((output[1].double() - w).abs().max()) < 1e-5, "deepseek routing weights"

    def _glm(self, mod, inputs, output):
        # DeepSeek-V3's grouped noaux_tc routing, as RouterProbe._deepseek recomputes it.
        view = types.SimpleNamespace(
            config=types.SimpleNamespace(hidden_size=mod.hidden_dim),
            weight=mod.weight,
            e_score_correction_bias=mod.e_score_correction_bias,
            n_routed_experts=mod.num_experts,
            n_group=mod.num_group,
            topk_group=mod.topk_group,
            top_k=mod.top_k,
        )
        self._deepseek(view, inputs, output)

    def _minimax(self, mod, inputs, output):
        # sigmoid scores; the choice is the top-k of scores + bias, the weights the chosen
        # unbiased scores over their sum (no scaling factor, no groups).
        hidden, bias = inputs[0], inputs[1]
        x = hidden.reshape(-1, mod.hidden_dim).double()
        scores = torch.sigmoid(x @ mod.weight.double().T)
        biased = scores + bias.double()
        self._note(_topk_margin(biased, mod.top_k), x.shape[0])
        chosen = biased.topk(mod.top_k, dim=-1).indices.sort(dim=-1).values
        got = output[2].sort(dim=-1).values
        assert torch.equal(chosen, got), "minimax routing"
        no_bias = scores.topk(mod.top_k, dim=-1).indices.sort(dim=-1).values
        self.bias_changed += int((chosen != no_bias).any(-1).sum())
        w = scores.gather(1, output[2]) / scores.gather(1, output[2]).sum(-1, keepdim=True)
        assert float((output[1].double() - w).abs().max()) < 1e-6, "minimax routing weights"

    def summary(self) -> dict[str, Any]:
        out = super().summary()
        if self.family in ("glm_moe_dsa", "minimax_m2", "kimi_k2_5"):
            out["tokens_whose_experts_the_correction_bias_changes"] = self.bias_changed
        return out


class IndexerProbe:
    """Recomputes GLM-5's indexer in float64 (the math of tools/README.md) from the module's
    inputs and weights, keeping its own key cache, and checks that it selects the same keys as
    transformers, with a margin between the last kept and the first dropped key."""

    def __init__(self, model: torch.nn.Module):
        from transformers.models.glm_moe_dsa.modeling_glm_moe_dsa import apply_rotary_pos_emb_interleave

        self.rope = apply_rotary_pos_emb_interleave
        self.keys: dict[int, torch.Tensor] = {}
        self.min_margin = float("inf")
        self.rows = 0
        self.rows_dropping = 0
        self.handles = [
            mod.register_forward_hook(self._hook, with_kwargs=True)
            for mod in model.modules()
            if type(mod).__name__ == "GlmMoeDsaIndexer"
        ]

    def close(self) -> None:
        for h in self.handles:
            h.remove()

    def _hook(self, mod, args, kwargs, output):
        hidden, q_resid, (cos, sin), _mask, position_ids = args[:5]
        cached = kwargs.get("past_key_values") is not None
        d = torch.float64
        B, S, _ = hidden.shape
        q = (q_resid.to(d) @ mod.wq_b.weight.to(d).T).view(B, S, mod.n_heads, mod.head_dim)
        k = torch.nn.functional.layer_norm(
            hidden.to(d) @ mod.wk.weight.to(d).T, (mod.head_dim,), mod.k_norm.weight.to(d), mod.k_norm.bias.to(d), 1e-6
        ).unsqueeze(2)
        r = mod.qk_rope_head_dim
        q_rot, k_rot = self.rope(q[..., :r], k[..., :r], cos.to(d), sin.to(d), unsqueeze_dim=2)
        q = torch.cat([q_rot, q[..., r:]], -1)
        k = torch.cat([k_rot, k[..., r:]], -1).squeeze(2)  # [B, S, D]
        if cached and S == 1:
            k = torch.cat([self.keys[mod.layer_idx], k], dim=1)
        if cached:
            self.keys[mod.layer_idx] = k
        scores = torch.relu(torch.einsum("bshd,btd->bsht", q, k) * mod.head_dim**-0.5)
        w = (hidden.to(d) @ mod.weights_proj.weight.to(d).T) * mod.n_heads**-0.5  # [B, S, H]
        index = torch.einsum("bsht,bsh->bst", scores, w)
        T = index.shape[-1]
        causal = torch.arange(T)[None, None, :] > position_ids[:, :, None]
        index = index.masked_fill(causal, float("-inf"))
        topk = min(mod.index_topk, T)
        got = output.long()
        for b in range(B):
            for s in range(S):
                valid = int((~causal[b, s]).sum())
                self.rows += 1
                if valid <= topk:  # keeps every visible key; the rest of its top-k are masked
                    assert set(range(valid)) <= set(got[b, s].tolist()), "indexer lost a visible key"
                    continue
                self.rows_dropping += 1
                ref = index[b, s].topk(topk).indices
                assert sorted(ref.tolist()) == sorted(got[b, s].tolist()), (mod.layer_idx, s, ref, got[b, s])
                self.min_margin = min(self.min_margin, _topk_margin(index[b, s][None, :valid], topk))


class DeltaRuleCounter:
    """Counts which gated delta-rule functions the Qwen3.5 linear-attention layers call."""

    def __init__(self, model: torch.nn.Module):
        self.calls: list[tuple[str, int]] = []
        self.mods = [m for m in model.modules() if type(m).__name__ == "Qwen3_5MoeGatedDeltaNet"]
        for m in self.mods:
            m.chunk_gated_delta_rule = self._wrap("chunk", m.chunk_gated_delta_rule)
            m.recurrent_gated_delta_rule = self._wrap("recurrent", m.recurrent_gated_delta_rule)

    def _wrap(self, kind, fn):
        def call(query, *a, **k):
            self.calls.append((f"{kind}:{getattr(fn, '__name__', fn)}", query.shape[1]))
            return fn(query, *a, **k)
        call.inner = fn
        return call

    def close(self) -> None:
        for m in self.mods:
            m.chunk_gated_delta_rule = m.chunk_gated_delta_rule.inner
            m.recurrent_gated_delta_rule = m.recurrent_gated_delta_rule.inner


# --------------------------------------------------------------------------------------------
# MiniMax-M2
# --------------------------------------------------------------------------------------------


def per_head_rms_norm(norm: torch.nn.Module, head_dim: int):
    """A forward for a whole-layer `MiniMaxM2RMSNorm` that normalises each head separately
    (Qwen3's q/k norm convention, with the same [heads * head_dim] weight): the mistake the
    MiniMax-M2 fixture must be able to tell apart."""
    def forward(x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        h = x.to(torch.float32).view(*shape[:-1], -1, head_dim)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon)
        return norm.weight * h.view(shape).to(x.dtype)
    return forward


@torch.no_grad()
def minimax_checks(ref, config, seq: torch.Tensor) -> dict[str, float]:
    """RoPE turns exactly `rotary_dim` dims; per-head q/k norms or RoPE on all of head_dim
    instead would move the logits (uncached forward over prompt + generated tokens)."""
    rot = ref.model.rotary_emb
    assert 2 * rot.inv_freq.numel() == config.rotary_dim == int(config.head_dim * config.rope_parameters["partial_rotary_factor"]), (
        rot.inv_freq.shape, config.rotary_dim, config.rope_parameters)
    for layer in ref.model.layers:
        a = layer.self_attn
        assert a.q_norm.weight.shape == (config.num_attention_heads * config.head_dim,), a.q_norm.weight.shape
        assert a.k_norm.weight.shape == (config.num_key_value_heads * config.head_dim,), a.k_norm.weight.shape
    base = ref(input_ids=seq[None], use_cache=False).logits

    per_head = copy.deepcopy(ref)
    for layer in per_head.model.layers:
        a = layer.self_attn
        a.q_norm.forward = per_head_rms_norm(a.q_norm, config.head_dim)
        a.k_norm.forward = per_head_rms_norm(a.k_norm, config.head_dim)
    norm_effect = float((per_head(input_ids=seq[None], use_cache=False).logits - base).abs().max())
    del per_head

    full = copy.deepcopy(ref)  # what transformers 5.13 computes from the published config (#48241)
    hd, theta = config.head_dim, config.rope_parameters["rope_theta"]
    full.model.rotary_emb.inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    rope_effect = float((full(input_ids=seq[None], use_cache=False).logits - base).abs().max())
    del full

    assert norm_effect > MIN_NORM_EFFECT, norm_effect
    assert rope_effect > MIN_NORM_EFFECT, rope_effect
    return {
        "rotary_dims_per_head": config.rotary_dim,
        "max_abs_diff_logits_if_qk_norms_were_per_head": norm_effect,
        "max_abs_diff_logits_if_rope_turned_all_head_dims": rope_effect,
    }


# --------------------------------------------------------------------------------------------
# Kimi-K2.5: compressed-tensors pack-quantized INT4 routed experts
# --------------------------------------------------------------------------------------------

# text_config.quantization_config of moonshotai/Kimi-K2.5, verbatim. The tiny model's module
# names are the published ones (below `model.`), so the ignore list needs no adapting: it keeps
# lm_head, all attention projections, the shared experts and layer 0's dense MLP unquantized,
# which leaves exactly the routed experts (checked).
KIMI_QUANTIZATION_CONFIG: dict[str, Any] = {
    "config_groups": {
        "group_0": {
            "input_activations": None,
            "output_activations": None,
            "targets": ["Linear"],
            "weights": {
                "actorder": None,
                "block_structure": None,
                "dynamic": False,
                "group_size": 32,
                "num_bits": 4,
                "observer": "minmax",
                "observer_kwargs": {},
                "strategy": "group",
                "symmetric": True,
                "type": "int",
            },
        }
    },
    "format": "pack-quantized",
    "ignore": [
        "lm_head",
        "re:.*self_attn.*",
        "re:.*shared_experts.*",
        "re:.*mlp\\.(gate|up|gate_up|down)_proj.*",
    ],
    "kv_cache_scheme": None,
    "quant_method": "compressed-tensors",
    "quantization_status": "compressed",
}
# Derived from the 5.13 config on load and absent from Kimi-K2.5's text_config (checked).
KIMI_DERIVED_TEXT_KEYS = ["rope_parameters", "head_dim", "qk_head_dim", "rope_interleave", "pad_token_id"]
MIN_QUANT_EFFECT = 1e-2  # misreading the INT4 encoding must move the logits by more than this
# Kimi-K2.5's published checkpoint nests the text model under `language_model.`
# (`language_model.model.*`, `language_model.lm_head.weight`), and so does the fixture, as
# DayZero reads the wrapper (model::checkpoint_name); False would keep transformers' names
# (`model.*`, `lm_head.weight`). The reference loads them renamed either way.
KIMI_PUBLISHED_NAMES = True
KIMI_PREFIX = "language_model."


def kimi_published_names(st_path: Path) -> None:
    """Rename the checkpoint's tensors to Kimi-K2.5's published names."""
    sd = safetensors.torch.load_file(str(st_path))
    safetensors.torch.save_file({KIMI_PREFIX + n: t for n, t in sorted(sd.items())}, str(st_path), metadata={"format": "pt"})


def load_kimi_weights(st_path: Path) -> dict[str, torch.Tensor]:
    """The fixture's tensors under transformers' names."""
    sd = safetensors.torch.load_file(str(st_path))
    if not KIMI_PUBLISHED_NAMES:
        return sd
    assert all(n.startswith(KIMI_PREFIX) for n in sd), sorted(sd)[:3]
    return {n[len(KIMI_PREFIX):]: t for n, t in sd.items()}


def compressed_tensors_version() -> str:
    import compressed_tensors

    return compressed_tensors.__version__


def linear_shadow(sd: dict[str, torch.Tensor]) -> torch.nn.Module:
    """The `nn.Linear` modules of Kimi-K2.5's text model (DeepSeek-V3's modeling_deepseek.py,
    one module per expert) holding the checkpoint's weights: every 2-D `*.weight` except
    `embed_tokens` (an Embedding) and `mlp.gate` (DeepSeek's MoEGate, a plain Module, as is
    transformers' DeepseekV3TopkRouter). compressed-tensors matches its targets and ignore list
    against these module names, as llm-compressor does on the real model."""
    root = torch.nn.Module()
    for name, t in sorted(sd.items()):
        if not name.endswith(".weight") or t.ndim != 2:
            continue
        mod_name = name[: -len(".weight")]
        if mod_name.endswith("embed_tokens") or mod_name.endswith("mlp.gate"):
            continue
        lin = torch.nn.Linear(t.shape[1], t.shape[0], bias=False)
        lin.weight = torch.nn.Parameter(t.clone(), requires_grad=False)
        parent = root
        for part in mod_name.split(".")[:-1]:
            if not hasattr(parent, part):
                parent.add_module(part, torch.nn.Module())
            parent = getattr(parent, part)
        parent.add_module(mod_name.split(".")[-1], lin)
    return root


def unpack_int4(packed: torch.Tensor, cols: int, high_first: bool = False, twos_complement: bool = False) -> torch.Tensor:
    """The stored INT4 values, decoded independently of compressed-tensors: 8 nibbles per
    int32 along the input dim, lowest nibble first, value = nibble - 8. The two flags decode it
    wrongly on purpose (nibbles highest first; nibbles as two's complement) for the checks."""
    shifts = torch.arange(8, dtype=torch.int32) * 4
    if high_first:
        shifts = shifts.flip(0)
    nib = (packed.unsqueeze(-1) >> shifts) & 0xF  # arithmetic shift; the mask drops the sign
    nib = nib.reshape(packed.shape[0], -1)[:, :cols]
    return torch.where(nib >= 8, nib - 16, nib) if twos_complement else nib - 8


def dequant_int4(packed: torch.Tensor, scale: torch.Tensor, shape: torch.Tensor, first_group_scale: bool = False,
                 **wrong) -> torch.Tensor:
    """W[r, c] = (nibble(r, c) - 8) * scale[r, c // group] in the scale's dtype (float32 here:
    exact, the product of a 4-bit integer and a float32). `first_group_scale` (wrong on purpose)
    applies each row's first scale to the whole row."""
    rows, cols = (int(v) for v in shape)
    q = unpack_int4(packed, cols, **wrong)
    group = cols // scale.shape[1]
    if first_group_scale:
        scale = scale[:, :1].expand(-1, scale.shape[1])
    return q.to(scale.dtype) * scale.repeat_interleave(group, dim=1)


@torch.no_grad()
def quantize_experts_int4(st_path: Path) -> dict[str, Any]:
    """Replace every routed expert's `.weight` in the checkpoint by compressed-tensors'
    pack-quantized triple, computed by compressed-tensors itself, the way llm-compressor runs
    it: `apply_quantization_config` (targets and ignore list pick the modules, and create
    `weight_scale` in the weight's dtype), the min-max observer's scales
    (`compute_dynamic_scales_and_zp`: min / max over each group of 32 inputs, then
    `calculate_qparams`), and `compress_module` with the pack-quantized compressor
    (`quantize`, then `pack_to_int32`). Then check the library's decompression against
    `dequant_int4`, bit for bit."""
    from compressed_tensors.compressors import BaseCompressor, compress_module
    from compressed_tensors.quantization import QuantizationConfig, QuantizationStatus, apply_quantization_config
    from compressed_tensors.quantization.utils import compute_dynamic_scales_and_zp

    sd = safetensors.torch.load_file(str(st_path))
    qcfg = QuantizationConfig.model_validate(copy.deepcopy(KIMI_QUANTIZATION_CONFIG))
    assert qcfg.format == "pack-quantized" and qcfg.quantization_status == QuantizationStatus.COMPRESSED
    qcfg.quantization_status = QuantizationStatus.FROZEN  # calibrated, not yet compressed
    root = linear_shadow(sd)
    apply_quantization_config(root, qcfg)
    quantized = sorted(n for n, m in root.named_modules() if getattr(m, "quantization_scheme", None) is not None)
    experts = sorted(n[: -len(".weight")] for n in sd if ".mlp.experts." in n)
    assert quantized == experts, sorted(set(quantized) ^ set(experts))

    out = {n: t for n, t in sd.items() if n[: -len(".weight")] not in set(quantized)}
    decompressor = BaseCompressor.get_value_from_registry("pack-quantized")
    minus8 = total = 0
    worst_err = 0.0
    for name in quantized:
        m = root.get_submodule(name)
        w = m.weight.detach().clone()
        scale, zp = compute_dynamic_scales_and_zp(m.weight, m.quantization_scheme.weights, m)
        m.weight_scale.data.copy_(scale)
        m.weight_zero_point.data.copy_(zp)  # zeros (symmetric); the compressor drops it
        compress_module(m)
        assert m.quantization_scheme.format == "pack-quantized", m.quantization_scheme.format
        local = {k: t.detach().contiguous() for k, t in m.state_dict().items()}
        assert set(local) == {"weight_packed", "weight_scale", "weight_shape"}, sorted(local)
        packed, sc, shape = local["weight_packed"], local["weight_scale"], local["weight_shape"]
        assert packed.dtype == torch.int32 and packed.shape == (w.shape[0], w.shape[1] // 8), packed.shape
        assert sc.dtype == torch.float32 and sc.shape == (w.shape[0], w.shape[1] // 32), (sc.dtype, sc.shape)
        assert shape.dtype == torch.int64 and shape.tolist() == list(w.shape), (shape.dtype, shape)
        # scale = absmax of the group / 7.5 (range [-8, 7]: (7 - (-8)) / 2)
        absmax = w.abs().view(w.shape[0], -1, 32).amax(-1)
        assert torch.equal(sc, absmax / 7.5), name
        lib = decompressor.decompress(local, m.quantization_scheme)["weight"]
        mine = dequant_int4(packed, sc, shape)
        assert lib.dtype == torch.float32 and torch.equal(lib, mine), name
        q = unpack_int4(packed, w.shape[1])
        minus8 += int((q == -8).sum())
        total += q.numel()
        err = (w - mine).abs() / sc.repeat_interleave(32, dim=1)
        worst_err = max(worst_err, float(err.max()))
        for k, t in local.items():
            out[f"{name}.{k}"] = t
    assert worst_err <= 0.5 + 1e-6, worst_err
    safetensors.torch.save_file(dict(sorted(out.items())), str(st_path), metadata={"format": "pt"})
    return {
        "int4_quantized_matrices": len(quantized),
        "int4_values": total,
        "int4_values_equal_to_minus_8": minus8,
        "int4_max_abs_error_in_scale_units": worst_err,
    }


def kimi_config_json(path: Path, fam: Family) -> dict[str, Any]:
    """Rewrite the saved DeepseekV3 config.json as Kimi-K2.5's: the KimiK25ForConditionalGeneration
    wrapper (model_type kimi_k25) with the text model in `text_config` (model_type kimi_k2,
    architectures DeepseekV3ForCausalLM, published rope form `rope_theta` + `rope_scaling`, and
    `quantization_config`, which Kimi-K2.5 keeps inside text_config). No vision_config, no
    media / video placeholder keys, no auto_map (text only: no vision weights, no remote code)."""
    saved = json.loads(path.read_text())
    rope = dict(saved["rope_parameters"])
    assert rope.pop("rope_theta") == fam.config["rope_theta"] and rope.pop("rope_type") == "yarn", saved["rope_parameters"]
    assert rope == fam.config["rope_scaling"], (rope, fam.config["rope_scaling"])
    text = {k: v for k, v in saved.items() if k not in KIMI_DERIVED_TEXT_KEYS}
    text.update(
        model_type="kimi_k2",
        architectures=["DeepseekV3ForCausalLM"],
        rope_theta=fam.config["rope_theta"],
        rope_scaling=fam.config["rope_scaling"],
        torch_dtype=saved["dtype"],
        quantization_config=copy.deepcopy(KIMI_QUANTIZATION_CONFIG),
    )
    assert text["dtype"] == "float32"
    for key in PASSTHROUGH_KEYS:
        if key in fam.config:
            assert text.get(key) == fam.config[key], (key, text.get(key), fam.config[key])
    cfg = {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "bos_token_id": text["bos_token_id"],
        "eos_token_id": text["eos_token_id"],
        "dtype": "float32",
        "torch_dtype": "float32",
        "ignore_index": -100,
        "tie_word_embeddings": False,
        "text_config": text,
    }
    path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    return cfg


def load_kimi_reference(out_dir: Path, model_cls, config, load_kw: dict[str, Any]):
    """transformers has no kimi_k25 (its modeling code is remote): load the text model the
    way KimiK25ForConditionalGeneration builds it, `DeepseekV3ForCausalLM` from `text_config`
    (model_type deepseek_v3 for transformers' config class) and the fixture's own tensors
    (under transformers' names), with its quantization_config. transformers 5.13 hands that to
    compressed-tensors (CompressedTensorsHfQuantizer): the routed experts' packed triples are
    decompressed by compressed-tensors (`DecompressExperts` -> pack-quantized `decompress`) and
    stacked into the fused expert tensors; run_compressed=False."""
    import tempfile

    from transformers import CompressedTensorsConfig

    text = json.loads((out_dir / "config.json").read_text())["text_config"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp_dir = Path(tmp)
        (tmp_dir / "config.json").write_text(json.dumps(dict(text, model_type="deepseek_v3"), indent=2))
        shutil.copyfile(out_dir / "generation_config.json", tmp_dir / "generation_config.json")
        safetensors.torch.save_file(load_kimi_weights(out_dir / "model.safetensors"), str(tmp_dir / "model.safetensors"),
                                    metadata={"format": "pt"})
        ref, info = model_cls.from_pretrained(
            tmp_dir, output_loading_info=True, quantization_config=CompressedTensorsConfig(run_compressed=False), **load_kw
        )
    ref.eval()
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs")), info
    assert type(ref.hf_quantizer).__name__ == "CompressedTensorsHfQuantizer", type(ref.hf_quantizer)
    assert ref.hf_quantizer.run_compressed is False
    # The published text_config (rope_theta + rope_scaling, no head_dim / qk_head_dim /
    # rope_interleave) gives the model that was built.
    for key in ("rope_parameters", "head_dim", "qk_head_dim", "rope_interleave", "n_group", "topk_group",
                "routed_scaling_factor", "first_k_dense_replace", "moe_intermediate_size"):
        assert getattr(ref.config, key) == getattr(config, key), (key, getattr(ref.config, key), getattr(config, key))
    assert ref.config.rope_interleave is True
    return ref


def expert_params(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items() if ".mlp.experts." in k}


def fused_experts_from_checkpoint(st_path: Path, config, **wrong) -> dict[str, torch.Tensor]:
    """The fused expert tensors of transformers 5 (`gate_up_proj` [E, 2I, H], `down_proj`
    [E, H, I]) from the packed triples, dequantized by `dequant_int4`."""
    sd = load_kimi_weights(st_path)
    out = {}
    for layer in range(config.first_k_dense_replace, config.num_hidden_layers):
        p = f"model.layers.{layer}.mlp.experts."

        def w(e, proj):
            q = f"{p}{e}.{proj}."
            return dequant_int4(sd[q + "weight_packed"], sd[q + "weight_scale"], sd[q + "weight_shape"], **wrong)

        E = config.n_routed_experts
        out[p + "gate_up_proj"] = torch.stack([torch.cat([w(e, "gate_proj"), w(e, "up_proj")]) for e in range(E)])
        out[p + "down_proj"] = torch.stack([w(e, "down_proj") for e in range(E)])
    return out


@torch.no_grad()
def kimi_checks(ref, float_experts: dict[str, torch.Tensor], st_path: Path, config, seq: torch.Tensor) -> dict[str, float]:
    """The INT4 encoding matters: the unquantized weights, nibbles read highest first, nibbles
    read as two's complement (instead of value + 8), or each row's first group scale used for
    the whole row must each move the logits (uncached forward over prompt + generated tokens)."""
    base = ref(input_ids=seq[None], use_cache=False).logits
    variants = {
        "max_abs_diff_logits_if_experts_were_unquantized": float_experts,
        "max_abs_diff_logits_if_nibbles_were_read_highest_first": fused_experts_from_checkpoint(st_path, config, high_first=True),
        "max_abs_diff_logits_if_nibbles_were_twos_complement": fused_experts_from_checkpoint(st_path, config, twos_complement=True),
        "max_abs_diff_logits_if_rows_used_one_scale": fused_experts_from_checkpoint(st_path, config, first_group_scale=True),
    }
    out = {}
    for key, experts in variants.items():
        m = copy.deepcopy(ref)
        missing, unexpected = m.load_state_dict(experts, strict=False)
        assert not unexpected and len(missing) == len(m.state_dict()) - len(experts), (unexpected, len(missing))
        out[key] = float((m(input_ids=seq[None], use_cache=False).logits - base).abs().max())
        assert out[key] > MIN_QUANT_EFFECT, (key, out[key])
        del m
    return out


# --------------------------------------------------------------------------------------------
# Build one family
# --------------------------------------------------------------------------------------------


def fix_config_json_2026(path: Path, fam: Family) -> dict[str, Any]:
    """Published form: `torch_dtype` beside `dtype`, no keys transformers derives on load."""
    cfg = json.loads(path.read_text())
    cfg.setdefault("torch_dtype", cfg.get("dtype", "float32"))
    assert cfg["torch_dtype"] == "float32", cfg["torch_dtype"]
    for key in DERIVED_KEYS[fam.name]:
        cfg.pop(key, None)
    for key in PASSTHROUGH_KEYS:
        if key in fam.config:
            assert cfg.get(key) == fam.config[key], (key, cfg.get(key), fam.config[key])
    path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    return cfg


def set_rope_init_fn(model) -> None:
    """`float64_reference` recomputes RoPE frequencies through `mod.rope_init_fn`, which
    transformers 5 rotary modules no longer keep as an attribute: give it back."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    for mod in model.modules():
        if type(mod).__name__.endswith("RotaryEmbedding"):
            rt = mod.rope_type
            mod.rope_init_fn = mod.compute_default_rope_parameters if rt == "default" else ROPE_INIT_FUNCTIONS[rt]


@torch.no_grad()
def build_family(fam: Family, index: int, out_root: Path) -> dict[str, Any]:
    seed = WEIGHT_SEED + index
    model_cls = getattr(transformers, fam.model_class)
    config_cls = model_cls.config_class
    load_kw = dict(attn_implementation="eager", experts_implementation="eager", dtype=torch.float32)
    config = config_cls(**copy.deepcopy(fam.config), **load_kw)

    torch.manual_seed(seed)
    model = model_cls(config).to(torch.float32).eval()
    assert model.config._experts_implementation == "eager", model.config._experts_implementation
    reinit_model_2026(model, fam, seed)

    out_dir = out_root / fam.name
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    kimi = fam.name == "kimi_k2_5"
    cfg_json = (kimi_config_json if kimi else fix_config_json_2026)(out_dir / "config.json", fam)
    got_files = {p.name for p in out_dir.iterdir()}
    assert got_files == {"config.json", "generation_config.json", "model.safetensors"}, got_files
    st_path = out_dir / "model.safetensors"
    saved_layout = expert_layout(st_path)  # transformers 5.13 writes them one by one
    want = PUBLISHED_EXPERT_LAYOUT[fam.name]
    if saved_layout != want:
        assert want in ("fused", "per_expert"), (fam.name, saved_layout, want)
        n_exp = config.num_experts if fam.name == "qwen3_5_moe" else config.n_routed_experts
        if want == "fused":
            fuse_experts(st_path, n_exp)
        else:
            split_experts(st_path, n_exp, config.moe_intermediate_size)
    assert expert_layout(st_path) == want
    quant: dict[str, Any] = {}
    if kimi:
        quant = quantize_experts_int4(st_path)
        assert expert_layout(st_path) == "none"  # the experts are only packed triples now
        if KIMI_PUBLISHED_NAMES:
            kimi_published_names(st_path)
    saved_names = set(tensor_table(st_path))
    if kimi and KIMI_PUBLISHED_NAMES:
        saved_names = {n[len(KIMI_PREFIX):] for n in saved_names if n.startswith(KIMI_PREFIX)}
        assert len(saved_names) == len(tensor_table(st_path))
    assert all(n.startswith("model.") or n == "lm_head.weight" for n in saved_names), sorted(saved_names)
    assert not any(n.startswith("model.language_model.") for n in saved_names)

    # Reload what was written; the goldens come from the reloaded model.
    if kimi:
        ref = load_kimi_reference(out_dir, model_cls, config, load_kw)
        # The weights transformers + compressed-tensors loaded: the float model's, except the
        # routed experts, which are exactly dequant_int4 of the stored triples (= compressed-
        # tensors' own decompression, checked in quantize_experts_int4).
        want_sd = dict(model.state_dict())
        float_experts = expert_params(model)
        want_sd.update(fused_experts_from_checkpoint(st_path, config))
        # The other route to the same model: the float model with its experts replaced by the
        # dequantized triples, run without compressed-tensors; compared with the goldens below.
        model.load_state_dict(want_sd)
        plain_prefill = model(input_ids=make_prompt()[None], use_cache=False).logits[0]
    else:
        ref, info = model_cls.from_pretrained(out_dir, output_loading_info=True, **load_kw)
        ref.eval()
        assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs")), info
        want_sd = model.state_dict()
    for key in DERIVED_KEYS[fam.name]:
        assert getattr(ref.config, key) == getattr(config, key), (key, getattr(ref.config, key), getattr(config, key))
    assert getattr(ref.config, "layer_types", None) == getattr(config, "layer_types", None)
    sd1 = ref.state_dict()
    assert want_sd.keys() == sd1.keys()
    for k in want_sd:
        assert torch.equal(want_sd[k], sd1[k]), f"reloaded {k} differs"
    del model, want_sd
    set_rope_init_fn(ref)

    prompt = make_prompt()
    probe = RouterProbe2026(ref, fam.name)
    iprobe = IndexerProbe(ref) if fam.name == "glm_moe_dsa" else None
    counter = DeltaRuleCounter(ref) if fam.name == "qwen3_5_moe" else None
    try:
        res = run_greedy(ref, prompt)
    finally:
        probe.close()
        if iprobe:
            iprobe.close()
    gen = res["generated_tokens"].tolist()
    routing = probe.summary()
    extra: dict[str, Any] = {}

    # --- robustness checks ---------------------------------------------------------------
    decisions = torch.cat([res["prefill_logits"][-1:], res["decode_logits"]])
    min_gap = argmax_gaps(decisions)
    assert min_gap > MIN_ARGMAX_GAP, f"{fam.name}: greedy argmax gap {min_gap} too small"
    assert len(set(gen)) >= MIN_DISTINCT_GENERATED, f"{fam.name}: degenerate greedy output {gen}"
    assert routing["min_router_margin"] > MIN_ROUTER_MARGIN, f"{fam.name}: routing {routing}"
    if fam.name == "glm_moe_dsa":
        assert routing["tokens_whose_experts_the_correction_bias_changes"] > 0, routing
        assert iprobe.min_margin > MIN_INDEXER_MARGIN, f"indexer margin {iprobe.min_margin}"
        n_idx = len(iprobe.handles)
        extra.update(
            indexer_query_rows=iprobe.rows,
            indexer_query_rows_dropping_keys=iprobe.rows_dropping,
            min_indexer_topk_margin=iprobe.min_margin,
        )
        # rows 4..11 of the prompt and all 4 decode rows, per indexer layer
        assert iprobe.rows_dropping == n_idx * (PROMPT_LEN - config.index_topk + DECODE_STEPS), iprobe.rows_dropping
        # The indexer matters: keeping every key moves the logits.
        dense = copy.deepcopy(ref)
        for m in dense.modules():
            if type(m).__name__ == "GlmMoeDsaIndexer":
                m.index_topk = 10**9
        seq = torch.cat([prompt, torch.tensor(gen[:DECODE_STEPS])])
        effect = float((dense(input_ids=seq[None], use_cache=False).logits - ref(input_ids=seq[None], use_cache=False).logits).abs().max())
        assert effect > MIN_INDEXER_EFFECT, effect
        extra["max_abs_diff_logits_if_the_indexer_kept_every_key"] = effect
        del dense
    if fam.name == "minimax_m2":
        assert routing["tokens_whose_experts_the_correction_bias_changes"] > 0, routing
        extra.update(minimax_checks(ref, config, torch.cat([prompt, torch.tensor(gen[:DECODE_STEPS])])))
    if kimi:
        assert torch.equal(plain_prefill, res["prefill_logits"]), "compressed-tensors load vs dequantized float model"
        assert routing["tokens_whose_experts_the_correction_bias_changes"] > 0, routing
        extra.update(quant)
        extra.update(kimi_checks(ref, float_experts, st_path, config, torch.cat([prompt, torch.tensor(gen[:DECODE_STEPS])])))
        del float_experts
    if counter is not None:
        calls = counter.calls
        n_lin = len(counter.mods)
        expect = [("chunk:torch_chunk_gated_delta_rule", PROMPT_LEN)] * n_lin + [
            ("recurrent:torch_recurrent_gated_delta_rule", 1)
        ] * (n_lin * DECODE_STEPS)
        assert calls == expect, calls
        counter.close()
        # The prompt fits in one 64-token chunk: check the chunked rule with chunk size 4
        # (3 chunks) gives the same prefill.
        import transformers.models.qwen3_5_moe.modeling_qwen3_5_moe as qm

        assert qm.torch_chunk_gated_delta_rule.__defaults__[0] == 64
        for m in counter.mods:
            m.chunk_gated_delta_rule = functools.partial(qm.torch_chunk_gated_delta_rule, chunk_size=4)
        chunk4 = ref(input_ids=prompt[None], use_cache=False).logits[0]
        for m in counter.mods:
            m.chunk_gated_delta_rule = qm.torch_chunk_gated_delta_rule
        d4 = float((chunk4 - res["prefill_logits"]).abs().max())
        assert d4 < 1e-4, d4
        extra["delta_rule_chunk_size"] = 64
        extra["max_abs_diff_prefill_chunk_size_4_vs_64"] = d4

    nocache = uncached_logits(ref, prompt, gen)
    cached = torch.cat([res["prefill_logits"][-1:], res["decode_logits"]])
    cache_vs_nocache = float((nocache - cached).abs().max())
    assert cache_vs_nocache < 1e-4, f"{fam.name}: cached vs uncached {cache_vs_nocache}"
    prefill_nocache = float((ref(input_ids=prompt[None], use_cache=False).logits[0] - res["prefill_logits"]).abs().max())
    gen_tokens = generate_tokens(ref, prompt)
    assert gen_tokens == gen, f"{fam.name}: generate {gen_tokens} != manual {gen}"

    r64, not_fp64 = float64_reference(ref, prompt, gen)
    assert not not_fp64, f"{fam.name}: float32 tensors in the float64 run: {not_fp64}"
    d_prefill = float((res["prefill_logits"].double() - r64["prefill_logits"]).abs().max())
    d_decode = float((res["decode_logits"].double() - r64["decode_logits"]).abs().max())
    max_logit = float(torch.cat([res["prefill_logits"], res["decode_logits"]]).abs().max())
    assert max(d_prefill, d_decode) < 1e-3 * max(1.0, max_logit), (d_prefill, d_decode)
    gen64 = [int(r64["prefill_logits"][-1].argmax())] + [int(x) for x in r64["decode_logits"].argmax(-1)]
    assert gen64 == gen, f"{fam.name}: float64 greedy {gen64} != float32 {gen}"

    # --- write the goldens -----------------------------------------------------------------
    tensors = {
        "prompt_tokens": prompt.contiguous(),
        "generated_tokens": res["generated_tokens"].contiguous(),
        "prefill_logits": res["prefill_logits"].float().contiguous(),
        "decode_logits": res["decode_logits"].float().contiguous(),
        "prefill_logits_fp64": r64["prefill_logits"].contiguous(),
        "decode_logits_fp64": r64["decode_logits"].contiguous(),
        "prefill_layer_outputs": res["prefill_layer_outputs"].float().contiguous(),
    }
    golden_st = out_dir / "golden.safetensors"
    safetensors.torch.save_file(tensors, str(golden_st), metadata={"format": "pt"})

    golden = {
        "format_version": GOLDEN_FORMAT_VERSION,
        "family": fam.name,
        "architecture": fam.model_class,
        "model_type": cfg_json["model_type"],
        "features": fam.notes,
        "command": COMMAND,
        "versions": dict(versions(), compressed_tensors=compressed_tensors_version()) if kimi else versions(),
        "weight_seed": seed,
        "prompt_seed": PROMPT_SEED,
        "weights": "float32; every tensor re-drawn from one generator, see init_tensor_2026() in tools/make_tiny_models_2026.py"
        + (
            "; then the routed experts quantized by compressed-tensors (pack-quantized INT4, symmetric, group 32, "
            "min-max scales), see quantize_experts_int4(); the goldens use their dequantized values"
            if kimi
            else ""
        ),
        "attn_implementation": "eager",
        "experts_implementation": "eager",
        "prompt_tokens": prompt.tolist(),
        "generated_tokens": gen,
        "decode": (
            "manual greedy loop with the cache (DynamicCache): generated_tokens[0] = argmax(prefill_logits[-1]); "
            f"decode step i (0..{DECODE_STEPS - 1}) feeds generated_tokens[i] at position {PROMPT_LEN}+i and gives "
            "decode_logits[i], whose argmax is generated_tokens[i+1]. model.generate(do_sample=False) gives the same tokens."
        ),
        "golden_tensors": {
            "prompt_tokens": f"I64 [{PROMPT_LEN}]",
            "generated_tokens": f"I64 [{DECODE_STEPS + 1}]",
            "prefill_logits": f"F32 [{PROMPT_LEN}, {VOCAB}] logits at every prompt position",
            "decode_logits": f"F32 [{DECODE_STEPS}, {VOCAB}] logits of each cached decode step",
            "prefill_logits_fp64": "F64, same computation in float64 (teacher-forced), see README",
            "decode_logits_fp64": "F64, same computation in float64 (teacher-forced), see README",
            "prefill_layer_outputs": f"F32 [{config.num_hidden_layers}, {PROMPT_LEN}, {HIDDEN}] output of each decoder layer during prefill (residual stream, before the final norm)",
        },
        "stats": {
            "max_abs_logit": max_logit,
            "min_greedy_top1_top2_gap": min_gap,
            "max_abs_diff_fp32_vs_fp64_prefill": d_prefill,
            "max_abs_diff_fp32_vs_fp64_decode": d_decode,
            "max_abs_diff_cached_vs_uncached_decode": cache_vs_nocache,
            "max_abs_diff_prefill_with_vs_without_cache": prefill_nocache,
            **routing,
            **extra,
        },
        "files": {
            name: {"bytes": (out_dir / name).stat().st_size, "sha256": sha256(out_dir / name)}
            for name in ("config.json", "model.safetensors", "golden.safetensors")
        },
        "model_tensors": tensor_table(out_dir / "model.safetensors"),
    }
    (out_dir / "golden.json").write_text(json.dumps(golden, indent=2) + "\n")
    return golden


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
