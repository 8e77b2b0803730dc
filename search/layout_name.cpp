// A plan's layout as one line of text (search.h, layout_name): what tables, reports
// and the GUI name a plan by.
#include <string>

#include "plan/plan_json.h"
#include "search/search.h"

namespace dayzero::search {

namespace {

std::string worker_layout(int pp, const plan::AttentionLayout& a, const plan::MoeLayout& m,
                          const std::vector<int64_t>& stage_layers) {
  std::string s = "pp" + std::to_string(pp);
  if (!stage_layers.empty()) {
    s += " [";
    for (size_t i = 0; i < stage_layers.size(); ++i) {
      if (i > 0) s += '/';
      s += std::to_string(stage_layers[i]);
    }
    s += "]";
  }
  s += " tp" + std::to_string(a.tp) + " dp" + std::to_string(a.dp);
  const bool experts_split = m.ep > 1 || m.tp > 1 || m.dp != a.tp * a.dp;
  if (experts_split) s += " | ep" + std::to_string(m.ep) + " etp" + std::to_string(m.tp);
  if (experts_split && m.dp > 1) s += " edp" + std::to_string(m.dp);
  if (m.redundant_experts > 0) s += " eplb+" + std::to_string(m.redundant_experts);
  return s;
}

}  // namespace

std::string layout_name(const Evaluated& e) {
  const auto& p = e.plan;
  std::string s = std::to_string(p.devices_used()) + " dev: ";
  if (p.disaggregated.on()) {
    const plan::WorkerLayout& l = p.disaggregated.prefill;
    s += std::to_string(p.disaggregated.prefill_workers) + "x prefill " + worker_layout(l.pp, l.attention, l.moe, {}) +
         " + " + std::to_string(p.disaggregated.decode_workers) + "x decode ";
  }
  s += worker_layout(p.pp, p.attention, p.moe, p.stage_layers);
  s +=
      " | " + std::string(weight_choice_name(e.weights)) + " kv=" + std::string(plan::kv_dtype_name(p.dtypes.kv_cache));
  if (p.offload.resident_experts >= 0) s += " hot=" + std::to_string(p.offload.resident_experts);
  if (p.speculative.on())
    s += " " + std::string(plan::spec_method_name(p.speculative.method)) + "x" +
         std::to_string(p.speculative.draft_tokens);
  if (p.prefill_chunk_tokens != plan::Plan{}.prefill_chunk_tokens)
    s += " budget=" + std::to_string(p.prefill_chunk_tokens);
  return s;
}

}  // namespace dayzero::search
