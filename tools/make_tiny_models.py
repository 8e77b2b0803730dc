#!/usr/bin/env python3
"""Build tiny random-weight models of every supported family and their golden outputs.

For each family (llama, qwen3, qwen3_moe, mixtral, deepseek_v3, gpt_oss) this script

1. builds a tiny configuration with the family's Hugging Face `transformers` config class
   (hidden 64, 2-3 layers, vocab 256) that still exercises every feature of the family
   (GQA, llama3 / yarn RoPE scaling, q/k norms, MoE with dense layers, MLA, grouped
   sigmoid routing with a correction bias, sliding-window attention with sinks, biases);
2. instantiates the public reference implementation (`<Family>ForCausalLM`, eager attention,
   float32) and overwrites *every* parameter and persistent buffer from one seeded generator
   with a scale chosen so that each sub-layer matters (see `init_tensor`);
3. saves `config.json` + `model.safetensors` (+ `generation_config.json`) with
   `save_pretrained(safe_serialization=True)`, reloads the saved directory with
   `from_pretrained` and checks the reloaded weights are bit-identical;
4. runs the *reloaded* model on a fixed 12-token prompt: prefill logits at every prompt
   position, then 4 greedy decode steps through the KV cache (a manual loop, see
   `run_greedy`), and writes them to `golden.safetensors` + `golden.json`;
5. checks the goldens are robust: greedy picks and MoE routing choices have margins far
   above float32 rounding, the decoded tokens vary, cached decode equals an uncached forward,
   `model.generate` agrees, and a float64 re-run (see `float32_means_float64`) stays close.

Everything is deterministic (fixed seeds, one CPU thread, deterministic algorithms): running
the script twice gives byte-identical files.

Usage:  python3 tools/make_tiny_models.py --out tests/fixtures/tiny [--family NAME ...]
Needs:  pip install -r tools/requirements-goldens.txt   (see tools/README.md)
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import json
import math
import platform
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn.functional as F

import safetensors
import safetensors.torch
import transformers

COMMAND = "python3 tools/make_tiny_models.py --out tests/fixtures/tiny"
GOLDEN_FORMAT_VERSION = 1

VOCAB = 256
HIDDEN = 64
PROMPT_LEN = 12
DECODE_STEPS = 4
PROMPT_SEED = 20240601  # same prompt for every family
WEIGHT_SEED = 1234  # per-family seed = WEIGHT_SEED + index in FAMILIES

# Robustness thresholds: a float32 re-implementation differs from the reference by ~1e-6 in
# the logits (measured, see README), so decisions closer than these could flip.
MIN_ARGMAX_GAP = 1e-3
MIN_ROUTER_MARGIN = 1e-4
MIN_DISTINCT_GENERATED = 3


# --------------------------------------------------------------------------------------------
# Families
# --------------------------------------------------------------------------------------------


@dataclass
class Family:
    name: str
    model_class: str  # transformers class name
    config: dict[str, Any]  # kwargs of the config class (extra keys are saved as-is)
    notes: list[str] = field(default_factory=list)
    # Extra multiplier on the default init scale, by parameter-name suffix.
    scale_overrides: dict[str, float] = field(default_factory=dict)
    # If set, every embedding row is rescaled to exactly this RMS (used for tied embeddings).
    embed_row_rms: float | None = None


FAMILIES: list[Family] = [
    Family(
        name="llama",
        model_class="LlamaForCausalLM",
        config=dict(
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=512,
            rms_norm_eps=1e-5,
            rope_theta=500000.0,
            # head_dim 16 -> wavelengths 6.3, 32.4, 167, ...: with original 64 the first
            # frequency is kept, the second is smoothed and the rest are divided by 8.
            rope_scaling={
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64,
            },
            attention_bias=False,
            mlp_bias=False,
            tie_word_embeddings=False,
            bos_token_id=1,
            eos_token_id=2,
        ),
        notes=["GQA 4 heads / 2 kv heads", "llama3 RoPE scaling (all three frequency regimes)"],
    ),
    Family(
        name="qwen3",
        model_class="Qwen3ForCausalLM",
        config=dict(
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=24,  # != hidden / heads = 16
            max_position_embeddings=512,
            rms_norm_eps=1e-6,
            rope_theta=1000000.0,
            rope_scaling=None,
            attention_bias=False,
            use_sliding_window=False,
            tie_word_embeddings=True,  # like Qwen3-0.6B/1.7B/4B: no lm_head.weight saved
            bos_token_id=1,
            eos_token_id=2,
        ),
        notes=["head_dim 24 != hidden/heads", "q_norm/k_norm", "tied embeddings (no lm_head.weight)"],
        # Tied: with N(0, 1) embeddings the logits are dominated by the input token's own
        # embedding and by the longest rows, and greedy decode repeats one token forever.
        embed_row_rms=0.15,
    ),
    Family(
        name="qwen3_moe",
        model_class="Qwen3MoeForCausalLM",
        config=dict(
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            intermediate_size=128,  # the dense (mlp_only) layer
            moe_intermediate_size=32,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=32,  # != hidden / heads = 16
            num_experts=8,
            num_experts_per_tok=2,
            norm_topk_prob=True,
            decoder_sparse_step=1,
            mlp_only_layers=[1],  # layers 0 and 2 are MoE, layer 1 is dense
            max_position_embeddings=512,
            rms_norm_eps=1e-6,
            rope_theta=1000000.0,
            rope_scaling=None,
            attention_bias=False,
            use_sliding_window=False,
            tie_word_embeddings=False,
            bos_token_id=1,
            eos_token_id=2,
        ),
        notes=["8 experts top-2, norm_topk_prob", "mlp_only_layers [1]: dense layer between MoE layers"],
    ),
    Family(
        name="mixtral",
        model_class="MixtralForCausalLM",
        config=dict(
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            num_local_experts=4,
            num_experts_per_tok=2,
            sliding_window=None,
            max_position_embeddings=512,
            rms_norm_eps=1e-5,
            rope_theta=1000000.0,
            tie_word_embeddings=False,
            bos_token_id=1,
            eos_token_id=2,
        ),
        notes=["4 experts top-2 (softmax over all experts, then top-2 renormalised)"],
    ),
    Family(
        name="deepseek_v3",
        model_class="DeepseekV3ForCausalLM",
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
            n_group=4,
            topk_group=2,
            n_shared_experts=1,
            routed_scaling_factor=2.5,
            norm_topk_prob=True,
            max_position_embeddings=1280,
            rms_norm_eps=1e-6,
            rope_theta=10000.0,
            # As DeepSeek-V3 publishes it ("type" key, mscale = mscale_all_dim = 1), with a
            # small original length so that the yarn ramp covers the tiny rope dims:
            # rope dim 16 -> frequency 0 extrapolated, 1 blended, 2..7 interpolated.
            rope_scaling={
                "type": "yarn",
                "factor": 40.0,
                "original_max_position_embeddings": 32,
                "beta_fast": 32,
                "beta_slow": 1,
                "mscale": 1.0,
                "mscale_all_dim": 1.0,
            },
            rope_interleave=True,
            attention_bias=False,
            tie_word_embeddings=False,
            bos_token_id=0,
            eos_token_id=1,
            # Keys of the published config that transformers does not read (its DeepSeek-V3
            # is hard-wired to sigmoid scoring + noaux_tc and has no MTP): saved for parsers.
            num_nextn_predict_layers=0,
            scoring_func="sigmoid",
            topk_method="noaux_tc",
            moe_layer_freq=1,
        ),
        notes=[
            "MLA with q_lora_rank and kv_lora_rank, interleaved RoPE on the rope dims",
            "yarn RoPE with mscale/mscale_all_dim (softmax scale multiplied by mscale^2)",
            "sigmoid routing, noaux_tc grouped top-k with a non-zero e_score_correction_bias",
            "num_nextn_predict_layers 0: no MTP tensors",
        ],
    ),
    Family(
        name="gpt_oss",
        model_class="GptOssForCausalLM",
        config=dict(
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            num_local_experts=4,
            num_experts_per_tok=2,
            sliding_window=4,  # the 12-token prompt is longer than the window
            layer_types=["sliding_attention", "full_attention"],
            max_position_embeddings=1024,
            rms_norm_eps=1e-5,
            rope_theta=150000.0,
            rope_scaling={
                "rope_type": "yarn",
                "factor": 32.0,
                "beta_fast": 32.0,
                "beta_slow": 1.0,
                "truncate": False,
                "original_max_position_embeddings": 32,
            },
            tie_word_embeddings=False,
            bos_token_id=1,
            eos_token_id=2,
            # In the published config; transformers hard-codes limit 7.0 and alpha 1.702.
            swiglu_limit=7.0,
        ),
        notes=[
            "unquantized fp32 experts (no quantization_config)",
            "alternating sliding (window 4) / full attention, attention sinks, biases everywhere",
            "experts' gate/up interleaved in gate_up_proj (gate = even columns, up = odd)",
            "gate_up_proj scaled x3 so that the swiglu clamp at 7.0 is exercised",
        ],
        scale_overrides={"mlp.experts.gate_up_proj": 3.0},
    ),
]


# --------------------------------------------------------------------------------------------
# Weights
# --------------------------------------------------------------------------------------------


def init_tensor(name: str, shape: torch.Size, gen: torch.Generator, fam: Family) -> torch.Tensor:
    """Deterministic replacement for one parameter / persistent buffer (float32).

    Scales are chosen so every part of the network changes the logits noticeably (the
    transformers default, normal(0, 0.02), leaves attention uniform and sub-layers negligible):
      - norm weights:         1 + 0.2 * N(0, 1)   (so a missing norm weight is visible)
      - embeddings:           N(0, 1) (tied: rows rescaled to RMS `embed_row_rms`)
      - matrices / experts:   N(0, 1) / sqrt(fan_in)  (unit gain; fan_in is the contracted dim)
      - biases, sinks:        0.1 * N(0, 1); attention sinks and gpt-oss router bias N(0, 1)
      - e_score_correction_bias: uniform(-0.1, 0.1) - enough to change some routing choices
    """
    def randn() -> torch.Tensor:
        return torch.randn(shape, generator=gen, dtype=torch.float32)

    mult = 1.0
    for suffix, m in fam.scale_overrides.items():
        if name.endswith(suffix):
            mult = m
    if name.endswith("e_score_correction_bias"):
        return (torch.rand(shape, generator=gen, dtype=torch.float32) * 0.2 - 0.1) * mult
    if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
        return 1.0 + 0.2 * randn()
    if name.endswith("embed_tokens.weight"):
        e = randn() * mult
        if fam.embed_row_rms is not None:
            e = e / e.pow(2).mean(-1, keepdim=True).sqrt() * fam.embed_row_rms
        return e
    if name.endswith("self_attn.sinks") or name.endswith("mlp.router.bias"):
        return randn() * mult
    if name.endswith(".bias") or name.endswith("_bias"):
        return 0.1 * randn() * mult
    if len(shape) == 2:  # nn.Linear [out, in], lm_head, routers
        return randn() / math.sqrt(shape[1]) * mult
    if len(shape) == 3:  # gpt-oss experts [E, in, out] used as x @ W
        return randn() / math.sqrt(shape[1]) * mult
    raise ValueError(f"no init rule for {name} {tuple(shape)}")


def reinit_model(model: torch.nn.Module, fam: Family, seed: int) -> None:
    """Overwrite every tensor of the state dict, in sorted name order, from one generator."""
    gen = torch.Generator().manual_seed(seed)
    sd = model.state_dict()  # shares storage with the parameters / buffers
    with torch.no_grad():
        for name in sorted(sd):
            t = sd[name]
            if not t.is_floating_point():
                raise ValueError(f"unexpected non-float tensor {name}")
            t.copy_(init_tensor(name, t.shape, gen, fam))


# --------------------------------------------------------------------------------------------
# Routing margins (hooks on the router modules)
# --------------------------------------------------------------------------------------------


def _topk_margin(scores: torch.Tensor, k: int) -> float:
    """Smallest gap, over rows, between the k-th and (k+1)-th largest score."""
    s = scores.sort(dim=-1, descending=True).values
    gap = s[:, k - 1] - s[:, k]
    gap = torch.where(torch.isfinite(gap), gap, torch.full_like(gap, float("inf")))
    return float(gap.min())


class RouterProbe:
    """Records, for every routed token, how close the routing decision was to flipping.

    Scores are recomputed in float64 from the router's float32 input and weights. For
    DeepSeek-V3 it also checks that transformers' masking of unselected groups with 0.0
    picks the same experts as the original's -inf, and counts the tokens whose choice the
    e_score_correction_bias changes.
    """

    def __init__(self, model: torch.nn.Module, family: str):
        self.family = family
        self.min_margin = float("inf")
        self.tokens = 0
        self.bias_changed = 0
        self.zero_fill_mismatch = 0
        self.handles = []
        for name, mod in model.named_modules():
            cls = type(mod).__name__
            if cls == "DeepseekV3TopkRouter":
                self.handles.append(mod.register_forward_hook(self._deepseek))
            elif cls == "GptOssTopKRouter":
                self.handles.append(mod.register_forward_hook(self._gpt_oss))
            elif isinstance(mod, torch.nn.Linear) and (
                name.endswith("block_sparse_moe.gate") or (family == "qwen3_moe" and name.endswith("mlp.gate"))
            ):
                k = model.config.num_experts_per_tok
                self.handles.append(mod.register_forward_hook(self._linear_gate(k)))

    def close(self) -> None:
        for h in self.handles:
            h.remove()

    def _note(self, margin: float, tokens: int) -> None:
        self.min_margin = min(self.min_margin, margin)
        self.tokens += tokens

    def _linear_gate(self, k: int) -> Callable:
        def hook(mod, inputs, output):
            x = inputs[0].reshape(-1, mod.in_features).double()
            logits = x @ mod.weight.double().T
            self._note(_topk_margin(logits, k), x.shape[0])  # softmax is monotonic
        return hook

    def _gpt_oss(self, mod, inputs, output):
        x = inputs[0].reshape(-1, mod.hidden_dim).double()
        logits = x @ mod.weight.double().T + mod.bias.double()
        self._note(_topk_margin(logits, mod.top_k), x.shape[0])

    def _deepseek(self, mod, inputs, output):
        x = inputs[0].reshape(-1, mod.config.hidden_size).double()
        scores = torch.sigmoid(x @ mod.weight.double().T)
        E, G, TG, K = mod.n_routed_experts, mod.n_group, mod.topk_group, mod.top_k

        def choose(biased: torch.Tensor, fill: float):
            grouped = biased.view(-1, G, E // G)
            group_scores = grouped.topk(2, dim=-1).values.sum(-1)
            group_margin = _topk_margin(group_scores, TG)
            group_idx = group_scores.topk(TG, dim=-1).indices
            keep = torch.zeros_like(group_scores, dtype=torch.bool).scatter_(1, group_idx, True)
            keep = keep.unsqueeze(-1).expand(-1, G, E // G).reshape(-1, E)
            masked = biased.masked_fill(~keep, fill)
            expert_margin = _topk_margin(biased.masked_fill(~keep, float("-inf")), K)
            chosen = masked.topk(K, dim=-1).indices.sort(dim=-1).values
            return chosen, min(group_margin, expert_margin)

        chosen, margin = choose(scores + mod.e_score_correction_bias.double(), float("-inf"))
        chosen_zero_fill, _ = choose(scores + mod.e_score_correction_bias.double(), 0.0)
        chosen_no_bias, _ = choose(scores, float("-inf"))
        self.zero_fill_mismatch += int((chosen != chosen_zero_fill).any(-1).sum())
        self.bias_changed += int((chosen != chosen_no_bias).any(-1).sum())
        self._note(margin, x.shape[0])

    def summary(self) -> dict[str, Any]:
        if not self.handles:
            return {}
        out: dict[str, Any] = {"routed_token_decisions": self.tokens, "min_router_margin": self.min_margin}
        if self.family == "deepseek_v3":
            out["tokens_whose_experts_the_correction_bias_changes"] = self.bias_changed
            out["tokens_where_zero_fill_differs_from_neg_inf_fill"] = self.zero_fill_mismatch
        return out


# --------------------------------------------------------------------------------------------
# Running the reference
# --------------------------------------------------------------------------------------------


def make_prompt() -> torch.Tensor:
    gen = torch.Generator().manual_seed(PROMPT_SEED)
    return torch.randint(0, VOCAB, (PROMPT_LEN,), generator=gen, dtype=torch.int64)


@torch.no_grad()
def run_greedy(model, prompt: torch.Tensor, forced: list[int] | None = None) -> dict[str, torch.Tensor]:
    """Prefill the prompt, then DECODE_STEPS single-token steps through the KV cache.

    Manual loop (not model.generate): generated[0] = argmax(prefill logits at the last prompt
    position); decode step i feeds generated[i] at position PROMPT_LEN + i and yields
    decode_logits[i], whose argmax is generated[i + 1]. So there are DECODE_STEPS + 1
    generated tokens. With `forced`, those tokens are fed instead (teacher forcing).
    Also records each decoder layer's output during prefill (before the final norm).
    """
    layer_outputs: list[torch.Tensor] = []
    hooks = [
        layer.register_forward_hook(lambda m, i, o: layer_outputs.append((o[0] if isinstance(o, tuple) else o)[0]))
        for layer in model.model.layers
    ]
    try:
        out = model(input_ids=prompt[None], use_cache=True)
    finally:
        for h in hooks:
            h.remove()
    prefill = out.logits[0]
    cache = out.past_key_values
    tokens = [int(prefill[-1].argmax())] if forced is None else [forced[0]]
    decode = []
    for i in range(DECODE_STEPS):
        pos = torch.tensor([[PROMPT_LEN + i]])
        out = model(
            input_ids=torch.tensor([[tokens[i]]]),
            past_key_values=cache,
            use_cache=True,
            position_ids=pos,
            cache_position=pos[0],
        )
        cache = out.past_key_values
        decode.append(out.logits[0, -1])
        tokens.append(int(decode[-1].argmax()) if forced is None else forced[i + 1])
    return {
        "prefill_logits": prefill,
        "decode_logits": torch.stack(decode),
        "generated_tokens": torch.tensor(tokens, dtype=torch.int64),
        "prefill_layer_outputs": torch.stack(layer_outputs),
    }


def argmax_gaps(logit_rows: torch.Tensor) -> float:
    top2 = logit_rows.double().topk(2, dim=-1).values
    return float((top2[:, 0] - top2[:, 1]).min())


@contextlib.contextmanager
def float32_means_float64():
    """Make transformers' explicit float32 islands (RMSNorm, eager softmax, RoPE, routers)
    compute in float64, so that a float64 run is float64 throughout.

    transformers upcasts with `torch.float32` / `torch.float` / `Tensor.float()`; these are
    redirected to float64 for the duration. Only used for the float64 comparison run, whose
    module outputs are checked to all be float64.
    """
    saved = (torch.float32, torch.float, torch.Tensor.float)
    torch.float32 = torch.float64
    torch.float = torch.float64
    torch.Tensor.float = lambda self, *a, **k: self.double(*a, **k)
    try:
        yield
    finally:
        torch.float32, torch.float, torch.Tensor.float = saved


@torch.no_grad()
def float64_reference(model, prompt: torch.Tensor, tokens: list[int]) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Same computation in float64 (teacher-forced on the float32 greedy tokens)."""
    m64 = copy.deepcopy(model).to(torch.float64)
    not_fp64: set[str] = set()

    def check(name):
        def hook(mod, inputs, output):
            outs = output if isinstance(output, (tuple, list)) else (output,)
            for o in outs:
                if torch.is_tensor(o) and o.is_floating_point() and o.dtype != torch.float64:
                    not_fp64.add(f"{name}:{o.dtype}")
        return hook

    handles = [mod.register_forward_hook(check(n)) for n, mod in m64.named_modules()]
    try:
        with float32_means_float64():
            for mod in m64.modules():  # recompute RoPE frequencies in float64
                if type(mod).__name__.endswith("RotaryEmbedding"):
                    inv_freq, scaling = mod.rope_init_fn(mod.config, None)
                    mod.inv_freq = inv_freq.to(torch.float64)
                    mod.original_inv_freq = mod.inv_freq
                    mod.attention_scaling = scaling
            res = run_greedy(m64, prompt, forced=tokens)
    finally:
        for h in handles:
            h.remove()
    return res, sorted(not_fp64)


