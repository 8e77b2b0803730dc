// validate_plan: a plan's sizes against the model and the cluster.
#include <numeric>
#include <set>

#include "core/error.h"
#include "plan/plan_json.h"

namespace dayzero::plan {

namespace {

using core::InputError;

std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

void validate_plan(const Plan& p, const model::Model& m, uint32_t num_devices, const std::string& file) {
  const auto& c = m.config;
  auto fail = [&](const std::string& field, const std::string& value, const std::string& problem) {
    throw core::InputError(file, field, value, problem);
  };
  const int tp = p.attention.tp;
  if (c.num_heads % tp != 0)
    fail("attention.tp", str(tp), "does not divide the model's " + str(c.num_heads) + " attention heads");
  if (c.attention == model::AttentionKind::gqa && c.num_kv_heads % tp != 0 && tp % c.num_kv_heads != 0)
    fail("attention.tp", str(tp), "neither divides nor is a multiple of the " + str(c.num_kv_heads) + " KV heads");
  bool any_dense = false;
  for (int64_t l = 0; l < c.num_layers; ++l) any_dense = any_dense || !c.is_moe_layer(l);
  if (any_dense && c.intermediate_size % tp != 0)
    fail("attention.tp", str(tp), "does not divide the dense FFN width " + str(c.intermediate_size));

  if (!c.is_moe()) {
    if (p.moe.ep != 1 || p.moe.tp != 1) fail("moe.ep", str(p.moe.ep), "the model has no experts");
    if (p.offload.resident_experts >= 0)
      fail("offload.resident_experts", str(p.offload.resident_experts), "the model has no experts");
  } else {
    const int moe_ranks = p.moe.tp * p.moe.ep * p.moe.dp;
    if (moe_ranks != p.ranks_per_stage())
      fail("moe", "tp x ep x dp = " + str(moe_ranks),
           "must equal attention tp x dp = " + str(p.ranks_per_stage()) + " (MoE layers run on the same ranks)");
    if (c.moe.num_experts % p.moe.ep != 0)
      fail("moe.ep", str(p.moe.ep), "does not divide the " + str(c.moe.num_experts) + " routed experts");
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

  if (p.pp > c.num_layers) fail("pp", str(p.pp), "exceeds the " + str(c.num_layers) + " decoder layers");
  if (!p.stage_layers.empty()) {
    if (static_cast<int>(p.stage_layers.size()) != p.pp)
      fail("stage_layers", str(static_cast<int64_t>(p.stage_layers.size())) + " entries",
           "needs one entry per stage (pp = " + str(p.pp) + ")");
    const int64_t sum = std::accumulate(p.stage_layers.begin(), p.stage_layers.end(), int64_t{0});
    if (sum != c.num_layers)
      fail("stage_layers", "sum " + str(sum), "must equal the " + str(c.num_layers) + " decoder layers");
  }

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

  const int64_t replicas = static_cast<int64_t>(p.attention.dp);
  if (p.workload.batch < replicas)
    fail("workload.batch", str(p.workload.batch), "is smaller than the " + str(replicas) + " data-parallel replicas");
}

}  // namespace dayzero::plan
