"""Weights of the 2026 families: the initialisation (`init_tensor_2026`) and the routed-expert
layouts of the published checkpoints (fused, per expert, Mixtral's `block_sparse_moe`)."""

from __future__ import annotations

import math
from pathlib import Path

import torch

import safetensors.torch

from make_tiny_models import Family, init_tensor, tensor_table

from .families import PUBLISHED_EXPERT_LAYOUT


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


def publish_expert_layout(st_path: Path, family: str, config) -> None:
    """Rewrite the routed experts of a checkpoint saved by transformers 5.13 (one by one) into
    the layout of the family's published checkpoints (`PUBLISHED_EXPERT_LAYOUT`)."""
    saved_layout = expert_layout(st_path)  # transformers 5.13 writes them one by one
    want = PUBLISHED_EXPERT_LAYOUT[family]
    if saved_layout != want:
        assert want in ("fused", "per_expert"), (family, saved_layout, want)
        n_exp = config.num_experts if family == "qwen3_5_moe" else config.n_routed_experts
        if want == "fused":
            fuse_experts(st_path, n_exp)
        else:
            split_experts(st_path, n_exp, config.moe_intermediate_size)
    assert expert_layout(st_path) == want
