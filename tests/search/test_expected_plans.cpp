// Expected outputs: for every bundled scenario (scenarios/*.json), the plan the
// search recommends and its headline figures are pinned in
// tests/search/expected/<scenario>.json, searched as `dayzero plan` does (held to
// the scenario's engine's memory share). A cost-model change that flips a
// recommendation or moves a figure fails here, in review, rather than silently.
//
// Updating the files is a deliberate act: run the test with
//   DAYZERO_UPDATE_EXPECTED=1 build/tests/search/test_expected_plans
// and commit the rewritten files with the change that explains them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "search/search.h"
#include "search/session.h"
#include "serve/engine_settings.h"

namespace dayzero::search {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Relative tolerance on predicted figures: the search is deterministic, so this
// only absorbs floating-point differences between compilers and libms.
constexpr double kRelTol = 1e-9;

json plan_summary(const Evaluated& e) {
  const auto& p = e.prediction;
  return {{"layout", layout_name(e)},
          {"batch", e.plan.workload.batch},
          {"max_memory_bytes", e.max_memory_bytes},
          {"ttft_s", p.ttft_s},
          {"tpot_s", p.tpot_s},
          {"tokens_per_s", p.throughput_tokens_per_s},
          {"tokens_per_s_per_device", p.throughput_tokens_per_s_per_device}};
}

// What is pinned: how many plans were considered, costed, pruned (by rule), fit and met the SLA, the top
// plan with its figures, the layouts of the next ones, the front's size, and the
// suggestions when nothing is feasible.
json summarize(const std::string& name, const SearchResult& r) {
  size_t fits = 0, meets = 0;
  for (const auto& e : r.all) {
    fits += e.prediction.fits ? 1 : 0;
    meets += e.meets_sla ? 1 : 0;
  }
  json j = {{"scenario", name},
            {"plans_considered", r.candidates},
            {"plans_costed", r.evaluated},
            {"plans_pruned", {{"memory", r.pruned.memory}, {"ttft", r.pruned.ttft}, {"tpot", r.pruned.tpot}}},
            {"plans_fitting", fits},
            {"plans_meeting_sla", meets},
            {"pareto_plans", r.pareto.size()}};
  if (r.feasible()) {
    j["top_plan"] = plan_summary(r.all[r.top.front()]);
    j["top_layouts"] = json::array();
    for (size_t k = 0; k < r.top.size() && k < 5; ++k) j["top_layouts"].push_back(layout_name(r.all[r.top[k]]));
  } else {
    j["suggestions"] = r.suggestions;
  }
  return j;
}

// Compares recursively; numbers within kRelTol, everything else exactly.
void expect_same(const json& want, const json& got, const std::string& path) {
  if (want.is_number_float() || got.is_number_float()) {
    ASSERT_TRUE(got.is_number()) << path << ": expected a number, got " << got.dump();
    const double a = want.get<double>(), b = got.get<double>();
    EXPECT_LE(std::abs(a - b), kRelTol * std::max(std::abs(a), std::abs(b)))
        << path << ": expected " << a << ", got " << b;
    return;
  }
  if (want.is_object()) {
    ASSERT_TRUE(got.is_object()) << path;
    for (const auto& [k, v] : want.items()) {
      ASSERT_TRUE(got.contains(k)) << path << "." << k << " is missing";
      expect_same(v, got.at(k), path + "." + k);
    }
    for (const auto& [k, v] : got.items()) EXPECT_TRUE(want.contains(k)) << path << "." << k << " is new: " << v.dump();
    return;
  }
  if (want.is_array()) {
    ASSERT_TRUE(got.is_array()) << path;
    ASSERT_EQ(want.size(), got.size()) << path << ": expected " << want.dump() << ", got " << got.dump();
    for (size_t i = 0; i < want.size(); ++i) expect_same(want[i], got[i], path + "[" + std::to_string(i) + "]");
    return;
  }
  EXPECT_EQ(want, got) << path;
}

std::vector<fs::path> bundled_scenarios() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(DAYZERO_DATA_DIR))
    if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ExpectedPlans, EveryBundledScenarioRecommendsWhatItsFileSays) {
  const bool update = std::getenv("DAYZERO_UPDATE_EXPECTED") != nullptr;
  const auto scenarios = bundled_scenarios();
  ASSERT_GE(scenarios.size(), 5u);
  for (const auto& file : scenarios) {
    const std::string name = file.stem().string();
    SCOPED_TRACE(name);
    const Session l = load_session(file, DAYZERO_DATA_DIR);
    SearchOptions o;  // as `dayzero plan` searches: plans the scenario's engine can hold at their batch
    o.engine_memory = serve::engine_memory_rules(l.scenario.engine, l.model, l.cluster.device_spec());
    o.kernels = serve::engine_kernels(l.scenario.engine);
    const json got = summarize(name, run_search(l.scenario, l.model, l.cluster, l.efficiency, o));
    const fs::path expected = fs::path(DAYZERO_EXPECTED_DIR) / (name + ".json");
    if (update) {
      std::ofstream(expected) << got.dump(2) << '\n';
      continue;
    }
    std::ifstream in(expected);
    ASSERT_TRUE(in) << expected << " is missing: every bundled scenario pins its expected plan "
                    << "(write it with DAYZERO_UPDATE_EXPECTED=1)";
    const json want = json::parse(in);
    expect_same(want, got, name);
  }
}

}  // namespace
}  // namespace dayzero::search
