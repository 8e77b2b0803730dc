#include "serve/two_batch_overlap.h"

#include <algorithm>

namespace dayzero::serve {

std::pair<simulate::StepBatch, simulate::StepBatch> split_in_two(const simulate::StepBatch& b) {
  std::pair<simulate::StepBatch, simulate::StepBatch> out;
  out.first.decode_width = out.second.decode_width = b.decode_width;
  const size_t half = (b.decode_contexts.size() + 1) / 2;
  for (size_t i = 0; i < b.decode_contexts.size(); ++i)
    (i < half ? out.first : out.second).decode_contexts.push_back(b.decode_contexts[i]);
  for (const auto& chunk : b.prefills) {
    simulate::StepBatch& lighter = out.first.tokens() <= out.second.tokens() ? out.first : out.second;
    lighter.prefills.push_back(chunk);
  }
  return out;
}

bool overlaps_two_batches(const EngineProfile& e, const simulate::StepBatch& b) {
  // split_in_two leaves neither micro-batch empty exactly when the step holds two or
  // more sequences or chunks: no need to split it to know.
  if (!e.two_batch_overlap || b.decode_contexts.size() + b.prefills.size() < 2) return false;
  const int64_t threshold = b.prefills.empty() ? e.tbo_decode_token_threshold : e.tbo_prefill_token_threshold;
  return b.tokens() > threshold;
}

simulate::StepTime engine_step_time(simulate::Simulator& sim, const simulate::PreparedPlan& prepared,
                                    const simulate::StepBatch& b, const EngineProfile& e) {
  if (!overlaps_two_batches(e, b)) return sim.step_time(prepared, b);
  const auto [first, second] = split_in_two(b);
  const simulate::StepTime a = sim.step_time(prepared, first);
  const simulate::StepTime c = sim.step_time(prepared, second);
  constexpr auto kComm = static_cast<size_t>(simulate::TimeFigure::communication);
  const double comm_s = a.by_figure_s[kComm] + c.by_figure_s[kComm];
  const double compute_s = a.time_s + c.time_s - comm_s;
  const double layers = static_cast<double>(std::max<int64_t>(1, sim.model().config.num_layers));
  simulate::StepTime out = a;
  out.time_s = std::max(compute_s, comm_s) + std::min(compute_s, comm_s) / (2 * layers);
  const double scale = a.time_s + c.time_s > 0 ? out.time_s / (a.time_s + c.time_s) : 0;
  for (size_t f = 0; f < simulate::kTimeFigures; ++f)
    out.by_figure_s[f] = (a.by_figure_s[f] + c.by_figure_s[f]) * scale;
  for (auto& [kind, s] : out.by_kind_s) s = 0;
  for (const auto* part : {&a, &c})
    for (const auto& [kind, s] : part->by_kind_s) out.by_kind_s[kind] += s * scale;
  out.bubble_s = (a.bubble_s + c.bubble_s) * scale;
  out.tokens = b.tokens();
  return out;
}

}  // namespace dayzero::serve
