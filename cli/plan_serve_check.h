#pragma once
// `dayzero plan --serve-check K`: the search ranks its whole space with the analytic
// steady state (simulate/steady_state.cpp); the request-level serving simulation then
// serves the K best plans (and the K best disaggregated ones when the search has
// any: search.disaggregated) at the scenario's concurrency (each plan's batch, every
// decode worker's for a disaggregated plan, the first
// wave left out) or request rate, checks the SLA on its p90 TTFT and TPOT, and re-ranks them by the same
// objective on the served figures. How often the two orders disagree is reported.

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <vector>

#include "cli/calibration_note.h"
#include "search/search.h"
#include "search/session.h"
#include "serve/engine.h"
#include "serve/simulation.h"

namespace dayzero::cli {

struct ServeCheck {
  serve::Engine engine = serve::Engine::vllm;
  struct Row {
    size_t index = 0;     // into SearchResult::all
    int steady_rank = 0;  // 1-based, the search's
    int served_rank = 0;  // 1-based among the checked plans that meet the SLA when served; 0: misses it
    serve::ServeResult served;
    bool meets_sla = false;
    std::string sla_miss;
  };
  std::vector<Row> rows;            // in the search's order
  int64_t pairs = 0, agreeing = 0;  // pairs of plans that meet the SLA both ways, and those in the same order
  bool same_best = false;           // the search's best is the served best
  // The workload's prompt, and the longest whose TTFT the engine's calibration was
  // fitted to (serve/engine_overheads.h; 0: not recorded): beyond it TTFT extrapolates.
  int64_t prompt_tokens = 0, longest_fitted_prompt_tokens = 0;
  bool prompt_beyond_calibration() const { return prompt_beyond(prompt_tokens, longest_fitted_prompt_tokens); }
};

ServeCheck check_with_serving(const search::Session& session, const search::SearchResult& r, int k,
                              serve::Engine engine);
void print_serve_check(std::ostream& out, const ServeCheck& c, const search::SearchResult& r);
nlohmann::json serve_check_json(const ServeCheck& c, const search::SearchResult& r);

}  // namespace dayzero::cli
