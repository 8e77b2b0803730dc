"""The checks of the 2026 families: the common ones (greedy margins, cache, generate, float64)
and those of GLM-5's indexer, Qwen3.5's delta rule and MiniMax-M2's q/k norms and RoPE."""

from __future__ import annotations

import copy
import functools
from typing import Any

import torch

from make_tiny_models import (
    DECODE_STEPS,
    MIN_ARGMAX_GAP,
    MIN_DISTINCT_GENERATED,
    MIN_ROUTER_MARGIN,
    PROMPT_LEN,
    argmax_gaps,
    float64_reference,
    generate_tokens,
    uncached_logits,
)

MIN_INDEXER_MARGIN = 1e-4  # like MIN_ROUTER_MARGIN: index scores are ~1, fp32 error ~1e-6
MIN_INDEXER_EFFECT = 1e-2  # keeping every key instead of the top-k must move the logits
MIN_NORM_EFFECT = 1e-2  # MiniMax-M2: per-head q/k norms or full-width RoPE instead must move the logits


def greedy_checks(name: str, res: dict[str, torch.Tensor], gen: list[int], routing: dict[str, Any]) -> float:
    """Every greedy decision and routing choice has a margin, and the output is not degenerate.
    Returns the smallest top-1 / top-2 gap of the greedy decisions."""
    decisions = torch.cat([res["prefill_logits"][-1:], res["decode_logits"]])
    min_gap = argmax_gaps(decisions)
    assert min_gap > MIN_ARGMAX_GAP, f"{name}: greedy argmax gap {min_gap} too small"
    assert len(set(gen)) >= MIN_DISTINCT_GENERATED, f"{name}: degenerate greedy output {gen}"
    assert routing["min_router_margin"] > MIN_ROUTER_MARGIN, f"{name}: routing {routing}"
    return min_gap


@torch.no_grad()
def reference_checks(ref, name: str, prompt: torch.Tensor, gen: list[int],
                     res: dict[str, torch.Tensor]) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    """Cached decode = uncached forward, `generate` = the manual greedy loop, and the float64
    recompute agrees (within 1e-3 of the largest logit) and decodes the same tokens. Returns
    the measured differences and the float64 logits."""
    nocache = uncached_logits(ref, prompt, gen)
    cached = torch.cat([res["prefill_logits"][-1:], res["decode_logits"]])
    cache_vs_nocache = float((nocache - cached).abs().max())
    assert cache_vs_nocache < 1e-4, f"{name}: cached vs uncached {cache_vs_nocache}"
    prefill_nocache = float((ref(input_ids=prompt[None], use_cache=False).logits[0] - res["prefill_logits"]).abs().max())
    gen_tokens = generate_tokens(ref, prompt)
    assert gen_tokens == gen, f"{name}: generate {gen_tokens} != manual {gen}"

    r64, not_fp64 = float64_reference(ref, prompt, gen)
    assert not not_fp64, f"{name}: float32 tensors in the float64 run: {not_fp64}"
    d_prefill = float((res["prefill_logits"].double() - r64["prefill_logits"]).abs().max())
    d_decode = float((res["decode_logits"].double() - r64["decode_logits"]).abs().max())
    max_logit = float(torch.cat([res["prefill_logits"], res["decode_logits"]]).abs().max())
    assert max(d_prefill, d_decode) < 1e-3 * max(1.0, max_logit), (d_prefill, d_decode)
    gen64 = [int(r64["prefill_logits"][-1].argmax())] + [int(x) for x in r64["decode_logits"].argmax(-1)]
    assert gen64 == gen, f"{name}: float64 greedy {gen64} != float32 {gen}"
    measured = {
        "max_abs_logit": max_logit,
        "max_abs_diff_fp32_vs_fp64_prefill": d_prefill,
        "max_abs_diff_fp32_vs_fp64_decode": d_decode,
        "max_abs_diff_cached_vs_uncached_decode": cache_vs_nocache,
        "max_abs_diff_prefill_with_vs_without_cache": prefill_nocache,
    }
    return measured, r64


@torch.no_grad()
def glm_checks(ref, config, iprobe, routing: dict[str, Any], seq: torch.Tensor) -> dict[str, Any]:
    """GLM-5: the correction bias changes some token's experts; the indexer's choices (recomputed
    by `IndexerProbe`) have a margin and drop keys on the rows that must; keeping every key
    instead of the top-k moves the logits (uncached forward over prompt + generated tokens)."""
    assert routing["tokens_whose_experts_the_correction_bias_changes"] > 0, routing
    assert iprobe.min_margin > MIN_INDEXER_MARGIN, f"indexer margin {iprobe.min_margin}"
    n_idx = len(iprobe.handles)
    extra: dict[str, Any] = dict(
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
    effect = float((dense(input_ids=seq[None], use_cache=False).logits - ref(input_ids=seq[None], use_cache=False).logits).abs().max())
    assert effect > MIN_INDEXER_EFFECT, effect
    extra["max_abs_diff_logits_if_the_indexer_kept_every_key"] = effect
    return extra


@torch.no_grad()
def delta_rule_checks(ref, counter, prompt: torch.Tensor, prefill_logits: torch.Tensor) -> dict[str, Any]:
    """Qwen3.5: prefill ran the pure-torch chunked delta rule, decode the recurrent one (as
    counted by `DeltaRuleCounter`, closed here), and a chunk size of 4 gives the same prefill."""
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
    d4 = float((chunk4 - prefill_logits).abs().max())
    assert d4 < 1e-4, d4
    return {"delta_rule_chunk_size": 64, "max_abs_diff_prefill_chunk_size_4_vs_64": d4}


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

