#include "cli/plan_serve_check.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/format.h"
#include "core/data_dir.h"
#include "report/served_plan.h"
#include "search/ranking.h"
#include "serve/calibration_files.h"
#include "serve/disaggregated.h"
#include "serve/engine_settings.h"
#include "simulate/simulator.h"

namespace dayzero::cli {

namespace {

// The plans to check: the k best single pools, and the k best disaggregated plans
// when the search has any, in the search's order.
std::vector<size_t> plans_to_check(const search::SearchResult& r, search::Objective objective, int k) {
  const bool pools =
      std::any_of(r.all.begin(), r.all.end(), [](const search::Evaluated& e) { return e.plan.disaggregated.on(); });
  if (!pools) return {r.top.begin(), r.top.begin() + std::min<size_t>(r.top.size(), static_cast<size_t>(k))};
  std::vector<size_t> out;
  int single = 0, split = 0;
  for (size_t i : search::rank_plans(r.all, objective, 1000)) {
    int& n = r.all[i].plan.disaggregated.on() ? split : single;
    if (n < k) ++n, out.push_back(i);
  }
  return out;
}

// The plan as the search saw it, with the served figures in place of the steady state's.
search::Evaluated served_view(const search::Evaluated& e, const serve::ServeResult& r) {
  search::Evaluated v = e;
  v.prediction.ttft_s = r.ttft_s.mean;
  v.prediction.tpot_s = r.tpot_s.mean;
  v.prediction.throughput_tokens_per_s = r.output_tokens_per_s;
  v.prediction.throughput_tokens_per_s_per_device = r.output_tokens_per_s / static_cast<double>(e.plan.devices_used());
  return v;
}

std::string sla_miss(const search::Sla& sla, const serve::ServeResult& r) {
  if (sla.max_ttft_s > 0 && r.ttft_s.p90 > sla.max_ttft_s)
    return "p90 TTFT over " + fixed(sla.max_ttft_s * 1e3, 0) + " ms";
  if (sla.max_tpot_s > 0 && r.tpot_s.p90 > sla.max_tpot_s)
    return "p90 TPOT over " + fixed(sla.max_tpot_s * 1e3, 1) + " ms";
  return "";
}

void rank_served(ServeCheck& c, const search::SearchResult& r, search::Objective objective) {
  std::vector<size_t> ok;
  std::vector<search::Evaluated> views;
  for (const auto& row : c.rows) views.push_back(served_view(r.all[row.index], row.served));
  for (size_t i = 0; i < c.rows.size(); ++i)
    if (c.rows[i].meets_sla) ok.push_back(i);
  std::vector<size_t> order = ok;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return search::better(views[a], views[b], objective); });
  for (size_t k = 0; k < order.size(); ++k) c.rows[order[k]].served_rank = static_cast<int>(k + 1);
  for (size_t a = 0; a < ok.size(); ++a)
    for (size_t b = a + 1; b < ok.size(); ++b) {  // ok is in the search's order: a above b
      ++c.pairs;
      if (c.rows[ok[a]].served_rank < c.rows[ok[b]].served_rank) ++c.agreeing;
    }
  c.same_best = !c.rows.empty() && c.rows.front().served_rank == 1;
}

}  // namespace

ServeCheck check_with_serving(const search::Session& session, const search::SearchResult& r, int k,
                              serve::Engine engine) {
  ServeCheck c;
  c.engine = engine;
  const serve::EngineOverheadTable overheads = serve::load_serving_calibration(core::data_dir(), "").engines;
  c.prompt_tokens = session.scenario.workload.input_len;
  c.longest_fitted_prompt_tokens = overheads.for_engine(engine).longest_prompt_tokens;
  simulate::Simulator sim(session.model, session.cluster, session.efficiency);
  const std::vector<size_t> checked = plans_to_check(r, session.scenario.objective, std::max(k, 0));
  for (size_t i = 0; i < checked.size(); ++i) {
    ServeCheck::Row row;
    row.index = checked[i];
    row.steady_rank = static_cast<int>(i + 1);
    const plan::Plan& p = r.all[row.index].plan;
    try {
      row.served = report::serve_planned(sim, session, p, engine, overheads, session.scenario.engine);
      row.sla_miss = sla_miss(session.scenario.sla, row.served);
    } catch (const std::invalid_argument& e) {
      row.sla_miss = std::string("cannot be served: ") + e.what();
    }
    row.meets_sla = row.sla_miss.empty();
    c.rows.push_back(std::move(row));
  }
  rank_served(c, r, session.scenario.objective);
  return c;
}

