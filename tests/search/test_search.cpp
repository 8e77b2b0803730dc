// The plan search: every returned plan divides and fits, the front is a true
// Pareto front, results do not depend on the thread count, infeasible scenarios
// say what would work.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include "core/error.h"
#include "plan/plan_json.h"
#include "search/search.h"
#include "search/session.h"
#include "search_helpers.h"
#include "simulate/simulator.h"
#include "topology/device.h"

namespace dayzero::search {
namespace {

using testing::bundled;
using testing::load;
using testing::Loaded;
using testing::write_scenario;

bool dominates(const Evaluated& a, const Evaluated& b) {
  const auto& x = a.prediction;
  const auto& y = b.prediction;
  return x.tpot_s <= y.tpot_s && x.throughput_tokens_per_s_per_device >= y.throughput_tokens_per_s_per_device &&
         (x.tpot_s < y.tpot_s || x.throughput_tokens_per_s_per_device > y.throughput_tokens_per_s_per_device);
}

TEST(Search, ReturnedPlansDivideFitAndMeetTheSla) {
  for (const char* name :
       {"deepseek-v3-h200-2x8", "llama-3.1-70b-h100x8", "qwen3-30b-a3b-h100x1", "3t-moe-acc300-1x8"}) {
    SCOPED_TRACE(name);
    const Loaded l = bundled(name);
    const SearchResult r = run_search(l.scenario, l.model, l.cluster, {});
    ASSERT_TRUE(r.feasible());
    std::vector<size_t> returned = r.top;
    returned.insert(returned.end(), r.pareto.begin(), r.pareto.end());
    for (size_t i : returned) {
      const Evaluated& e = r.all[i];
      EXPECT_NO_THROW(plan::validate_plan(e.plan, l.model, l.cluster.num_devices(), "returned"));
      EXPECT_TRUE(e.prediction.fits);
      EXPECT_TRUE(e.meets_sla);
      for (const auto& rank : e.prediction.ranks) EXPECT_LE(rank.total_bytes, rank.capacity_bytes);
      if (l.scenario.sla.max_tpot_s > 0) {
        EXPECT_LE(e.prediction.tpot_s, l.scenario.sla.max_tpot_s);
      }
    }
    EXPECT_EQ(r.reasons.size(), r.top.size());
  }
}

// SearchOptions::engine_memory: the 3T model on 8 x 300 GB cards fills them to within a
// few GB, so a serving engine that takes 0.9 of the memory leaves its best plans no KV
// room for their batch. With the rule, every plan kept as fitting holds its batch in
// the room the engine leaves, and the best plan differs from the best without it.
TEST(Search, EngineMemoryRuleHoldsEveryFittingPlansBatch) {
  const Loaded l = bundled("3t-moe-acc300-1x8");
  const simulate::KvMemoryRule rule{0.9, false, 8192, 256};
  SearchOptions o;
  int asked = 0;
  std::mutex mu;
  o.engine_memory = [&](const plan::Plan&) {
    const std::lock_guard<std::mutex> lock(mu);
    ++asked;
    return rule;
  };
  const SearchResult with = run_search(l.scenario, l.model, l.cluster, {}, o);
  const SearchResult without = run_search(l.scenario, l.model, l.cluster, {});
  ASSERT_TRUE(with.feasible());
  ASSERT_TRUE(without.feasible());
  EXPECT_GT(asked, 0);
  for (const Evaluated& e : with.all) {
    if (!e.prediction.fits) continue;
    EXPECT_TRUE(e.prediction.engine_kv.checked);
    EXPECT_GE(e.prediction.engine_kv.free_bytes, e.prediction.engine_kv.needed_bytes);
  }
  simulate::Simulator sim(l.model, l.cluster, {});
  simulate::SimulateOptions so;
  so.engine_memory = &rule;
  const plan::Plan& best_without = without.all[without.top.front()].plan;
  EXPECT_FALSE(sim.simulate(best_without, so).fits);  // what the rule changes
  EXPECT_TRUE(sim.simulate(with.all[with.top.front()].plan, so).fits);
}

// search.disaggregated adds prefill / decode pairs after the single pools (which stay
// as they were); each is a valid plan on the cluster, and its prediction, put
// together from its workers' cached ones, is what simulating the plan gives.
TEST(Search, DisaggregatedPairsAreValidAndCostedAsSimulated) {
  Loaded l = bundled("deepseek-v3-h200-4x8-chat-disagg");
  ASSERT_TRUE(l.scenario.space.disaggregated);
  const SearchResult with = run_search(l.scenario, l.model, l.cluster, {});
  l.scenario.space.disaggregated = false;
  const SearchResult without = run_search(l.scenario, l.model, l.cluster, {});
  // The single pools come first: with pools searched, only the memory rule prunes
  // them (a plan that misses the SLA alone may still serve as a pool), so there are
  // at least as many as without.
  size_t singles = 0;
  while (singles < with.all.size() && !with.all[singles].plan.disaggregated.on()) ++singles;
  ASSERT_GE(singles, without.all.size());
  ASSERT_GT(with.all.size(), singles);
  // Every pair considered is kept or pruned (the pairs that miss the SLA, or that
  // better plans beat, once a plan meets it: the exhaustive comparison is test_space's).
  EXPECT_EQ(static_cast<int64_t>(with.candidates), with.evaluated + with.pruned.total());
  const auto pairs_considered = static_cast<int64_t>(with.candidates - without.candidates);
  const auto pairs_kept = static_cast<int64_t>(with.all.size() - singles);
  EXPECT_GT(pairs_considered, 10 * pairs_kept);
  simulate::Simulator sim(l.model, l.cluster);
  size_t checked = 0;
  const size_t stride = std::max<size_t>(1, static_cast<size_t>(pairs_kept) / 40);
  for (size_t i = singles; i < with.all.size(); ++i) {
    const Evaluated& e = with.all[i];
    ASSERT_TRUE(e.plan.disaggregated.on());
    EXPECT_LE(e.plan.devices_used(), 32);
    if ((i - singles) % stride != 0) continue;  // a sample: validating and simulating all takes seconds
    ++checked;
    EXPECT_NO_THROW(plan::validate_plan(e.plan, l.model, l.cluster.num_devices(), "pair"));
    const simulate::Prediction p = sim.simulate(e.plan, {false, false, false});
    EXPECT_NEAR(p.ttft_s, e.prediction.ttft_s, 1e-9 * p.ttft_s);
    EXPECT_NEAR(p.tpot_s, e.prediction.tpot_s, 1e-9 * p.tpot_s);
    EXPECT_NEAR(p.throughput_tokens_per_s, e.prediction.throughput_tokens_per_s, 1e-9 * p.throughput_tokens_per_s);
  }
  EXPECT_GT(checked, 10u);
  ASSERT_TRUE(with.feasible());
  EXPECT_TRUE(with.all[with.top.front()].plan.disaggregated.on());  // at 4K / 1K on 32 H200s, pools win
}

TEST(Search, ParetoFrontIsTrue) {
  const Loaded l = bundled("deepseek-v3-h200-2x8");
  const SearchResult r = run_search(l.scenario, l.model, l.cluster, {});
  ASSERT_FALSE(r.pareto.empty());
  std::vector<bool> on_front(r.all.size(), false);
  for (size_t i : r.pareto) on_front[i] = true;
  for (size_t i = 0; i < r.all.size(); ++i) {
    if (!r.all[i].meets_sla) continue;
    bool dominated = false;
    for (size_t j = 0; j < r.all.size() && !dominated; ++j)
      dominated = r.all[j].meets_sla && dominates(r.all[j], r.all[i]);
    if (on_front[i]) {
      EXPECT_FALSE(dominated) << "front plan " << i << " is dominated";
    } else {
      // Off the front: dominated, or a tie with a front plan on both axes.
      bool tied = false;
      for (size_t f : r.pareto)
        tied = tied || (r.all[f].prediction.tpot_s == r.all[i].prediction.tpot_s &&
                        r.all[f].prediction.throughput_tokens_per_s_per_device ==
                            r.all[i].prediction.throughput_tokens_per_s_per_device);
      EXPECT_TRUE(dominated || tied) << "plan " << i << " should be on the front";
    }
  }
  for (size_t k = 1; k < r.pareto.size(); ++k)
    EXPECT_LT(r.all[r.pareto[k - 1]].prediction.tpot_s, r.all[r.pareto[k]].prediction.tpot_s);
}

TEST(Search, SameResultWhateverTheThreads) {
  const Loaded l = bundled("llama-3.1-70b-h100x8");
  SearchOptions one, two;
  one.threads = 1;
  two.threads = 2;
  const SearchResult a = run_search(l.scenario, l.model, l.cluster, {}, one);
  const SearchResult b = run_search(l.scenario, l.model, l.cluster, {}, two);
  ASSERT_EQ(a.all.size(), b.all.size());
  EXPECT_EQ(a.top, b.top);
  EXPECT_EQ(a.pareto, b.pareto);
  EXPECT_EQ(a.reasons, b.reasons);
  for (size_t i = 0; i < a.all.size(); ++i) EXPECT_EQ(a.all[i].prediction.tpot_s, b.all[i].prediction.tpot_s);
}

// Where the serving engine's memory share is what leaves no plan fitting, the advice
// says so (the room and the need), and does not ask for more devices, which the
// device memory does not need. Llama-3.1-70B on 8 H100s (80 GiB each) holds at least
// 70 GB / 8 = 8.8 GB of FP8 weights per GPU, more than a memory fraction of 0.1
// (8.6 GB): no KV room at all.
TEST(Search, NothingFitsTheEnginesShareSaysSo) {
  const Loaded l = bundled("llama-3.1-70b-h100x8");
  SearchOptions o;
  o.engine_memory = [](const plan::Plan&) { return simulate::KvMemoryRule{0.1, false, 8192, 256}; };
  const SearchResult r = run_search(l.scenario, l.model, l.cluster, {}, o);
  ASSERT_FALSE(r.feasible());
  ASSERT_FALSE(r.suggestions.empty());
  EXPECT_NE(r.suggestions.front().find("the serving engine's memory share (0.10 of the device) leaves 0.0 GB of KV "
                                       "room per rank"),
            std::string::npos)
      << r.suggestions.front();
  for (const auto& s : r.suggestions) EXPECT_EQ(s.find("more devices"), std::string::npos) << s;
}

TEST(Search, UnmeetableSlaExplainsWhatWould) {
  const auto file = write_scenario("sla", R"({"schema_version": 1, "model": "models/Llama-3.1-8B",
      "cluster": "clusters/h100x8.json", "workload": {"input_len": 1024, "output_len": 128, "concurrency": 8},
      "sla": {"max_tpot_s": 0.0001}})");
  const Loaded l = load(file);
  const SearchResult r = run_search(l.scenario, l.model, l.cluster, {});
  EXPECT_FALSE(r.feasible());
  ASSERT_GE(r.suggestions.size(), 2u);
  EXPECT_NE(r.suggestions[0].find("no plan meets the SLA; the fastest decode is TPOT"), std::string::npos)
      << r.suggestions[0];
  EXPECT_NE(r.suggestions.back().find("a looser SLA: max_tpot_s >="), std::string::npos) << r.suggestions.back();
}

TEST(Search, NothingFitsSuggestsMoreDevicesPrecisionOffload) {
  const auto file = write_scenario("fit", R"({"schema_version": 1, "model": "models/DeepSeek-V3",
      "cluster": "clusters/h100x1.json", "workload": {"input_len": 1024, "output_len": 128, "concurrency": 1}})");
  const Loaded l = load(file);
  const SearchResult r = run_search(l.scenario, l.model, l.cluster, {});
  EXPECT_FALSE(r.feasible());
  std::string all;
  for (const auto& s : r.suggestions) all += s + "\n";
  EXPECT_NE(all.find("nothing fits"), std::string::npos) << all;
  EXPECT_NE(all.find("more devices: about"), std::string::npos) << all;
  EXPECT_NE(all.find("lower precision"), std::string::npos) << all;
  EXPECT_NE(all.find("offloading"), std::string::npos) << all;
}

