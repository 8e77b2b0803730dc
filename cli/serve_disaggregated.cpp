// `dayzero serve --prefill-workers N --decode-workers M [--prefill-plan P]`: the plan
// served by a prefill pool and a decode pool (serve/disaggregated.h).
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "cli/format.h"
#include "cli/serve_cli.h"
#include "plan/plan_json.h"
#include "serve/disaggregated.h"
#include "simulate/precisions.h"

namespace dayzero::cli::serve_cli {

namespace {

std::string layout(const plan::Plan& p) {
  std::ostringstream o;
  o << p.world_size() << " GPU" << (p.world_size() > 1 ? "s" : "") << ": pp" << p.pp << " tp" << p.attention.tp << " dp"
    << p.attention.dp;
  if (p.moe.ep > 1 || p.moe.tp > 1) o << " | ep" << p.moe.ep << " etp" << p.moe.tp;
  return o.str();
}

}  // namespace

bool wants_disaggregated(const ServeCliOptions& o) {
  return o.prefill_workers > 0 || o.decode_workers > 0 || !o.prefill_plan.empty();
}

void run_disaggregated(const ServeCliOptions& o, Served& s) {
  serve::DisaggOptions d;
  d.decode.plan = s.plan;
  d.prefill.plan = s.plan;
  if (!o.prefill_plan.empty()) {
    d.prefill.plan = plan::load_plan(o.prefill_plan);
    plan::validate_plan(d.prefill.plan, s.m(), s.c().num_devices(), o.prefill_plan);
    simulate::validate_plan_precisions(d.prefill.plan, s.c().device_spec(), o.prefill_plan);
  }
  d.prefill.workers = static_cast<int>(std::max<int64_t>(1, o.prefill_workers));
  d.decode.workers = static_cast<int>(std::max<int64_t>(1, o.decode_workers));
  serve::ServeOptions so = serve_options(o, s);
  // The plan's batch is one worker's: the deployment keeps every decode worker's in flight.
  if (o.concurrency == 0 && so.client.kind == serve::ClientKind::closed_loop) {
    so.client.concurrency = s.plan.workload.batch * d.decode.workers;
    if (o.requests == 0) so.client.requests = std::max<int64_t>(1000, 4 * so.client.concurrency);
  }
  d.decode.engine = so.engine;
  d.prefill.engine = engine_profile(o, s, d.prefill.plan);
  d.client = so.client;
  simulate::Simulator sim(s.m(), s.c(), s.efficiency);
  serve::ServeResult r;
  try {
    r = serve::simulate_disaggregated(sim, d);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("serve: ") + e.what());
  }
  std::ostringstream out;
  if (o.json) {
    nlohmann::json j = result_json(r, so, s.engines.for_engine(so.engine.engine), s.plan.speculative);
    j["disaggregated"] = {{"prefill_workers", d.prefill.workers},
                          {"prefill_plan", plan::plan_to_json(d.prefill.plan)},
                          {"decode_workers", d.decode.workers},
                          {"devices", serve::disaggregated_devices(d)},
                          {"kv_transfer_s", r.kv_transfer_s}};
    out << j.dump(2) << '\n';
  } else {
    print_result(out, s, so, r);
    out << "  disaggregated: " << d.prefill.workers << " prefill worker" << (d.prefill.workers > 1 ? "s" : "") << " of "
        << layout(d.prefill.plan) << " and " << d.decode.workers << " decode worker"
        << (d.decode.workers > 1 ? "s" : "") << " of " << layout(d.decode.plan) << " ("
        << serve::disaggregated_devices(d) << " of " << s.c().num_devices()
        << " GPUs); each request's KV cache moved once, " << fixed(r.kv_transfer_s * 1e3, 2)
        << " ms on average (in its TTFT)\n";
  }
  std::cout << out.str() << std::flush;
}

}  // namespace dayzero::cli::serve_cli
