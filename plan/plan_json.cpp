#include "plan/plan_json.h"

#include <limits>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "core/json_fields.h"

namespace dayzero::plan {

namespace {

using core::Fields;
using core::InputError;
using nlohmann::json;

const json& object_or_empty(Fields& f, const std::string& key) {
  static const json empty = json::object();
  const json* o = f.opt_object(key);
  return o ? *o : empty;
}

// A dtype field: one of `all` by name; an unknown name lists the accepted ones.
template <class E, size_t N, class Name>
E dtype(Fields& f, const std::string& key, E fallback, const E (&all)[N], Name name) {
  const std::string s = f.opt_string(key, std::string(name(fallback)));
  if (const auto e = core::parse_enum(s, all, name)) return *e;
  f.fail_value(key, "\"" + s + "\"", "unknown dtype (one of: " + core::enum_names(all, name) + ")");
}

// Ranks of one parallel dimension, and of a whole plan: a million, 61x topology::kMaxDevices.
constexpr int64_t kMaxRanks = 1'000'000;

int as_int(int64_t v, Fields& f, const std::string& key) {
  if (v > kMaxRanks) f.fail(key, "is implausibly large");
  return static_cast<int>(v);
}

// A layout's "pp", "attention" and "moe" fields (the plan's, or a prefill worker's).
void read_layout(Fields& f, const std::string& file, const std::string& prefix, int& pp, AttentionLayout& attention,
                 MoeLayout& moe) {
  pp = as_int(f.opt_int("pp", 1), f, "pp");
  {
    Fields a(object_or_empty(f, "attention"), file, prefix + "attention.");
    attention.tp = as_int(a.opt_int("tp", 1), a, "tp");
    attention.dp = as_int(a.opt_int("dp", 1), a, "dp");
    a.reject_unknown();
  }
  {
    Fields m(object_or_empty(f, "moe"), file, prefix + "moe.");
    moe.tp = as_int(m.opt_int("tp", 1), m, "tp");
    moe.ep = as_int(m.opt_int("ep", 1), m, "ep");
    moe.dp = as_int(m.opt_int("dp", 1), m, "dp");
    moe.redundant_experts = as_int(m.opt_int("redundant_experts", 0, 0), m, "redundant_experts");
    m.reject_unknown();
  }
  // Each factor is at most 10^6, so the int64 products are exact; the rank arithmetic
  // (Plan::world_size and the rest) is in int.
  if (int64_t{pp} * attention.tp * attention.dp > kMaxRanks)
    f.fail("pp", "pp x attention.tp x attention.dp = " + std::to_string(int64_t{pp} * attention.tp * attention.dp) +
                     " ranks is implausibly large");
  if (int64_t{moe.tp} * moe.ep * moe.dp > kMaxRanks)
    f.fail("moe", "moe.tp x moe.ep x moe.dp = " + std::to_string(int64_t{moe.tp} * moe.ep * moe.dp) +
                      " ranks is implausibly large");
}

Disaggregation read_disaggregation(const json& j, const std::string& file) {
  if (!j.is_object()) throw InputError(file, "disaggregated", j.dump(), "expected an object");
  Fields f(j, file, "disaggregated.");
  Disaggregation d;
  d.prefill_workers = as_int(f.req_int("prefill_workers", 1, kMaxRanks), f, "prefill_workers");
  d.decode_workers = as_int(f.req_int("decode_workers", 1, kMaxRanks), f, "decode_workers");
  const json* prefill = f.opt_object("prefill");
  if (!prefill) f.fail("prefill", "is missing: the prefill worker's layout");
  Fields l(*prefill, file, "disaggregated.prefill.");
  read_layout(l, file, "disaggregated.prefill.", d.prefill.pp, d.prefill.attention, d.prefill.moe);
  d.prefill.batch = l.opt_int("batch", d.prefill.attention.dp, 1, kMaxBatch);
  l.reject_unknown();
  f.reject_unknown();
  return d;
}

json layout_json(int pp, const AttentionLayout& a, const MoeLayout& m) {
  json moe = {{"tp", m.tp}, {"ep", m.ep}, {"dp", m.dp}};
  if (m.redundant_experts > 0) moe["redundant_experts"] = m.redundant_experts;
  return {{"pp", pp}, {"attention", {{"tp", a.tp}, {"dp", a.dp}}}, {"moe", moe}};
}

}  // namespace

Plan plan_from_json(const json& j, const std::string& file) {
  if (!j.is_object()) throw core::InputError(file, "", "", "a plan must be a JSON object");
  Fields f(j, file);
  Plan p;
  p.schema_version = static_cast<int>(f.req_int("schema_version", 1, std::numeric_limits<int>::max()));
  if (p.schema_version != kPlanSchemaVersion)
    f.fail("schema_version",
           "unsupported plan schema (this DayZero reads version " + std::to_string(kPlanSchemaVersion) + ")");
  p.model = f.opt_string("model", "");
  p.cluster = f.opt_string("cluster", "");
  read_layout(f, file, "", p.pp, p.attention, p.moe);
  for (int64_t d : f.opt_ints("devices", 0, UINT32_MAX)) p.devices.push_back(static_cast<uint32_t>(d));
  p.stage_layers = f.opt_ints("stage_layers", 1, model::kMaxLayers);
  {
    Fields d(object_or_empty(f, "dtypes"), file, "dtypes.");
    p.dtypes.attention = dtype(d, "attention", p.dtypes.attention, model::kAllPrecisions, model::precision_name);
    p.dtypes.dense_mlp = dtype(d, "dense_mlp", p.dtypes.dense_mlp, model::kAllPrecisions, model::precision_name);
    p.dtypes.experts = dtype(d, "experts", p.dtypes.experts, model::kAllPrecisions, model::precision_name);
    p.dtypes.embedding = dtype(d, "embedding", p.dtypes.embedding, model::kAllPrecisions, model::precision_name);
    p.dtypes.kv_cache = dtype(d, "kv_cache", p.dtypes.kv_cache, kPlanKvDtypes, kv_dtype_name);
    p.dtypes.activations = dtype(d, "activations", p.dtypes.activations, kPlanActivationDtypes, activation_dtype_name);
    d.reject_unknown();
  }
  p.kv_block_tokens = f.opt_int("kv_block_tokens", p.kv_block_tokens, 1, kMaxSequenceTokens);
  p.prefill_chunk_tokens = f.opt_int("prefill_chunk_tokens", p.prefill_chunk_tokens, 1, kMaxSequenceTokens);
  {
    Fields o(object_or_empty(f, "offload"), file, "offload.");
    p.offload.resident_experts = o.opt_int("resident_experts", -1, -1);
    o.reject_unknown();
  }
  {
    Fields w(object_or_empty(f, "workload"), file, "workload.");
    p.workload.batch = w.opt_int("batch", p.workload.batch, 1, kMaxBatch);
    p.workload.input_len = w.opt_int("input_len", p.workload.input_len, 1, kMaxSequenceTokens);
    p.workload.output_len = w.opt_int("output_len", p.workload.output_len, 1, kMaxSequenceTokens);
    p.workload.prefix_hit_rate = w.opt_double("prefix_hit_rate", 0);
    if (p.workload.prefix_hit_rate < 0 || p.workload.prefix_hit_rate >= 1)
      w.fail("prefix_hit_rate", "must be in [0, 1)");
    p.workload.routing_zipf_s = w.opt_double("routing_zipf_s", 0);
    if (p.workload.routing_zipf_s < 0) w.fail("routing_zipf_s", "must be >= 0");
    p.workload.expert_counts = w.opt_doubles("expert_counts", 0.0);
    p.workload.routing_seed = static_cast<uint64_t>(w.opt_int("routing_seed", 0, 0));
    w.reject_unknown();
  }
  p.comm_overlap = f.opt_double("comm_overlap", 0);
  if (p.comm_overlap < 0 || p.comm_overlap > 1) f.fail("comm_overlap", "must be in [0, 1]");
  if (const json* spec = f.opt_object("speculative")) p.speculative = speculative_from_json(*spec, file, "speculative");
  if (const json* d = f.opt_object("disaggregated")) p.disaggregated = read_disaggregation(*d, file);
  (void)f.opt_object("prediction");  // written by plan/simulate; not an input
  f.reject_unknown();
  return p;
}

Plan load_plan(const std::filesystem::path& file) { return plan_from_json(core::read_json_file(file), file.string()); }

json plan_to_json(const Plan& p) {
  json j = {{"schema_version", p.schema_version},
            {"model", p.model},
            {"cluster", p.cluster},
            {"pp", p.pp},
            {"attention", {{"tp", p.attention.tp}, {"dp", p.attention.dp}}},
            {"moe", {{"tp", p.moe.tp}, {"ep", p.moe.ep}, {"dp", p.moe.dp}}},
            {"dtypes",
             {{"attention", model::precision_name(p.dtypes.attention)},
              {"dense_mlp", model::precision_name(p.dtypes.dense_mlp)},
              {"experts", model::precision_name(p.dtypes.experts)},
              {"embedding", model::precision_name(p.dtypes.embedding)},
              {"kv_cache", kv_dtype_name(p.dtypes.kv_cache)},
              {"activations", activation_dtype_name(p.dtypes.activations)}}},
            {"kv_block_tokens", p.kv_block_tokens},
            {"prefill_chunk_tokens", p.prefill_chunk_tokens},
            {"offload", {{"resident_experts", p.offload.resident_experts}}},
            {"workload",
             {{"batch", p.workload.batch},
              {"input_len", p.workload.input_len},
              {"output_len", p.workload.output_len},
              {"prefix_hit_rate", p.workload.prefix_hit_rate},
              {"routing_zipf_s", p.workload.routing_zipf_s},
              {"routing_seed", p.workload.routing_seed}}},
            {"comm_overlap", p.comm_overlap}};
  if (p.moe.redundant_experts > 0) j["moe"]["redundant_experts"] = p.moe.redundant_experts;
  if (!p.devices.empty()) j["devices"] = p.devices;
  if (!p.stage_layers.empty()) j["stage_layers"] = p.stage_layers;
  if (!p.workload.expert_counts.empty()) j["workload"]["expert_counts"] = p.workload.expert_counts;
  if (p.speculative.on()) j["speculative"] = speculative_to_json(p.speculative);
  if (p.disaggregated.on()) {
    const WorkerLayout& l = p.disaggregated.prefill;
    json prefill = layout_json(l.pp, l.attention, l.moe);
    prefill["batch"] = l.batch;
    j["disaggregated"] = {{"prefill_workers", p.disaggregated.prefill_workers},
                          {"decode_workers", p.disaggregated.decode_workers},
                          {"prefill", prefill}};
  }
  return j;
}

void save_plan(const std::filesystem::path& file, const Plan& p, const json* prediction) {
  json j = plan_to_json(p);
  if (prediction) j["prediction"] = *prediction;
  core::write_file_atomically(file, j.dump(2) + "\n", "the plan");
}

}  // namespace dayzero::plan
