"""The golden files of the 2026 families: `golden.safetensors` and `golden.json`, in the format
of `make_tiny_models.py` (whose `build_family` writes them inline, so this repeats its layout)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

import safetensors.torch

from make_tiny_models import (
    DECODE_STEPS,
    GOLDEN_FORMAT_VERSION,
    HIDDEN,
    PROMPT_LEN,
    PROMPT_SEED,
    VOCAB,
    Family,
    sha256,
    tensor_table,
    versions,
)

from .kimi_int4 import compressed_tensors_version

COMMAND = "python3 tools/make_tiny_models_2026.py --out tests/fixtures/tiny"
# init_tensor_2026 lives in weights.py, quantize_experts_int4 in kimi_int4.py; the entry point
# re-exports both, so the committed fixtures' pointer to it stays true (and byte-identical).
WEIGHTS_NOTE = "float32; every tensor re-drawn from one generator, see init_tensor_2026() in tools/make_tiny_models_2026.py"
KIMI_WEIGHTS_NOTE = (
    "; then the routed experts quantized by compressed-tensors (pack-quantized INT4, symmetric, group 32, "
    "min-max scales), see quantize_experts_int4(); the goldens use their dequantized values"
)
DECODE_NOTE = (
    "manual greedy loop with the cache (DynamicCache): generated_tokens[0] = argmax(prefill_logits[-1]); "
    f"decode step i (0..{DECODE_STEPS - 1}) feeds generated_tokens[i] at position {PROMPT_LEN}+i and gives "
    "decode_logits[i], whose argmax is generated_tokens[i+1]. model.generate(do_sample=False) gives the same tokens."
)


def save_golden_tensors(out_dir: Path, prompt: torch.Tensor, res: dict[str, torch.Tensor],
                        r64: dict[str, torch.Tensor]) -> None:
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


def golden_tensor_notes(num_layers: int) -> dict[str, str]:
    return {
        "prompt_tokens": f"I64 [{PROMPT_LEN}]",
        "generated_tokens": f"I64 [{DECODE_STEPS + 1}]",
        "prefill_logits": f"F32 [{PROMPT_LEN}, {VOCAB}] logits at every prompt position",
        "decode_logits": f"F32 [{DECODE_STEPS}, {VOCAB}] logits of each cached decode step",
        "prefill_logits_fp64": "F64, same computation in float64 (teacher-forced), see README",
        "decode_logits_fp64": "F64, same computation in float64 (teacher-forced), see README",
        "prefill_layer_outputs": f"F32 [{num_layers}, {PROMPT_LEN}, {HIDDEN}] output of each decoder layer during prefill (residual stream, before the final norm)",
    }


def golden_stats(measured: dict[str, float], min_gap: float, routing: dict[str, Any],
                 extra: dict[str, Any]) -> dict[str, Any]:
    """`golden.json`'s stats, in its key order: `measured` from `reference_checks`."""
    return {
        "max_abs_logit": measured["max_abs_logit"],
        "min_greedy_top1_top2_gap": min_gap,
        "max_abs_diff_fp32_vs_fp64_prefill": measured["max_abs_diff_fp32_vs_fp64_prefill"],
        "max_abs_diff_fp32_vs_fp64_decode": measured["max_abs_diff_fp32_vs_fp64_decode"],
        "max_abs_diff_cached_vs_uncached_decode": measured["max_abs_diff_cached_vs_uncached_decode"],
        "max_abs_diff_prefill_with_vs_without_cache": measured["max_abs_diff_prefill_with_vs_without_cache"],
        **routing,
        **extra,
    }


def write_golden_json(out_dir: Path, fam: Family, config, cfg_json: dict[str, Any], seed: int, prompt: torch.Tensor,
                      gen: list[int], stats: dict[str, Any]) -> dict[str, Any]:
    """Write `golden.json` (after golden.safetensors, whose hash it records) and return it."""
    kimi = fam.name == "kimi_k2_5"
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
        "weights": WEIGHTS_NOTE + (KIMI_WEIGHTS_NOTE if kimi else ""),
        "attn_implementation": "eager",
        "experts_implementation": "eager",
        "prompt_tokens": prompt.tolist(),
        "generated_tokens": gen,
        "decode": DECODE_NOTE,
        "golden_tensors": golden_tensor_notes(config.num_hidden_layers),
        "stats": stats,
        "files": {
            name: {"bytes": (out_dir / name).stat().st_size, "sha256": sha256(out_dir / name)}
            for name in ("config.json", "model.safetensors", "golden.safetensors")
        },
        "model_tensors": tensor_table(out_dir / "model.safetensors"),
    }
    (out_dir / "golden.json").write_text(json.dumps(golden, indent=2) + "\n")
    return golden
