#!/usr/bin/env python3
"""Tiny random-weight models and golden outputs for the 2026 families (Qwen3.5-MoE, GLM-5,
MiniMax-M2).

The companion of `make_tiny_models.py` (same prompt, decode protocol, checks, golden files and
format; its helpers are imported, not copied) for the three families that transformers 4.57
does not have. It needs a transformers 5.x release, pinned in `tools/requirements-goldens-2026.txt`:

- `qwen3_5_moe` (Qwen3.5-397B-A17B style): `Qwen3_5MoeForCausalLM` with a
  `Qwen3_5MoeTextConfig`: gated delta-net linear attention on layers 0-2, gated full attention
  on layer 3, every layer MoE with a gated shared expert.
- `glm_moe_dsa` (GLM-5 style): `GlmMoeDsaForCausalLM`: MLA plus the DeepSeek-sparse-attention
  indexer (top-4 of the keys), layer 0 dense, layers 1-2 MoE with DeepSeek-V3 routing.
- `minimax_m2` (MiniMax-M2 / M2.5 style): `MiniMaxM2ForCausalLM`: GQA whose q_norm / k_norm
  are one RMSNorm over all heads of the layer (`qk_norm_type: per_layer`), rotary on the first
  half of each head (`rotary_dim`), every layer MoE with sigmoid scores and a selection-only
  `e_score_correction_bias`, Mixtral's `block_sparse_moe` names.

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
]

# Config keys transformers 5 adds that the published config.json does not carry; they are
# re-derived identically on load (checked).
DERIVED_KEYS = {
    "qwen3_5_moe": [],
    "glm_moe_dsa": ["layer_types", "mlp_layer_types", "indexer_types"],
    "minimax_m2": [],
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
PUBLISHED_EXPERT_LAYOUT = {"qwen3_5_moe": "fused", "glm_moe_dsa": "per_expert", "minimax_m2": "block_sparse_moe"}


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
        if self.family in ("glm_moe_dsa", "minimax_m2"):
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
# Build one family
# --------------------------------------------------------------------------------------------


def fix_config_json_2026(path: Path, fam: Family, config) -> dict[str, Any]:
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
    cfg_json = fix_config_json_2026(out_dir / "config.json", fam, config)
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
    saved_names = set(tensor_table(st_path))
    assert all(n.startswith("model.") or n == "lm_head.weight" for n in saved_names), sorted(saved_names)
    assert not any(n.startswith("model.language_model.") for n in saved_names)

    # Reload what was written; the goldens come from the reloaded model.
    ref, info = model_cls.from_pretrained(out_dir, output_loading_info=True, **load_kw)
    ref.eval()
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs")), info
    for key in DERIVED_KEYS[fam.name]:
        assert getattr(ref.config, key) == getattr(config, key), (key, getattr(ref.config, key), getattr(config, key))
    assert getattr(ref.config, "layer_types", None) == getattr(config, "layer_types", None)
    sd0, sd1 = model.state_dict(), ref.state_dict()
    assert sd0.keys() == sd1.keys()
    for k in sd0:
        assert torch.equal(sd0[k], sd1[k]), f"reloaded {k} differs"
    del model
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
        "versions": versions(),
        "weight_seed": seed,
        "prompt_seed": PROMPT_SEED,
        "weights": "float32; every tensor re-drawn from one generator, see init_tensor_2026() in tools/make_tiny_models_2026.py",
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
