// validate_plan: a plan's sizes against the model and the cluster; check_workload_sizes:
// its memory sizes against 64 bits.
#include <algorithm>
#include <numeric>
#include <set>
#include <stdexcept>

#include "core/arith.h"
#include "core/error.h"
#include "plan/plan_json.h"

namespace dayzero::plan {

namespace {

using core::InputError;

std::string str(int64_t v) { return std::to_string(v); }

// Throws the plan file's error naming one field.
struct Fail {
  const std::string& file;
  [[noreturn]] void operator()(const std::string& field, const std::string& value, const std::string& problem) const {
    throw InputError(file, field, value, problem);
  }
};

// attention.tp against the heads and the dense FFN width.
void check_attention_tp(const Plan& p, const model::ModelConfig& c, const Fail& fail) {
  const int tp = p.attention.tp;
  if (c.num_heads % tp != 0)
    fail("attention.tp", str(tp), "does not divide the model's " + str(c.num_heads) + " attention heads");
  if (c.attention == model::AttentionKind::gqa && c.num_kv_heads % tp != 0 && tp % c.num_kv_heads != 0)
    fail("attention.tp", str(tp), "neither divides nor is a multiple of the " + str(c.num_kv_heads) + " KV heads");
  bool any_dense = false;
  for (int64_t l = 0; l < c.num_layers; ++l) any_dense = any_dense || !c.is_moe_layer(l);
  if (any_dense && c.intermediate_size % tp != 0)
    fail("attention.tp", str(tp), "does not divide the dense FFN width " + str(c.intermediate_size));
}

// The experts' layout against the model's experts (none, for a dense model).
void check_experts(const Plan& p, const model::ModelConfig& c, const Fail& fail) {
  const int tp = p.attention.tp;
  if (!c.is_moe()) {
    if (p.moe.ep != 1 || p.moe.tp != 1) fail("moe.ep", str(p.moe.ep), "the model has no experts");
    if (p.moe.redundant_experts != 0)
      fail("moe.redundant_experts", str(p.moe.redundant_experts), "the model has no experts");
    if (p.offload.resident_experts >= 0)
      fail("offload.resident_experts", str(p.offload.resident_experts), "the model has no experts");
  } else {
    const int moe_ranks = p.moe.tp * p.moe.ep * p.moe.dp;
    if (moe_ranks != p.ranks_per_stage())
      fail("moe", "tp x ep x dp = " + str(moe_ranks),
           "must equal attention tp x dp = " + str(p.ranks_per_stage()) + " (MoE layers run on the same ranks)");
    if (c.moe.num_experts % p.moe.ep != 0)
      fail("moe.ep", str(p.moe.ep), "does not divide the " + str(c.moe.num_experts) + " routed experts");
    if (p.moe.redundant_experts > 0) {
      if (p.moe.ep < 2)
        fail("moe.redundant_experts", str(p.moe.redundant_experts), "needs expert parallelism (moe.ep > 1)");
      if (p.moe.redundant_experts % p.moe.ep != 0)
        fail("moe.redundant_experts", str(p.moe.redundant_experts),
             "must be a multiple of moe.ep = " + str(p.moe.ep) + " (the same slots on every EP rank)");
      if (p.moe.redundant_experts > c.moe.num_experts)
        fail("moe.redundant_experts", str(p.moe.redundant_experts),
             "exceeds the " + str(c.moe.num_experts) + " routed experts");
    }
    if (c.moe.expert_intermediate % p.moe.tp != 0)
      fail("moe.tp", str(p.moe.tp), "does not divide the expert FFN width " + str(c.moe.expert_intermediate));
    if (c.moe.num_shared_experts > 0 && (c.moe.num_shared_experts * c.moe.expert_intermediate) % tp != 0)
      fail("attention.tp", str(tp), "does not divide the shared experts' FFN width");
    if (p.offload.resident_experts > c.moe.num_experts)
      fail("offload.resident_experts", str(p.offload.resident_experts),
           "exceeds the " + str(c.moe.num_experts) + " experts per layer");
    if (!p.workload.expert_counts.empty() && static_cast<int64_t>(p.workload.expert_counts.size()) != c.moe.num_experts)
      fail("workload.expert_counts", str(static_cast<int64_t>(p.workload.expert_counts.size())) + " entries",
           "needs one count per routed expert (" + str(c.moe.num_experts) + ")");
  }
}

// Speculative decoding and the pipeline stages against the model's layers.
void check_layers(const Plan& p, const model::ModelConfig& c, const Fail& fail) {
  if (p.speculative.method == SpecMethod::mtp && c.mtp_layers == 0)
    fail("speculative.method", "\"mtp\"", "the model has no multi-token-prediction layer (use eagle)");

  if (p.pp > c.num_layers) fail("pp", str(p.pp), "exceeds the " + str(c.num_layers) + " decoder layers");
  if (!p.stage_layers.empty()) {
    if (static_cast<int>(p.stage_layers.size()) != p.pp)
      fail("stage_layers", str(static_cast<int64_t>(p.stage_layers.size())) + " entries",
           "needs one entry per stage (pp = " + str(p.pp) + ")");
    const int64_t sum = std::accumulate(p.stage_layers.begin(), p.stage_layers.end(), int64_t{0});
    if (sum != c.num_layers)
      fail("stage_layers", "sum " + str(sum), "must equal the " + str(c.num_layers) + " decoder layers");
  }
}

// The ranks against the cluster's devices.
void check_devices(const Plan& p, uint32_t num_devices, const Fail& fail) {
  const int world = p.world_size();
  if (static_cast<uint32_t>(world) > num_devices)
    fail("pp", "pp x tp x dp = " + str(world), "needs more ranks than the cluster's " + str(num_devices) + " devices");
  if (!p.devices.empty()) {
    if (static_cast<int>(p.devices.size()) != world)
      fail("devices", str(static_cast<int64_t>(p.devices.size())) + " entries",
           "needs one device per rank (" + str(world) + ")");
    std::set<uint32_t> seen;
    for (uint32_t d : p.devices) {
      if (d >= num_devices) fail("devices", str(d), "is not a device of the cluster (0.." + str(num_devices - 1) + ")");
      if (!seen.insert(d).second) fail("devices", str(d), "is used by two ranks");
    }
  }
}

}  // namespace

void validate_disaggregation(const Plan& p, const model::Model& m, uint32_t num_devices, const std::string& file);

void validate_plan(const Plan& p, const model::Model& m, uint32_t num_devices, const std::string& file) {
  if (p.disaggregated.on()) return validate_disaggregation(p, m, num_devices, file);
  const Fail fail{file};
  check_attention_tp(p, m.config, fail);
  check_experts(p, m.config, fail);
  check_layers(p, m.config, fail);
  check_devices(p, num_devices, fail);

  const int64_t replicas = static_cast<int64_t>(p.attention.dp);
  if (p.workload.batch < replicas)
    fail("workload.batch", str(p.workload.batch), "is smaller than the " + str(replicas) + " data-parallel replicas");
  check_workload_sizes(p.workload, m, p.kv_block_tokens, p.prefill_chunk_tokens, kv_elem_bytes(p.dtypes.kv_cache),
                       file);
}

// Each worker as a plan of its own (a prefill worker's errors name its fields under
// "disaggregated.prefill."), then the pools together on the cluster.
void validate_disaggregation(const Plan& p, const model::Model& m, uint32_t num_devices, const std::string& file) {
  const Disaggregation& d = p.disaggregated;
  if (d.decode_workers < 1)
    throw InputError(file, "disaggregated.decode_workers", str(d.decode_workers), "needs at least one decode worker");
  if (!p.devices.empty())
    throw InputError(file, "devices", str(static_cast<int64_t>(p.devices.size())) + " entries",
                     "a disaggregated plan places its pools itself (prefill workers on the first devices)");
  validate_plan(p.decode_worker(), m, num_devices, file);
  try {
    validate_plan(p.prefill_worker(), m, num_devices, file);
  } catch (const InputError& e) {
    const bool own = e.field().rfind("pp", 0) == 0 || e.field().rfind("attention", 0) == 0 ||
                     e.field().rfind("moe", 0) == 0 || e.field() == "workload.batch";
    if (!own) throw;
    const std::string field = e.field() == "workload.batch" ? "batch" : e.field();
    throw InputError(file, "disaggregated.prefill." + field, e.value(), e.problem());
  }
  const int64_t used = static_cast<int64_t>(p.devices_used());
  if (used > static_cast<int64_t>(num_devices))
    throw InputError(file, "disaggregated", str(used) + " devices",
                     "the prefill and decode workers need more devices than the cluster's " + str(num_devices));
}

void check_workload_sizes(const Workload& w, const model::Model& m, int64_t kv_block_tokens, int64_t step_tokens,
                          int64_t kv_bytes, const std::string& file) {
  using core::checked_add;
  using core::checked_mul;
  const auto& c = m.config;
  const std::string value =
      "batch " + str(w.batch) + ", input_len " + str(w.input_len) + ", output_len " + str(w.output_len);
  try {
    // Upper bounds of the memory model's terms (simulate/memory.cpp): every sequence's
    // KV at full length on every layer, no sliding window, no tensor parallelism.
    const int64_t tokens = core::round_up(checked_add(w.input_len, w.output_len), kv_block_tokens);
    (void)checked_mul(checked_mul(m.kv_bytes_per_token(kv_bytes), tokens), w.batch);
  } catch (const std::overflow_error&) {
    throw InputError(file, "workload", value, "the KV cache of the batch at full length overflows 64 bits");
  }
  try {
    constexpr int64_t kWidestElem = 4;  // FP32 logits; activations are 16-bit
    const int64_t ffn = std::max(c.intermediate_size, c.moe.expert_intermediate);
    const int64_t width = checked_add(checked_mul(3, c.hidden_size), checked_mul(2, ffn));
    int64_t bytes = checked_mul(checked_mul(step_tokens, width), kWidestElem);
    bytes = checked_add(bytes, checked_mul(checked_mul(w.batch, c.vocab_size), kWidestElem));
    const int64_t routed = checked_mul(checked_mul(2, step_tokens), std::max<int64_t>(1, c.moe.experts_per_token));
    (void)checked_add(bytes, checked_mul(checked_mul(routed, c.hidden_size), kWidestElem));
  } catch (const std::overflow_error&) {
    throw InputError(file, "workload", value + ", step of " + str(step_tokens) + " tokens",
                     "the activations of a step overflow 64 bits");
  }
}

}  // namespace dayzero::plan
