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

bool wants_disaggregated(const ServeCliOptions& o, const plan::Plan& p) {
  return p.disaggregated.on() || o.prefill_workers > 0 || o.decode_workers > 0 || !o.prefill_plan.empty();
}

namespace {

// The plan's pools with the flags' changes: a plan without pools gets one prefill
// worker of its own layout and one decode worker, then the flags.
plan::Plan with_pool_flags(const ServeCliOptions& o, const Served& s, plan::Plan p) {
  plan::Disaggregation& d = p.disaggregated;
  if (o.prefill_workers == 0 && o.decode_workers == 0 && o.prefill_plan.empty()) return p;
  if (!d.on()) d = {1, 1, {p.pp, p.attention, p.moe, p.workload.batch}};
  if (o.prefill_workers > 0) d.prefill_workers = static_cast<int>(o.prefill_workers);
  if (o.decode_workers > 0) d.decode_workers = static_cast<int>(o.decode_workers);
  if (!o.prefill_plan.empty()) {
    const plan::Plan w = plan::load_plan(o.prefill_plan);
    d.prefill = {w.pp, w.attention, w.moe, w.workload.batch};
  }
  plan::validate_plan(p, s.m(), s.c().num_devices(),
                      "the command line (--prefill-workers, --decode-workers, --prefill-plan)");
  return p;
}

}  // namespace

serve::ServeResult serve_with(const ServeCliOptions& o, const Served& s, const plan::Plan& plan,
                              simulate::Simulator& sim, const serve::Client& client) {
  const plan::Plan p = wants_disaggregated(o, plan) ? with_pool_flags(o, s, plan) : plan;
  return serve::serve_plan(
      sim, p, [&](const plan::Plan& worker) { return engine_profile(o, s, worker); }, client);
}

void run_disaggregated(const ServeCliOptions& o, Served& s) {
  const plan::Plan p = with_pool_flags(o, s, s.plan);
  serve::DisaggOptions d;
  d.prefill.plan = p.prefill_worker();
  d.decode.plan = p.decode_worker();
  d.prefill.workers = p.disaggregated.prefill_workers;
  d.decode.workers = p.disaggregated.decode_workers;
  s.plan = d.decode.plan;  // the engine settings and the client are the decode worker's
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
    j["disaggregated"] = plan::plan_to_json(p).at("disaggregated");
    j["disaggregated"]["devices"] = serve::disaggregated_devices(d);
    j["disaggregated"]["kv_transfer_s"] = r.kv_transfer_s;
    j["disaggregated"]["handoff_s"] = d.decode.engine.handoff_s;
    out << j.dump(2) << '\n';
  } else {
    print_result(out, s, so, r);
    out << "  disaggregated: " << d.prefill.workers << " prefill worker" << (d.prefill.workers > 1 ? "s" : "") << " of "
        << layout(d.prefill.plan) << " and " << d.decode.workers << " decode worker"
        << (d.decode.workers > 1 ? "s" : "") << " of " << layout(d.decode.plan) << " ("
        << serve::disaggregated_devices(d) << " of " << s.c().num_devices()
        << " GPUs); each request's KV cache moved once, " << fixed(r.kv_transfer_s * 1e3, 2)
        << " ms on average, after the engine's handoff of " << fixed(d.decode.engine.handoff_s * 1e3, 1)
        << " ms (both in its TTFT)\n";
  }
  std::cout << out.str() << std::flush;
}

}  // namespace dayzero::cli::serve_cli
