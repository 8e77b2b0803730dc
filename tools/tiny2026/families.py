"""The 2026 families' tiny configs and per-family data (published layouts, config keys)."""

from __future__ import annotations

from make_tiny_models import HIDDEN, VOCAB, Family

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
            # transformers 5.13 does not read (see the docstring of make_tiny_models_2026.py,
            # point 5). Here 16 of 32 dims (the same half), stated twice; theta 1e4 rather than
            # 5e6 so that several of the 8 frequencies turn noticeably over 16 positions.
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

# Published checkpoints: Qwen3.5 stores each decoder layer's experts fused, GLM-5 one by one,
# MiniMax-M2 one by one under Mixtral's names.
PUBLISHED_EXPERT_LAYOUT = {
    "qwen3_5_moe": "fused",
    "glm_moe_dsa": "per_expert",
    "minimax_m2": "block_sparse_moe",
    "kimi_k2_5": "per_expert",  # before quantize_experts_int4 replaces each `.weight` by its packed triple
}
