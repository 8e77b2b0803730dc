#include "search/scenario.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/enum_names.h"
#include "core/error.h"
#include "core/json_fields.h"

namespace dayzero::search {

namespace {

using core::Fields;
using core::InputError;
using nlohmann::json;

std::vector<int> positive_ints(Fields& f, const std::string& key) {
  std::vector<int> out;
  for (int64_t v : f.opt_ints(key, 1)) {
    if (v > 1'000'000) f.fail(key, "entries are implausibly large");
    out.push_back(static_cast<int>(v));
  }
  return out;
}

// A search list: at most kMaxSpaceListEntries entries, none repeated (a repeat
// would only evaluate the same plans twice).
template <class T, class Show>
void check_list(Fields& f, const std::string& key, const std::vector<T>& v, Show&& show) {
  if (v.size() > kMaxSpaceListEntries)
    f.fail_value(key, std::to_string(v.size()) + " entries", "at most " + std::to_string(kMaxSpaceListEntries));
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (v[j] == v[i]) f.fail_value(key, show(v[i]), "listed twice");
}
template <class T>
void check_list(Fields& f, const std::string& key, const std::vector<T>& v) {
  check_list(f, key, v, [](const T& x) { return std::to_string(x); });
}

std::string weight_choice_names() {
  std::string s;
  for (WeightChoice w : kAllWeightChoices) s += (s.empty() ? "" : ", ") + std::string(weight_choice_name(w));
  return s;
}

std::filesystem::path resolve(const std::filesystem::path& base, const std::string& rel) {
  const std::filesystem::path p(rel);
  return p.is_absolute() ? p : base / p;
}

}  // namespace

std::string_view space_kind_name(SpaceKind k) { return k == SpaceKind::compact ? "compact" : "full"; }

std::string_view stage_split_name(StageSplit s) { return s == StageSplit::even ? "even" : "balanced"; }

std::optional<StageSplit> parse_stage_split(std::string_view s) {
  if (s == "even") return StageSplit::even;
  if (s == "balanced") return StageSplit::balanced;
  return std::nullopt;
}

std::string_view objective_name(Objective o) {
  switch (o) {
    case Objective::throughput_per_device: return "throughput_per_device";
    case Objective::latency: return "latency";
    case Objective::fewest_devices: return "fewest_devices";
  }
  return "?";
}

std::string_view weight_choice_name(WeightChoice w) {
  switch (w) {
    case WeightChoice::checkpoint: return "checkpoint";
    case WeightChoice::bf16: return "bf16";
    case WeightChoice::fp8: return "fp8";
    case WeightChoice::int8: return "int8";
    case WeightChoice::int8_w8a16: return "int8_w8a16";
    case WeightChoice::int4: return "int4";
    case WeightChoice::nvfp4: return "nvfp4";
    case WeightChoice::experts_int4: return "experts-int4";
  }
  return "?";
}

std::optional<WeightChoice> parse_weight_choice(std::string_view s) {
  return core::parse_enum(s, kAllWeightChoices, weight_choice_name);
}

std::filesystem::path resolve_scenario(const std::string& arg, const std::filesystem::path& data_dir) {
  std::error_code ec;
  if (std::filesystem::exists(arg, ec)) return arg;
  const auto bundled = data_dir / (arg + ".json");
  if (arg.find('/') == std::string::npos && std::filesystem::exists(bundled, ec)) return bundled;
  return arg;
}

namespace {

void read_workload(Fields& f, const std::string& file, Scenario& s) {
  const json* wj = f.opt_object("workload");
  if (!wj) f.fail("workload", "required field is missing");
  Fields w(*wj, file, "workload.");
  s.workload.input_len = w.req_int("input_len", 1, plan::kMaxSequenceTokens);
  s.workload.output_len = w.req_int("output_len", 1, plan::kMaxSequenceTokens);
  if (w.has("concurrency") && w.has("request_rate_per_s"))
    w.fail("request_rate_per_s", "give concurrency or request_rate_per_s, not both");
  s.workload.batch = w.opt_int("concurrency", 0, 1, plan::kMaxBatch);
  s.request_rate_per_s = w.opt_double("request_rate_per_s", 0);
  if (s.request_rate_per_s < 0) w.fail("request_rate_per_s", "must be positive");
  if (s.workload.batch == 0 && s.request_rate_per_s == 0)
    w.fail("concurrency", "give concurrency or request_rate_per_s");
  s.workload.prefix_hit_rate = w.opt_double("prefix_hit_rate", 0);
  if (s.workload.prefix_hit_rate < 0 || s.workload.prefix_hit_rate >= 1) w.fail("prefix_hit_rate", "must be in [0, 1)");
  s.workload.routing_zipf_s = w.opt_double("routing_zipf_s", 0);
  if (s.workload.routing_zipf_s < 0 || s.workload.routing_zipf_s > 5) w.fail("routing_zipf_s", "must be in [0, 5]");
  s.workload.routing_seed = static_cast<uint64_t>(w.opt_int("routing_seed", 0, 0));
  w.reject_unknown();
}

void read_sla_and_objective(Fields& f, const std::string& file, Scenario& s) {
  if (const json* sj = f.opt_object("sla")) {
    Fields sl(*sj, file, "sla.");
    s.sla.max_ttft_s = sl.opt_double("max_ttft_s", 0);
    s.sla.max_tpot_s = sl.opt_double("max_tpot_s", 0);
    if (s.sla.max_ttft_s < 0) sl.fail("max_ttft_s", "must be positive (or 0 for no limit)");
    if (s.sla.max_tpot_s < 0) sl.fail("max_tpot_s", "must be positive (or 0 for no limit)");
    sl.reject_unknown();
  }
  const std::string obj = f.opt_string("objective", "throughput_per_device");
  if (obj == "throughput_per_device") s.objective = Objective::throughput_per_device;
  else if (obj == "latency") s.objective = Objective::latency;
  else if (obj == "fewest_devices") s.objective = Objective::fewest_devices;
  else f.fail("objective", "unknown objective (throughput_per_device, latency, fewest_devices)");
}

void read_search_space(Fields& f, const std::string& file, SpaceOverrides& o) {
  const json* sj = f.opt_object("search");
  if (!sj) return;
  Fields sp(*sj, file, "search.");
  o.device_counts = positive_ints(sp, "device_counts");
  o.tp = positive_ints(sp, "tp");
  o.pp = positive_ints(sp, "pp");
  o.ep = positive_ints(sp, "ep");
  o.moe_dp = positive_ints(sp, "moe_dp");
  for (int64_t d : sp.opt_ints("draft_tokens", 0, plan::kMaxDraftTokens)) o.draft_tokens.push_back(static_cast<int>(d));
  for (int64_t r : sp.opt_ints("redundant_per_rank", 0, 64)) o.redundant_per_rank.push_back(static_cast<int>(r));
  for (const auto& d : sp.opt_strings("stage_splits")) {
    const auto split = parse_stage_split(d);
    if (!split) sp.fail_value("stage_splits", "\"" + d + "\"", "unknown (even, balanced)");
    o.stage_splits.push_back(*split);
  }
  o.disaggregated = sp.opt_bool("disaggregated", false);
  // Pools are paired from every fitting plan, each costed (only the memory rule prunes
  // single plans then): the compact space unless the scenario says otherwise
  // (scenario.h says why).
  const std::string kind = sp.opt_string("space", o.disaggregated ? "compact" : "full");
  if (kind == "compact") o.kind = SpaceKind::compact;
  else if (kind == "full") o.kind = SpaceKind::full;
  else sp.fail_value("space", "\"" + kind + "\"", "unknown (compact, full)");
  for (const auto& d : sp.opt_strings("weight_dtypes")) {
    const auto w = parse_weight_choice(d);
    if (!w) sp.fail_value("weight_dtypes", "\"" + d + "\"", "unknown (" + weight_choice_names() + ")");
    o.weight_dtypes.push_back(*w);
  }
  for (const auto& d : sp.opt_strings("kv_dtypes")) {
    const auto kv = plan::parse_kv_dtype(d);
    if (!kv || *kv == plan::KvDtype::fp32)  // fp32: the executor's reference, which no engine serves
      sp.fail_value("kv_dtypes", "\"" + d + "\"", "unknown (bf16, fp8)");
    o.kv_dtypes.push_back(*kv);
  }
  o.batches = sp.opt_ints("batches", 1, plan::kMaxBatch);
  o.token_budgets = sp.opt_ints("token_budgets", 1, plan::kMaxSequenceTokens);
  o.resident_expert_fractions = sp.opt_doubles("resident_expert_fractions", 0.0);
  for (double x : o.resident_expert_fractions)
    if (x <= 0 || x > 1) sp.fail("resident_expert_fractions", "entries must be in (0, 1]");
  check_list(sp, "device_counts", o.device_counts);
  check_list(sp, "tp", o.tp);
  check_list(sp, "pp", o.pp);
  check_list(sp, "ep", o.ep);
  check_list(sp, "moe_dp", o.moe_dp);
  check_list(sp, "draft_tokens", o.draft_tokens);
  check_list(sp, "redundant_per_rank", o.redundant_per_rank);
  check_list(sp, "stage_splits", o.stage_splits,
             [](StageSplit x) { return "\"" + std::string(stage_split_name(x)) + "\""; });
  check_list(sp, "weight_dtypes", o.weight_dtypes,
             [](WeightChoice w) { return "\"" + std::string(weight_choice_name(w)) + "\""; });
  check_list(sp, "kv_dtypes", o.kv_dtypes,
             [](plan::KvDtype k) { return "\"" + std::string(plan::kv_dtype_name(k)) + "\""; });
  check_list(sp, "batches", o.batches);
  check_list(sp, "token_budgets", o.token_budgets);
  check_list(sp, "resident_expert_fractions", o.resident_expert_fractions);
  o.tp_within_node = sp.opt_bool("tp_within_node", true);
  o.top = static_cast<int>(sp.opt_int("top", 10, 1, 1000));  // bounded before the narrowing
  sp.reject_unknown();
}

}  // namespace

Scenario load_scenario(const std::filesystem::path& path) {
  return scenario_from_json(core::read_json_file(path), path);
}

Scenario scenario_from_json(const json& j, const std::filesystem::path& path) {
  const std::string file = path.string();
  if (!j.is_object()) throw core::InputError(file, "", "", "a scenario must be a JSON object");
  Fields f(j, file);
  Scenario s;
  s.file = path;
  const auto base = path.parent_path();
  if (f.req_int("schema_version") != kScenarioSchemaVersion)
    f.fail("schema_version",
           "unsupported scenario schema (this DayZero reads version " + std::to_string(kScenarioSchemaVersion) + ")");
  s.name = f.opt_string("name", path.stem().string());
  s.description = f.opt_string("description", "");
  if (!f.has("model"))
    f.fail("model",
           "required field is missing (a config.json or model directory, relative to the scenario, or an "
           "inline config)");
  std::error_code ec;
  if (j["model"].is_object()) {
    s.inline_config = f.opt_object("model")->dump();
  } else {
    s.model_path = resolve(base, f.opt_string("model", ""));
    if (!std::filesystem::exists(s.model_path, ec))
      f.fail_value("model", "\"" + s.model_path.string() + "\"", "no such file or directory");
  }
  if (!f.has("cluster")) f.fail("cluster", "required field is missing (a cluster JSON file, relative to the scenario)");
  s.cluster_path = resolve(base, f.opt_string("cluster", ""));
  if (!std::filesystem::exists(s.cluster_path, ec))
    f.fail_value("cluster", "\"" + s.cluster_path.string() + "\"", "no such file");
  read_workload(f, file, s);
  read_sla_and_objective(f, file, s);
  read_search_space(f, file, s.space);
  if (const json* e = f.opt_object("engine")) s.engine = plan::engine_settings_from_json(*e, file, "engine.");
  if (const json* sp = f.opt_object("speculative"))
    s.speculative = plan::speculative_from_json(*sp, file, "speculative");
  for (int d : s.space.draft_tokens)
    if (d > 0 && s.speculative.method == plan::SpecMethod::none)
      throw InputError(file, "search.draft_tokens", std::to_string(d),
                       "drafts need a \"speculative\" object naming the method (mtp or eagle)");
  f.reject_unknown();
  return s;
}

model::Model load_scenario_model(const Scenario& s) {
  if (!s.inline_config.empty())
    return model::build_model(model::parse_config(s.inline_config, s.file.string() + " (model)"));
  return model::load_model(s.model_path);
}

}  // namespace dayzero::search
