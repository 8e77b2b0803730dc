"""Kimi-K2.5's routed experts as compressed-tensors pack-quantized INT4: the published
quantization_config, quantization by compressed-tensors itself, and an independent decoder."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import torch

import safetensors.torch

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


def select_experts(sd: dict[str, torch.Tensor]) -> tuple[torch.nn.Module, list[str]]:
    """`linear_shadow` of the checkpoint with Kimi-K2.5's quantization_config applied by
    compressed-tensors (`apply_quantization_config`: targets and ignore list pick the modules,
    and create `weight_scale` in the weight's dtype), and the names of the modules it picked,
    which must be exactly the routed experts."""
    from compressed_tensors.quantization import QuantizationConfig, QuantizationStatus, apply_quantization_config

    qcfg = QuantizationConfig.model_validate(copy.deepcopy(KIMI_QUANTIZATION_CONFIG))
    assert qcfg.format == "pack-quantized" and qcfg.quantization_status == QuantizationStatus.COMPRESSED
    qcfg.quantization_status = QuantizationStatus.FROZEN  # calibrated, not yet compressed
    root = linear_shadow(sd)
    apply_quantization_config(root, qcfg)
    quantized = sorted(n for n, m in root.named_modules() if getattr(m, "quantization_scheme", None) is not None)
    experts = sorted(n[: -len(".weight")] for n in sd if ".mlp.experts." in n)
    assert quantized == experts, sorted(set(quantized) ^ set(experts))
    return root, quantized


@torch.no_grad()
def compress_expert(m: torch.nn.Module, name: str, decompressor) -> tuple[dict[str, torch.Tensor], torch.Tensor, float]:
    """Quantize and pack one selected module with compressed-tensors: the min-max observer's
    scales (`compute_dynamic_scales_and_zp`: min / max over each group of 32 inputs, then
    `calculate_qparams`), and `compress_module` with the pack-quantized compressor (`quantize`,
    then `pack_to_int32`). Checks the triple, and the library's decompression against
    `dequant_int4` bit for bit. Returns the triple, its INT4 values and the largest
    quantization error in units of the group's scale."""
    from compressed_tensors.compressors import compress_module
    from compressed_tensors.quantization.utils import compute_dynamic_scales_and_zp

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
    err = (w - mine).abs() / sc.repeat_interleave(32, dim=1)
    return local, q, float(err.max())


@torch.no_grad()
def quantize_experts_int4(st_path: Path) -> dict[str, Any]:
    """Replace every routed expert's `.weight` in the checkpoint by compressed-tensors'
    pack-quantized triple, computed by compressed-tensors itself, the way llm-compressor runs
    it: `apply_quantization_config` picks the modules (`select_experts`), then the min-max
    observer's scales and `compress_module` (`compress_expert`). Then check the library's
    decompression against `dequant_int4`, bit for bit."""
    from compressed_tensors.compressors import BaseCompressor

    sd = safetensors.torch.load_file(str(st_path))
    root, quantized = select_experts(sd)
    out = {n: t for n, t in sd.items() if n[: -len(".weight")] not in set(quantized)}
    decompressor = BaseCompressor.get_value_from_registry("pack-quantized")
    minus8 = total = 0
    worst_err = 0.0
    for name in quantized:
        local, q, err = compress_expert(root.get_submodule(name), name, decompressor)
        minus8 += int((q == -8).sum())
        total += q.numel()
        worst_err = max(worst_err, err)
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
