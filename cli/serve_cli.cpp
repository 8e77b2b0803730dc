// `dayzero serve`'s inputs: the plan served, the engine settings and the client
// (serve_cli.h).
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/serve_cli.h"
#include "core/data_dir.h"
#include "plan/plan_json.h"
#include "search/search.h"
#include "serve/trace.h"
#include "simulate/precisions.h"
#include "topology/device.h"

namespace dayzero::cli::serve_cli {

Served load_served(const ServeCliOptions& o) {
  Served s;
  serve::ServingCalibration cal = serve::load_serving_calibration(core::data_dir(), o.calibration);
  s.engines = std::move(cal.engines);
  if (!o.plan.empty()) {
    if (o.model.empty() || o.cluster.empty()) throw std::runtime_error("--plan needs --model and --cluster");
    s.model = std::make_unique<model::Model>(model::load_model(resolve_model_path(o.model)));
    topology::DeviceCatalog catalog = topology::DeviceCatalog::load_builtin(core::data_dir());
    if (!o.catalog.empty()) catalog.add_file(o.catalog);
    s.cluster = std::make_unique<topology::Cluster>(topology::Cluster::load(resolve_cluster_path(o.cluster), catalog));
    s.plan = plan::load_plan(o.plan);
    plan::validate_plan(s.plan, *s.model, s.cluster->num_devices(), o.plan);
    simulate::validate_plan_precisions(s.plan, s.cluster->device_spec(), o.plan);
    s.efficiency = cal.efficiency.for_device(s.cluster->device_spec().name);
    s.plan_source = o.plan;
    return s;
  }
  const auto file =
      search::resolve_scenario(o.scenario.empty() ? "deepseek-v3-h200-2x8" : o.scenario, core::data_dir());
  s.session = std::make_unique<search::Session>(search::load_session(file, core::data_dir(), o.catalog));
  search::SearchOptions so;  // the plans the engine served can hold at their batch
  const serve::EngineSettings settings = engine_settings(o, s.session.get());
  so.engine_memory = serve::engine_memory_rules(settings, s.session->model, s.session->cluster.device_spec());
  so.kernels = serve::engine_kernels(settings);
  const search::SearchResult r =
      search::run_search(s.session->scenario, s.session->model, s.session->cluster, s.session->efficiency, so);
  if (!r.feasible()) throw std::runtime_error(file.string() + ": no plan fits and meets the SLA (see dayzero plan)");
  s.plan = r.all[r.top.front()].plan;
  s.efficiency =
      o.calibration.empty() ? s.session->efficiency : cal.efficiency.for_device(s.session->cluster.device_spec().name);
  s.plan_source =
      "the best plan of " + s.session->scenario.name + " (" + search::layout_name(r.all[r.top.front()]) + ")";
  return s;
}

// The plan's speculative decoding (from its file, or the scenario), then the flags';
// checked as a plan file's "speculative" object is, and against the model.
void apply_speculative_flags(const ServeCliOptions& o, Served& s) {
  if (o.speculative.empty() && o.draft_tokens == 0 && o.acceptance.empty()) return;
  plan::SpeculativeDecoding& spec = s.plan.speculative;
  nlohmann::json j = plan::speculative_to_json(spec);
  if (!o.speculative.empty()) {
    if (o.speculative != plan::spec_method_name(spec.method)) j.erase("acceptance");  // another method's rates
    j["method"] = o.speculative;
    if (o.speculative != "none" && spec.draft_tokens == 0) j["draft_tokens"] = 1;
    if (o.speculative == "none") j = {{"method", "none"}};
  }
  if (o.draft_tokens > 0) j["draft_tokens"] = o.draft_tokens;
  if (!o.acceptance.empty()) j["acceptance"] = o.acceptance;
  spec =
      plan::speculative_from_json(j, "the command line (--speculative, --draft-tokens, --acceptance)", "speculative");
  plan::validate_plan(s.plan, s.m(), s.c().num_devices(), "the command line");
}

// The scenario's engine settings, then the settings file's, then the flags (each
// winning over the ones before).
serve::EngineSettings engine_settings(const ServeCliOptions& o, const search::Session* session) {
  serve::EngineSettings s = session ? session->scenario.engine : serve::EngineSettings{};
  if (!o.engine_settings_file.empty()) s.merge(plan::load_engine_settings(o.engine_settings_file));
  serve::EngineSettings flags;
  if (!o.engine.empty()) {
    flags.engine = serve::parse_engine(o.engine);
    if (!flags.engine)
      throw std::runtime_error("option '--engine' = \"" + o.engine + "\": one of vllm, sglang, trtllm");
  }
  if (o.token_budget > 0) flags.token_budget = o.token_budget;
  if (o.max_running > 0) flags.max_running = o.max_running;
  if (o.recv_interval > 0) flags.recv_interval_steps = o.recv_interval;
  if (o.cuda_graph_max_batch >= 0) flags.cuda_graph_max_batch = o.cuda_graph_max_batch;
  if (o.memory_fraction > 0) flags.memory_fraction = o.memory_fraction;
  if (o.two_batch_overlap) flags.two_batch_overlap = true;
  if (!o.policy.empty()) {
    flags.policy = serve::parse_prefill_policy(o.policy);
    if (!flags.policy)
      throw std::runtime_error("option '--policy' = \"" + o.policy + "\": one of mixed, prefill_first");
  }
  s.merge(flags);
  return s;
}

serve::EngineProfile engine_profile(const ServeCliOptions& o, const Served& s, const plan::Plan& p) {
  const serve::EngineSettings settings = engine_settings(o, s.session.get());
  return serve::profile_for(settings.engine.value_or(serve::Engine::vllm), p, s.m(), s.c().device_spec(), s.engines,
                            settings);
}

serve::ServeOptions serve_options(const ServeCliOptions& o, const Served& s) {
  const plan::Plan& p = s.plan;
  const search::Session* session = s.session.get();
  serve::ServeOptions so;
  so.engine = engine_profile(o, s, p);
  serve::Client& c = so.client;
  c.shape = {o.input_len > 0 ? o.input_len : p.workload.input_len,
             o.output_len > 0 ? o.output_len : p.workload.output_len,
             static_cast<int64_t>(static_cast<double>(p.workload.input_len) * p.workload.prefix_hit_rate)};
  const double scenario_rate = session ? session->scenario.request_rate_per_s : 0;
  if (!o.trace.empty()) {
    c.kind = serve::ClientKind::open_loop;
    c.trace = serve::read_trace(o.trace);
    if (o.requests > 0 && o.requests < static_cast<int64_t>(c.trace.size())) c.trace.resize(o.requests);
    const int64_t context = s.m().config.max_position_embeddings;
    for (size_t i = 0; i < c.trace.size(); ++i) {
      const serve::RequestShape& r = c.trace[i].shape;
      if (context > 0 && r.input_len + r.output_len > context)
        throw std::runtime_error(o.trace + ": request " + std::to_string(i + 1) + " of " + std::to_string(r.input_len) +
                                 " + " + std::to_string(r.output_len) +
                                 " tokens exceeds the model's max_position_embeddings " + std::to_string(context));
    }
    for (auto& r : c.trace) r.arrival_s /= o.trace_speed;
    c.requests = static_cast<int64_t>(c.trace.size());
    c.warmup = o.warmup;
    c.range_ratio = 1;
    return so;
  }
  if (o.rate > 0 || (o.concurrency == 0 && scenario_rate > 0)) {
    c.kind = serve::ClientKind::open_loop;
    c.rate_per_s = o.rate > 0 ? o.rate : scenario_rate;
  } else {
    c.concurrency = o.concurrency > 0 ? o.concurrency : p.workload.batch;
  }
  c.requests = o.requests > 0 ? o.requests : std::min(std::max<int64_t>(1000, 4 * c.concurrency), kMaxRequests);
  c.warmup = o.warmup;
  c.range_ratio = o.range_ratio;
  return so;
}

}  // namespace dayzero::cli::serve_cli
