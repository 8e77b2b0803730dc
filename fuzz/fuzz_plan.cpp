// A plan (plan::plan_from_json), a round trip through plan_to_json, and the checks
// `simulate` and `serve` make before using it (plan::validate_plan) against a dense
// model (Llama-3.1-8B) on 8 devices and an MoE with MLA (the tiny DeepSeek-V3) on 16.
#include <nlohmann/json.hpp>

#include "core/json_fields.h"
#include "fuzz/fuzz_common.h"
#include "model/model.h"
#include "plan/plan_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dayzero;
  static const model::Model dense = model::load_model(fuzz::source_dir() / "scenarios/models/Llama-3.1-8B");
  static const model::Model moe = model::load_model(fuzz::source_dir() / "tests/fixtures/tiny/deepseek_v3");
  fuzz::expect_documented_errors([&] {
    const nlohmann::json j = core::parse_json_text(fuzz::text_of(data, size), "plan.json");
    const plan::Plan p = plan::plan_from_json(j, "plan.json");
    (void)plan::plan_from_json(plan::plan_to_json(p), "round trip");
    fuzz::expect_documented_errors([&] { plan::validate_plan(p, dense, 8, "plan.json"); });
    plan::validate_plan(p, moe, 16, "plan.json");
  });
  return 0;
}
