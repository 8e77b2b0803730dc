#pragma once
// The release-day report of a scenario (`dayzero report`, the GUI's "Save report…"):
// the search, the chosen plan simulated, served and swept over concurrency, and the
// Markdown page — recommendation, minimum needs, plans compared, memory per device,
// curves, every engine's launch — that the charts (drawn by the GUI's widgets) sit in.

#include <filesystem>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "search/search.h"
#include "search/session.h"
#include "serve/sweep.h"

namespace dayzero::report {

struct Inputs {
  std::shared_ptr<const search::Session> session;
  search::SearchResult search;
  simulate::Prediction best_full;  // the chosen plan, every rank
  serve::Engine engine = serve::Engine::vllm;
  serve::ServeResult served;  // the chosen plan served at its batch
  std::string served_error;   // why it could not be served (e.g. the engine's memory rule leaves no KV cache)
  serve::Sweep sweep;         // the chosen plan over concurrency
  std::string model_id;       // the Hugging Face id the launches load
  const search::Evaluated& best() const { return search.all[search.top.front()]; }
};

// Searches the scenario, simulates and serves its best plan, sweeps it over concurrency
// with `engine` ("" = the scenario's, else vLLM). Throws std::runtime_error when no
// plan fits and meets the SLA.
Inputs prepare(const std::filesystem::path& scenario_file, const std::string& catalog, const std::string& engine);
// The same over a search already run (the GUI's).
Inputs prepare(std::shared_ptr<const search::Session> session, search::SearchResult result, const std::string& engine);

void write_markdown(std::ostream& out, const Inputs& in, bool charts);
// report.md (naming memory.png, pareto.png and sweep.png when `charts`), sweep.json and
// the chosen plan.json in `dir`, each written atomically.
void write_report(const Inputs& in, const std::filesystem::path& dir, bool charts);

}  // namespace dayzero::report
