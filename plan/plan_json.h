#pragma once
// Plan <-> JSON. Plan files are DayZero's own format: unknown fields are errors
// naming the file, the field and the value. A plan file may carry the prediction
// it was simulated with under "prediction"; reading skips it.

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "model/model.h"
#include "plan/plan.h"

namespace dayzero::plan {

Plan plan_from_json(const nlohmann::json& j, const std::string& file);
Plan load_plan(const std::filesystem::path& file);
nlohmann::json plan_to_json(const Plan& p);
// Writes via a temporary file and a rename; `prediction` (simulate's, as JSON),
// when given, is stored under "prediction".
void save_plan(const std::filesystem::path& file, const Plan& p, const nlohmann::json* prediction = nullptr);

// Checks a plan against a model and a cluster of `num_devices` devices: sizes that
// divide the model, ranks that exist (dtypes are enums, checked when read). Throws
// core::InputError naming `file` and the offending field.
void validate_plan(const Plan& p, const model::Model& m, uint32_t num_devices, const std::string& file);

// Checks that the memory a workload can need on `m` fits in 64 bits: the KV cache of
// all `w.batch` sequences at full length (input_len + output_len, in blocks of
// `kv_block_tokens`, `kv_bytes` per element) on one replica, and the activations and
// MoE buffers of a step of `step_tokens`. validate_plan calls it for a plan; a search
// for its scenario. Throws core::InputError naming `file` and the field `workload`.
void check_workload_sizes(const Workload& w, const model::Model& m, int64_t kv_block_tokens, int64_t step_tokens,
                          int64_t kv_bytes, const std::string& file);

}  // namespace dayzero::plan
