// One plan served request by request (served_plan.h).
#include "report/served_plan.h"

#include <algorithm>

#include "serve/disaggregated.h"
#include "serve/engine_settings.h"

namespace dayzero::report {

namespace {

serve::ServeOptions options_for(const search::Session& s, const plan::Plan& p, serve::Engine engine,
                                const serve::EngineOverheadTable& overheads, const plan::EngineSettings& settings) {
  serve::ServeOptions so;
  // The settings (the scenario's) over the defaults.
  so.engine = serve::profile_for(engine, p, s.model, s.cluster.device_spec(), overheads, settings);
  serve::Client& c = so.client;
  c.shape = {p.workload.input_len, p.workload.output_len,
             static_cast<int64_t>(static_cast<double>(p.workload.input_len) * p.workload.prefix_hit_rate)};
  if (s.scenario.request_rate_per_s > 0) {
    c.kind = serve::ClientKind::open_loop;
    c.rate_per_s = s.scenario.request_rate_per_s;
    c.requests = 1000;
  } else {
    // Steady load: the first wave, every request arriving at once on an idle engine,
    // is left out of the statistics.
    c.concurrency = p.workload.batch;
    c.warmup = c.concurrency;
    c.requests = std::max<int64_t>(200, 5 * c.concurrency);
  }
  so.max_points = 0;
  return so;
}

}  // namespace

serve::ServeResult serve_planned(simulate::Simulator& sim, const search::Session& s, const plan::Plan& p,
                                 serve::Engine engine, const serve::EngineOverheadTable& overheads,
                                 const plan::EngineSettings& settings) {
  serve::Client client = options_for(s, p.decode_worker(), engine, overheads, settings).client;
  if (p.disaggregated.on() && client.kind == serve::ClientKind::closed_loop) {
    client.concurrency = p.workload.batch * p.disaggregated.decode_workers;
    client.warmup = client.concurrency;
    client.requests = std::max<int64_t>(200, 5 * client.concurrency);
  }
  const auto profile_of = [&](const plan::Plan& worker) {
    return options_for(s, worker, engine, overheads, settings).engine;
  };
  return serve::serve_plan(sim, p, profile_of, client);
}

}  // namespace dayzero::report
