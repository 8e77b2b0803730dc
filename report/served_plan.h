#pragma once
// One plan served request by request, as `plan --serve-check`, `import` and the
// report serve it: each worker with its engine profile (`settings` over the engine's
// defaults and the calibrated overheads), at the scenario's request rate, or at the
// plan's batch (every decode worker's, for a disaggregated plan) with the first wave
// left out.

#include "plan/engine_settings.h"
#include "search/session.h"
#include "serve/engine.h"
#include "serve/engine_overheads.h"
#include "serve/simulation.h"
#include "simulate/simulator.h"

namespace dayzero::report {

serve::ServeResult serve_planned(simulate::Simulator& sim, const search::Session& s, const plan::Plan& p,
                                 serve::Engine engine, const serve::EngineOverheadTable& overheads,
                                 const plan::EngineSettings& settings);

}  // namespace dayzero::report
