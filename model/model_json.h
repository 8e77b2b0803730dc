#pragma once
// JSON form of a Model: the summary `dayzero inspect --json` prints. Counts are
// plain integers (elements or bytes), never rounded.

#include <nlohmann/json_fwd.hpp>

#include "model/model.h"

namespace dayzero::model {

void to_json(nlohmann::json& j, const Op& op);
void to_json(nlohmann::json& j, const Layer& layer);
// Keys: architecture, family, model_type, source, num_layers, hidden_size, ...,
// params_total, params_active, params_embedding, params_head, params_mtp,
// params_by_part, weights_bytes and mtp_weights_bytes {one key per precision_name:
// bf16, fp8, int8, int8_w8a16, int4, nvfp4, checkpoint}, kv_bytes_per_token {bf16,
// fp8}, layers (op inventory), model_ops.
void to_json(nlohmann::json& j, const Model& m);

}  // namespace dayzero::model