// The weight choices a search tries: by default the checkpoint and the device's
// 8-bit W8A8 path for a 16-bit checkpoint (FP8 on H100; INT8 on A100, which has
// no FP8); opted-in choices the device cannot run are refused, naming the field.
std::vector<WeightChoice> choices_of(const SearchResult& r) {
  std::vector<WeightChoice> v;
  for (const auto& e : r.all)
    if (std::find(v.begin(), v.end(), e.weights) == v.end()) v.push_back(e.weights);
  return v;
}

TEST(Search, WeightChoicesFollowTheDevice) {
  const std::string workload = R"("workload": {"input_len": 128, "output_len": 16, "concurrency": 1},
      "search": {"device_counts": [1], "kv_dtypes": ["bf16"]})";
  const Loaded h100 = load(write_scenario("h100", R"({"schema_version": 1, "model": "models/Llama-3.1-8B",
      "cluster": "clusters/h100x1.json", )" + workload +
                                                      "}"));
  EXPECT_EQ(choices_of(run_search(h100.scenario, h100.model, h100.cluster, {})),
            (std::vector<WeightChoice>{WeightChoice::checkpoint, WeightChoice::fp8}));

  const auto cluster =
      std::filesystem::temp_directory_path() / ("dayzero_a100x1_" + std::to_string(::getpid()) + ".json");
  std::ofstream(cluster) << R"({"name": "a100x1", "device": "A100-80GB-SXM", "nodes": 1, "devices_per_node": 1,
      "host": {"mem_bytes": 256e9}, "intra_node": {"fabric": "nvswitch"}})";
  const Loaded a100 = load(write_scenario("a100", R"({"schema_version": 1, "model": "models/Llama-3.1-8B",
      "cluster": ")" + cluster.string() + "\", " + workload +
                                                      "}"));
  const SearchResult r = run_search(a100.scenario, a100.model, a100.cluster, {});
  EXPECT_EQ(choices_of(r), (std::vector<WeightChoice>{WeightChoice::checkpoint, WeightChoice::int8}));
  for (const auto& e : r.all)
    if (e.weights == WeightChoice::int8) {
      EXPECT_EQ(e.plan.dtypes.dense_mlp, model::WeightPrecision::int8);
      EXPECT_EQ(e.plan.dtypes.embedding, model::WeightPrecision::checkpoint);  // head stays 16-bit
    }

  // Opted in: every precision the device can run; nvfp4 on an H100 is refused.
  const std::string opt_in = R"({"schema_version": 1, "model": "models/Llama-3.1-8B",
      "cluster": "clusters/h100x1.json", "workload": {"input_len": 128, "output_len": 16, "concurrency": 1},
      "search": {"device_counts": [1], "kv_dtypes": ["bf16"], "weight_dtypes": )";
  const Loaded ok = load(write_scenario("optin", opt_in + R"(["int8", "int8_w8a16", "int4"]}})"));
  EXPECT_EQ(choices_of(run_search(ok.scenario, ok.model, ok.cluster, {})),
            (std::vector<WeightChoice>{WeightChoice::int8, WeightChoice::int8_w8a16, WeightChoice::int4}));
  const Loaded bad = load(write_scenario("nvfp4", opt_in + R"(["checkpoint", "nvfp4"]}})"));
  try {
    run_search(bad.scenario, bad.model, bad.cluster, {});
    ADD_FAILURE() << "nvfp4 on an H100 was accepted";
  } catch (const core::InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.field(), "search.weight_dtypes");
    EXPECT_NE(what.find("\"nvfp4\": needs fp4 tensor cores; the cluster's device H100-SXM has none"), std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace dayzero::search
