#pragma once
// Internal to model/: the per-family readers behind parse_config. Each reads the
// family's keys from `f` into `c`, whose common fields are already set.

#include "core/json_fields.h"
#include "model/config.h"

namespace dayzero::model::detail {

using core::Fields;

void read_gqa_family(Fields& f, ModelConfig& c);  // llama, mistral, qwen2/3, mixtral, qwen3_moe
void read_deepseek(Fields& f, ModelConfig& c);    // deepseek_v2, deepseek_v3 (and Kimi-K2)
void read_gpt_oss(Fields& f, ModelConfig& c);
void read_minimax_m2(Fields& f, ModelConfig& c);   // config_families_moe.cpp
void read_qwen3_5_moe(Fields& f, ModelConfig& c);  // config_families_moe.cpp
void read_mla_dsa(Fields& f, ModelConfig& c);      // GLM-5, DeepSeek-V3.2: config_families_moe.cpp
void read_rope(Fields& f, ModelConfig& c, double theta_default, bool interleaved_default);
void read_layer_attention(Fields& f, ModelConfig& c, bool sliding_by_default);
void read_quantization(Fields& f, ModelConfig& c);
void validate(const Fields& f, const ModelConfig& c);  // cross-field consistency

}  // namespace dayzero::model::detail