@torch.no_grad()
def uncached_logits(model, prompt: torch.Tensor, tokens: list[int]) -> torch.Tensor:
    """Logits at positions PROMPT_LEN-1 .. PROMPT_LEN+DECODE_STEPS-1 from one uncached forward."""
    seq = torch.cat([prompt, torch.tensor(tokens[:DECODE_STEPS], dtype=torch.int64)])
    logits = model(input_ids=seq[None], use_cache=False).logits[0]
    return logits[PROMPT_LEN - 1 :]


@torch.no_grad()
def generate_tokens(model, prompt: torch.Tensor) -> list[int]:
    out = model.generate(
        input_ids=prompt[None],
        attention_mask=torch.ones(1, PROMPT_LEN, dtype=torch.int64),
        do_sample=False,
        max_new_tokens=DECODE_STEPS + 1,
        min_new_tokens=DECODE_STEPS + 1,
        eos_token_id=None,
        pad_token_id=0,
    )
    return out[0, PROMPT_LEN:].tolist()


# --------------------------------------------------------------------------------------------
# Saving
# --------------------------------------------------------------------------------------------


def versions() -> dict[str, str]:
    import numpy

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "safetensors": safetensors.__version__,
        "numpy": numpy.__version__,
    }


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fix_config_json(path: Path, fam: Family) -> dict[str, Any]:
    """Add `torch_dtype` beside the `dtype` that transformers 4.57 writes (published
    checkpoints carry `torch_dtype`), and check the keys transformers does not read survived."""
    cfg = json.loads(path.read_text())
    cfg.setdefault("torch_dtype", cfg.get("dtype", "float32"))
    assert cfg["torch_dtype"] == "float32", cfg["torch_dtype"]
    for key in ("num_nextn_predict_layers", "scoring_func", "topk_method", "moe_layer_freq", "swiglu_limit"):
        if key in fam.config:
            assert cfg.get(key) == fam.config[key], (key, cfg.get(key))
    path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    return cfg


