"""Build one 2026 family: the model, its checkpoint in the published layout, the reload, the
checks and the golden files."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import torch

import transformers

from make_tiny_models import DECODE_STEPS, WEIGHT_SEED, Family, make_prompt, run_greedy, tensor_table

from .checks import delta_rule_checks, glm_checks, greedy_checks, minimax_checks, reference_checks
from .families import DERIVED_KEYS, PASSTHROUGH_KEYS
from .goldens import golden_stats, save_golden_tensors, write_golden_json
from .kimi_checkpoint import (
    KIMI_PREFIX,
    KIMI_PUBLISHED_NAMES,
    KimiReload,
    kimi_config_json,
    kimi_family_checks,
    quantize_checkpoint,
    reload_kimi,
)
from .probes import DeltaRuleCounter, IndexerProbe, RouterProbe2026
from .weights import publish_expert_layout, reinit_model_2026

LOAD_ERRORS = ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs")


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


def new_model(model_cls, config, fam: Family, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = model_cls(config).to(torch.float32).eval()
    assert model.config._experts_implementation == "eager", model.config._experts_implementation
    reinit_model_2026(model, fam, seed)
    return model


def check_tensor_names(st_path: Path, kimi: bool) -> None:
    """Text-model names: `model.*` and `lm_head.weight` (Kimi-K2.5: below `language_model.`)."""
    saved_names = set(tensor_table(st_path))
    if kimi and KIMI_PUBLISHED_NAMES:
        saved_names = {n[len(KIMI_PREFIX):] for n in saved_names if n.startswith(KIMI_PREFIX)}
        assert len(saved_names) == len(tensor_table(st_path))
    assert all(n.startswith("model.") or n == "lm_head.weight" for n in saved_names), sorted(saved_names)
    assert not any(n.startswith("model.language_model.") for n in saved_names)


def save_checkpoint(model, config, fam: Family, out_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Write config.json, generation_config.json and model.safetensors as published into a fresh
    `out_dir`. Returns config.json and (Kimi-K2.5) the INT4 quantization stats."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    kimi = fam.name == "kimi_k2_5"
    cfg_json = (kimi_config_json if kimi else fix_config_json_2026)(out_dir / "config.json", fam)
    got_files = {p.name for p in out_dir.iterdir()}
    assert got_files == {"config.json", "generation_config.json", "model.safetensors"}, got_files
    st_path = out_dir / "model.safetensors"
    publish_expert_layout(st_path, fam.name, config)
    quant = quantize_checkpoint(st_path) if kimi else {}
    check_tensor_names(st_path, kimi)
    return cfg_json, quant


@torch.no_grad()
def reload_checkpoint(model, model_cls, config, fam: Family, out_dir: Path,
                      load_kw: dict[str, Any]) -> tuple[torch.nn.Module, KimiReload | None]:
    """Load what was written (the goldens come from the reloaded model) and check that it has
    the model's weights (Kimi-K2.5: with the experts dequantized) and config."""
    kimi = None
    if fam.name == "kimi_k2_5":
        ref, want_sd, kimi = reload_kimi(model, out_dir, model_cls, config, load_kw)
    else:
        ref, info = model_cls.from_pretrained(out_dir, output_loading_info=True, **load_kw)
        ref.eval()
        assert not any(info[k] for k in LOAD_ERRORS), info
        want_sd = model.state_dict()
    for key in DERIVED_KEYS[fam.name]:
        assert getattr(ref.config, key) == getattr(config, key), (key, getattr(ref.config, key), getattr(config, key))
    assert getattr(ref.config, "layer_types", None) == getattr(config, "layer_types", None)
    sd1 = ref.state_dict()
    assert want_sd.keys() == sd1.keys()
    for k in want_sd:
        assert torch.equal(want_sd[k], sd1[k]), f"reloaded {k} differs"
    return ref, kimi


def run_probed(ref, family: str, prompt: torch.Tensor):
    """`run_greedy` with the family's probes attached. Returns its result, the routing summary,
    and the indexer probe (GLM-5) and delta-rule counter (Qwen3.5, still attached) or None."""
    probe = RouterProbe2026(ref, family)
    iprobe = IndexerProbe(ref) if family == "glm_moe_dsa" else None
    counter = DeltaRuleCounter(ref) if family == "qwen3_5_moe" else None
    try:
        res = run_greedy(ref, prompt)
    finally:
        probe.close()
        if iprobe:
            iprobe.close()
    return res, probe.summary(), iprobe, counter


def family_checks(ref, fam: Family, config, prompt: torch.Tensor, gen: list[int], res: dict[str, torch.Tensor],
                  routing: dict[str, Any], iprobe, counter, kimi: KimiReload | None,
                  quant: dict[str, Any]) -> dict[str, Any]:
    """The checks of one family beyond the common ones. Returns their stats for golden.json."""
    seq = torch.cat([prompt, torch.tensor(gen[:DECODE_STEPS])])  # prompt + generated tokens
    extra: dict[str, Any] = {}
    if fam.name == "glm_moe_dsa":
        extra.update(glm_checks(ref, config, iprobe, routing, seq))
    if fam.name == "minimax_m2":
        assert routing["tokens_whose_experts_the_correction_bias_changes"] > 0, routing
        extra.update(minimax_checks(ref, config, seq))
    if kimi is not None:
        extra.update(kimi_family_checks(ref, kimi, quant, config, res, routing, seq))
    if counter is not None:
        extra.update(delta_rule_checks(ref, counter, prompt, res["prefill_logits"]))
    return extra


@torch.no_grad()
def build_family(fam: Family, index: int, out_root: Path) -> dict[str, Any]:
    seed = WEIGHT_SEED + index
    model_cls = getattr(transformers, fam.model_class)
    load_kw = dict(attn_implementation="eager", experts_implementation="eager", dtype=torch.float32)
    config = model_cls.config_class(**copy.deepcopy(fam.config), **load_kw)
    model = new_model(model_cls, config, fam, seed)
    out_dir = out_root / fam.name
    cfg_json, quant = save_checkpoint(model, config, fam, out_dir)
    ref, kimi = reload_checkpoint(model, model_cls, config, fam, out_dir, load_kw)
    del model
    set_rope_init_fn(ref)

    prompt = make_prompt()
    res, routing, iprobe, counter = run_probed(ref, fam.name, prompt)
    gen = res["generated_tokens"].tolist()
    min_gap = greedy_checks(fam.name, res, gen, routing)
    extra = family_checks(ref, fam, config, prompt, gen, res, routing, iprobe, counter, kimi, quant)
    del kimi
    measured, r64 = reference_checks(ref, fam.name, prompt, gen, res)

    save_golden_tensors(out_dir, prompt, res, r64)
    stats = golden_stats(measured, min_gap, routing, extra)
    return write_golden_json(out_dir, fam, config, cfg_json, seed, prompt, gen, stats)
