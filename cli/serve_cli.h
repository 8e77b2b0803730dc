#pragma once
// Internal to cli/: what `dayzero serve` reads from its options (the plan, the engine
// settings, the client) and how it prints a result, shared by the aggregated and the
// disaggregated forms (cmd_serve.cpp, serve_disaggregated.cpp).

#include <iosfwd>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "model/model.h"
#include "plan/plan.h"
#include "search/session.h"
#include "serve/calibration_files.h"
#include "serve/engine_settings.h"
#include "serve/simulation.h"
#include "topology/cluster.h"

namespace dayzero::cli::serve_cli {

// Bounds, so that a typo cannot start hours of simulation: a thousand times the
// 10,000 requests bench_serve serves in under a second (concurrency: a plan's
// largest batch, plan::kMaxBatch).
constexpr int64_t kMaxRequests = 10'000'000;

struct ServeCliOptions {
  std::string scenario, model, cluster, plan, catalog, engine, calibration, engine_settings_file, policy, trace;
  std::string speculative;
  std::string prefill_plan;  // disaggregated: the prefill workers' layout and batch (default: the plan's)
  int64_t prefill_workers = 0, decode_workers = 0;  // disaggregated: > 0
  int64_t draft_tokens = 0;
  std::vector<double> acceptance;
  double trace_speed = 1;
  int64_t concurrency = 0, requests = 0, input_len = 0, output_len = 0, warmup = 0, recv_interval = 0;
  int64_t token_budget = 0, max_running = 0;
  int64_t cuda_graph_max_batch = -1;  // -1: the engine's
  double rate = 0, range_ratio = 1.0, memory_fraction = 0;
  bool two_batch_overlap = false;
  bool json = false;
};

// What is served: a model, a cluster, the efficiency figures and one plan.
struct Served {
  std::unique_ptr<search::Session> session;  // scenario form (owns model and cluster)
  std::unique_ptr<model::Model> model;       // plan form
  std::unique_ptr<topology::Cluster> cluster;
  simulate::Efficiency efficiency;
  serve::EngineOverheadTable engines;
  plan::Plan plan;
  std::string plan_source;
  const model::Model& m() const { return session ? session->model : *model; }
  const topology::Cluster& c() const { return session ? session->cluster : *cluster; }
};

Served load_served(const ServeCliOptions& o);
// The plan's speculative decoding (from its file, or the scenario), then the flags'.
void apply_speculative_flags(const ServeCliOptions& o, Served& s);
// The scenario's engine settings, then the settings file's, then the flags.
serve::EngineSettings engine_settings(const ServeCliOptions& o, const search::Session* session);
// The engine profile for `p` with the settings, and the client.
serve::ServeOptions serve_options(const ServeCliOptions& o, const Served& s);
serve::EngineProfile engine_profile(const ServeCliOptions& o, const Served& s, const plan::Plan& p);

nlohmann::json result_json(const serve::ServeResult& r, const serve::ServeOptions& so,
                           const serve::EngineOverheads& overheads, const plan::SpeculativeDecoding& spec);
void print_result(std::ostream& out, const Served& s, const serve::ServeOptions& so, const serve::ServeResult& r);

// `serve` with a prefill and a decode pool: a disaggregated plan, or the flags
// (--prefill-workers, --decode-workers, --prefill-plan), which change its pools.
bool wants_disaggregated(const ServeCliOptions& o, const plan::Plan& p);
// `plan` (s.plan, or another plan on s's model and cluster) served to `client` with the
// options' engine settings: one pool, or its pools when it is disaggregated or the
// flags ask for them (`dayzero sweep`'s points). The result carries no time series.
// Throws std::invalid_argument when it cannot be served.
serve::ServeResult serve_with(const ServeCliOptions& o, const Served& s, const plan::Plan& plan,
                              simulate::Simulator& sim, const serve::Client& client);
void run_disaggregated(const ServeCliOptions& o, Served& s);

}  // namespace dayzero::cli::serve_cli
