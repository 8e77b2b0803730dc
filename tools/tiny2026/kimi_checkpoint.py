"""Kimi-K2.5's checkpoint: the published config.json wrapper and tensor names, the reference
model loaded through transformers + compressed-tensors, and the checks that the INT4 encoding
matters."""

from __future__ import annotations

import copy
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import safetensors.torch

from make_tiny_models import Family, make_prompt

from .families import PASSTHROUGH_KEYS
from .kimi_int4 import KIMI_QUANTIZATION_CONFIG, dequant_int4, quantize_experts_int4
from .weights import expert_layout

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


def quantize_checkpoint(st_path: Path) -> dict[str, Any]:
    """The saved float checkpoint to Kimi-K2.5's: routed experts pack-quantized
    (`quantize_experts_int4`, whose stats are returned), then the published tensor names."""
    quant = quantize_experts_int4(st_path)
    assert expert_layout(st_path) == "none"  # the experts are only packed triples now
    if KIMI_PUBLISHED_NAMES:
        kimi_published_names(st_path)
    return quant


@dataclass
class KimiReload:
    """What the Kimi-K2.5 checks need besides the reference model."""

    st_path: Path
    float_experts: dict[str, torch.Tensor]  # the float model's routed experts, before quantization
    plain_prefill: torch.Tensor  # prefill logits of the float model with the experts dequantized


@torch.no_grad()
def reload_kimi(model, out_dir: Path, model_cls, config, load_kw: dict[str, Any]):
    """The reference (`load_kimi_reference`), the state dict it must have loaded, and the
    `KimiReload` data; `model`, the float model, gets its experts dequantized."""
    st_path = out_dir / "model.safetensors"
    ref = load_kimi_reference(out_dir, model_cls, config, load_kw)
    # The weights transformers + compressed-tensors loaded: the float model's, except the
    # routed experts, which are exactly dequant_int4 of the stored triples (= compressed-
    # tensors' own decompression, checked in quantize_experts_int4).
    want_sd = dict(model.state_dict())
    float_experts = expert_params(model)
    want_sd.update(fused_experts_from_checkpoint(st_path, config))
    # The other route to the same model: the float model with its experts replaced by the
    # dequantized triples, run without compressed-tensors; compared with the goldens in
    # kimi_family_checks.
    model.load_state_dict(want_sd)
    plain_prefill = model(input_ids=make_prompt()[None], use_cache=False).logits[0]
    return ref, want_sd, KimiReload(st_path, float_experts, plain_prefill)


@torch.no_grad()
def kimi_family_checks(ref, kimi: KimiReload, quant: dict[str, Any], config, res: dict[str, torch.Tensor],
                       routing: dict[str, Any], seq: torch.Tensor) -> dict[str, Any]:
    """The reference equals the float model with dequantized experts, the correction bias changes
    some token's experts, and the INT4 encoding matters (`kimi_checks`). Returns the stats."""
    assert torch.equal(kimi.plain_prefill, res["prefill_logits"]), "compressed-tensors load vs dequantized float model"
    assert routing["tokens_whose_experts_the_correction_bias_changes"] > 0, routing
    extra = dict(quant)
    extra.update(kimi_checks(ref, kimi.float_experts, kimi.st_path, config, seq))
    return extra