def tensor_table(path: Path) -> dict[str, dict[str, Any]]:
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return {k: {"dtype": v["dtype"], "shape": v["shape"]} for k, v in sorted(header.items())}


@torch.no_grad()
def build_family(fam: Family, index: int, out_root: Path) -> dict[str, Any]:
    seed = WEIGHT_SEED + index
    model_cls = getattr(transformers, fam.model_class)
    config_cls = model_cls.config_class
    config = config_cls(**copy.deepcopy(fam.config), attn_implementation="eager", dtype=torch.float32)

    torch.manual_seed(seed)
    model = model_cls(config).to(torch.float32).eval()
    reinit_model(model, fam, seed)

    out_dir = out_root / fam.name
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    cfg_json = fix_config_json(out_dir / "config.json", fam)
    expected_files = {"config.json", "generation_config.json", "model.safetensors"}
    got_files = {p.name for p in out_dir.iterdir()}
    assert got_files == expected_files, got_files

    # Reload what was written; the goldens come from the reloaded model.
    ref, info = model_cls.from_pretrained(
        out_dir, attn_implementation="eager", dtype=torch.float32, output_loading_info=True
    )
    ref.eval()
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs")), info
    sd0, sd1 = model.state_dict(), ref.state_dict()
    assert sd0.keys() == sd1.keys()
    for k in sd0:
        assert torch.equal(sd0[k], sd1[k]), f"reloaded {k} differs"
    del model

    prompt = make_prompt()
    probe = RouterProbe(ref, fam.name)
    try:
        res = run_greedy(ref, prompt)
    finally:
        probe.close()
    gen = res["generated_tokens"].tolist()
    routing = probe.summary()

    # --- robustness checks ---------------------------------------------------------------
    decisions = torch.cat([res["prefill_logits"][-1:], res["decode_logits"]])
    min_gap = argmax_gaps(decisions)
    assert min_gap > MIN_ARGMAX_GAP, f"{fam.name}: greedy argmax gap {min_gap} too small"
    assert len(set(gen)) >= MIN_DISTINCT_GENERATED, f"{fam.name}: degenerate greedy output {gen}"
    if routing:
        assert routing["min_router_margin"] > MIN_ROUTER_MARGIN, f"{fam.name}: routing {routing}"
    if fam.name == "deepseek_v3":
        assert routing["tokens_whose_experts_the_correction_bias_changes"] > 0, routing
        assert routing["tokens_where_zero_fill_differs_from_neg_inf_fill"] == 0, routing

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
        "weights": "float32; every tensor re-drawn from one generator, see init_tensor() in tools/make_tiny_models.py",
        "attn_implementation": "eager",
        "prompt_tokens": prompt.tolist(),
        "generated_tokens": gen,
        "decode": (
            "manual greedy loop with the KV cache (DynamicCache): generated_tokens[0] = argmax(prefill_logits[-1]); "
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
    if not transformers.__version__.startswith("4."):
        print(f"warning: transformers {transformers.__version__}; the fixtures need 4.x "
              "(5.x saves fused expert tensors)", file=sys.stderr)

    for i, fam in enumerate(FAMILIES):
        if args.family and fam.name not in args.family:
            continue
        g = build_family(fam, i, args.out)
        s = g["stats"]
        print(f"{fam.name:12s} tokens={g['generated_tokens']} max|logit|={s['max_abs_logit']:.2f} "
              f"fp32-fp64={max(s['max_abs_diff_fp32_vs_fp64_prefill'], s['max_abs_diff_fp32_vs_fp64_decode']):.2e} "
              f"gap={s['min_greedy_top1_top2_gap']:.3f}"
              + (f" router_margin={s['min_router_margin']:.4f}" if "min_router_margin" in s else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
