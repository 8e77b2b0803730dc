"""Forward hooks of the 2026 families: routers and GLM-5's indexer recomputed in float64, and
which gated delta-rule functions Qwen3.5's linear attention calls."""

from __future__ import annotations

import types
from typing import Any

import torch

from make_tiny_models import RouterProbe, _topk_margin


def _router_view(mod):
    """A transformers 5 DeepSeek-style router seen under the 4.x attribute names that
    RouterProbe._deepseek reads."""
    return types.SimpleNamespace(
        config=types.SimpleNamespace(hidden_size=mod.hidden_dim),
        weight=mod.weight,
        e_score_correction_bias=mod.e_score_correction_bias,
        n_routed_experts=mod.num_experts,
        n_group=mod.num_group,
        topk_group=mod.topk_group,
        top_k=mod.top_k,
    )


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
        view = _router_view(mod)
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
        self._deepseek(_router_view(mod), inputs, output)

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
