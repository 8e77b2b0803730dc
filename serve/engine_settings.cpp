#include "serve/engine_settings.h"

#include <algorithm>

namespace dayzero::serve {

EngineProfile apply(EngineProfile p, const EngineSettings& s) {
  if (s.token_budget) p.token_budget = *s.token_budget;
  if (s.max_running) p.max_running = *s.max_running;
  if (s.recv_interval_steps) p.recv_interval_steps = *s.recv_interval_steps;
  if (s.kv_block_tokens) p.kv_block_tokens = *s.kv_block_tokens;
  if (s.cuda_graph_max_batch) p.cuda_graph_max_batch = *s.cuda_graph_max_batch;
  if (s.memory_fraction) p.memory.memory_fraction = *s.memory_fraction;
  if (s.policy) p.policy = *s.policy;
  if (s.chunked_prefill) p.chunked_prefill = *s.chunked_prefill;
  if (s.prefix_caching) p.prefix_caching = *s.prefix_caching;
  if (s.overlap_scheduling) p.overlap_scheduling = *s.overlap_scheduling;
  if (s.two_batch_overlap) p.two_batch_overlap = *s.two_batch_overlap;
  if (s.separate_activation_quant) p.separate_activation_quant = *s.separate_activation_quant;
  if (s.adp_balance) p.adp_balance.on = *s.adp_balance;
  if (s.adp_timeout_iters) p.adp_balance.timeout_iters = *s.adp_timeout_iters;
  if (s.adp_batching_wait_iters) p.adp_balance.batching_wait_iters = *s.adp_batching_wait_iters;
  if (s.batch_wait_timeout_iters) p.batch_waiting.timeout_iters = *s.batch_wait_timeout_iters;
  if (s.batch_wait_max_tokens_ratio) p.batch_waiting.max_tokens_ratio = *s.batch_wait_max_tokens_ratio;
  if (s.token_budget) p.memory.step_tokens = p.token_budget;
  if (s.max_running) p.memory.logit_rows = std::min(p.memory.logit_rows, p.max_running);
  return p;
}

EngineProfile profile_for(Engine e, const plan::Plan& p, const model::Model& m, const topology::DeviceSpec& dev,
                          const EngineOverheadTable& overheads, const EngineSettings& settings) {
  return apply(overheads.apply(default_profile(e, deployment_of(p, m, dev))), settings);
}

std::function<simulate::KvMemoryRule(const plan::Plan&)> engine_memory_rules(const EngineSettings& settings,
                                                                             const model::Model& m,
                                                                             const topology::DeviceSpec& dev) {
  return [settings, &m, dev](const plan::Plan& p) {
    return profile_for(settings.engine.value_or(Engine::vllm), p, m, dev, EngineOverheadTable{}, settings).memory;
  };
}

simulate::EngineKernels engine_kernels(const EngineSettings& settings) {
  return engine_kernels(apply(default_profile(settings.engine.value_or(Engine::vllm)), settings));
}

}  // namespace dayzero::serve