void print_serve_check(std::ostream& out, const ServeCheck& c, const search::SearchResult& r) {
  size_t width = 52;
  for (const auto& row : c.rows) width = std::max(width, search::layout_name(r.all[row.index]).size() + 1);
  out << "\nChecked by the serving simulation (" << serve::engine_name(c.engine)
      << ", each plan's batch in flight; SLA on p90):\n";
  out << "  " << pad_left("rank", 4) << pad_left("served", 8) << "  " << pad_right("layout", width)
      << pad_left("TTFT ms", 10) << pad_left("p90", 10) << pad_left("TPOT ms", 10) << pad_left("p90", 9)
      << pad_left("tok/s/dev", 11) << "  SLA\n";
  for (const auto& row : c.rows) {
    const auto& e = r.all[row.index];
    out << "  " << pad_left(std::to_string(row.steady_rank), 4)
        << pad_left(row.served_rank ? std::to_string(row.served_rank) : "-", 8) << "  "
        << pad_right(search::layout_name(e), width);
    if (row.served.ttft_s.count > 0)
      out << pad_left(fixed(row.served.ttft_s.mean * 1e3, 1), 10) << pad_left(fixed(row.served.ttft_s.p90 * 1e3, 1), 10)
          << pad_left(fixed(row.served.tpot_s.mean * 1e3, 2), 10) << pad_left(fixed(row.served.tpot_s.p90 * 1e3, 2), 9)
          << pad_left(fixed(row.served.output_tokens_per_s / static_cast<double>(e.plan.devices_used()), 0), 11);
    else out << pad_left("-", 50);
    out << "  " << (row.meets_sla ? "meets" : row.sla_miss) << '\n';
  }
  std::string eager;  // the plans whose decode steps ran past the engine's CUDA graphs
  for (const auto& row : c.rows)
    if (row.served.eager_steps > 0)
      eager += (eager.empty() ? "" : ", ") + std::to_string(row.steady_rank) + " (" +
               fixed(100.0 * static_cast<double>(row.served.eager_steps) / static_cast<double>(row.served.steps), 0) +
               " % of steps)";
  if (!eager.empty())
    out << "  note: plans " << eager << " decode past " << serve::engine_name(c.engine)
        << "'s CUDA graph limit, which the engine runs eagerly and DayZero prices as graph steps (serve prints the "
           "limit and its flag)\n";
  print_prompt_note(out, c.engine, c.prompt_tokens, c.longest_fitted_prompt_tokens,
                    ", which favours plans with more prefill capacity");
  const bool any = std::any_of(c.rows.begin(), c.rows.end(), [](const ServeCheck::Row& row) { return row.meets_sla; });
  if (!any) out << "  none of the " << c.rows.size() << " plans checked meets the SLA when served request by request\n";
  else
    out << "  the search's order and the served order agree on " << c.agreeing << " of " << c.pairs
        << " pairs of plans meeting the SLA both ways; the search's best is " << (c.same_best ? "" : "not ")
        << "the served best\n";
}

nlohmann::json serve_check_json(const ServeCheck& c, const search::SearchResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : c.rows) {
    const auto& s = row.served;
    const plan::Plan& p = r.all[row.index].plan;
    rows.push_back({{"layout", search::layout_name(r.all[row.index])},
                    {"devices", p.devices_used()},
                    {"batch", p.workload.batch},  // a disaggregated plan's: each decode worker's
                    {"steady_rank", row.steady_rank},
                    {"served_rank", row.served_rank},
                    {"meets_sla", row.meets_sla},
                    {"sla_miss", row.sla_miss},
                    {"ttft_s", {{"mean", s.ttft_s.mean}, {"p90", s.ttft_s.p90}}},
                    {"tpot_s", {{"mean", s.tpot_s.mean}, {"p90", s.tpot_s.p90}}},
                    {"output_tokens_per_s", s.output_tokens_per_s},
                    {"eager_steps", s.eager_steps},
                    {"steps", s.steps}});
  }
  return {{"engine", serve::engine_name(c.engine)},
          {"plans", rows},
          {"pairs", c.pairs},
          {"agreeing_pairs", c.agreeing},
          {"same_best", c.same_best},
          {"prompt_beyond_calibration", c.prompt_beyond_calibration()}};
}

}  // namespace dayzero::cli
