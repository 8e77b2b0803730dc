// The search space (search/space.h) and the pruned search (search.h): the full
// space holds the layouts the compact one skips, balanced stages are computed by
// hand, and the pruned search finds exactly the exhaustive one's ranking, front and
// suggestions on small clusters, under every objective and SLA kind.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>

#include "plan/plan_json.h"
#include "search/ranking.h"
#include "search/search.h"
#include "search/session.h"
#include "search/space.h"
#include "simulate/simulator.h"

namespace dayzero::search {
namespace {

Session scenario(const std::string& name, const std::string& body) {
  const auto dir = std::filesystem::path(DAYZERO_DATA_DIR);
  const auto file =
      std::filesystem::temp_directory_path() / ("dayzero_space_" + std::to_string(::getpid()) + "_" + name + ".json");
  std::ofstream(file) << body;
  Session s = load_session(file, dir);
  std::filesystem::remove(file);
  return s;
}

std::string head(const std::string& model, const std::string& cluster) {
  const std::string dir = DAYZERO_DATA_DIR;
  return R"({"schema_version": 1, "model": ")" + dir + "/models/" + model + R"(", "cluster": ")" + dir + "/clusters/" +
         cluster + R"(", )";
}

// What a search answers: the ranked plans with their figures, the front, the
// suggestions, and with pools the best `top` disaggregated plans on their own (what
// `plan --serve-check` serves beside the best single pools).
std::vector<std::string> answer(const SearchResult& r, const Scenario& s) {
  std::vector<std::string> out;
  auto show = [&](const char* what, const Evaluated& e) {
    const auto& p = e.prediction;
    out.push_back(std::string(what) + " " + layout_name(e) + " batch " + std::to_string(e.plan.workload.batch) +
                  " tpot " + std::to_string(p.tpot_s) + " ttft " + std::to_string(p.ttft_s) + " tok/s/dev " +
                  std::to_string(p.throughput_tokens_per_s_per_device));
  };
  for (size_t i : r.top) show("top", r.all[i]);
  for (size_t i : r.pareto) show("front", r.all[i]);
  for (const auto& line : r.suggestions) out.push_back("suggest " + line);
  size_t pools = 0;
  for (size_t i : rank_plans(r.all, s.objective, 1'000'000))
    if (r.all[i].plan.disaggregated.on() && pools++ < static_cast<size_t>(s.space.top)) show("pools", r.all[i]);
  return out;
}

// Returns the pruned search's counts, so that a case can say which rules it exercised.
// `engine`: a serving engine's memory rule the plans must also meet (SearchOptions::engine_memory).
Pruned expect_same_answer(const Session& l, const std::string& what,
                          const std::optional<simulate::KvMemoryRule>& engine = std::nullopt) {
  SCOPED_TRACE(what);
  SearchOptions exhaustive, pruned_options;
  exhaustive.prune = false;
  if (engine)
    exhaustive.engine_memory = pruned_options.engine_memory = [rule = *engine](const plan::Plan&) { return rule; };
  const SearchResult all = run_search(l.scenario, l.model, l.cluster, l.efficiency, exhaustive);
  const SearchResult pruned = run_search(l.scenario, l.model, l.cluster, l.efficiency, pruned_options);
  EXPECT_EQ(all.candidates, pruned.candidates);
  EXPECT_EQ(all.pruned.total(), 0);
  EXPECT_EQ(static_cast<int64_t>(all.candidates), all.evaluated);
  EXPECT_EQ(static_cast<int64_t>(pruned.candidates), pruned.evaluated + pruned.pruned.total());
  EXPECT_EQ(answer(all, l.scenario), answer(pruned, l.scenario));
  EXPECT_FALSE(answer(all, l.scenario).empty());
  std::printf("%s: %zu plans, %lld costed, pruned memory %lld ttft %lld tpot %lld bound %lld\n", what.c_str(),
              all.candidates, static_cast<long long>(pruned.evaluated), static_cast<long long>(pruned.pruned.memory),
              static_cast<long long>(pruned.pruned.ttft), static_cast<long long>(pruned.pruned.tpot),
              static_cast<long long>(pruned.pruned.bound));
  return pruned.pruned;
}

TEST(SearchSpace, PrunedSearchFindsTheExhaustiveAnswerOnSmallClusters) {
  const std::string full = R"("search": {"space": "full"})";
  // An MoE on 8 H100: SLA limits that bind on both TTFT and TPOT.
  const Pruned moe =
      expect_same_answer(scenario("moe", head("DeepSeek-V2-Lite", "h100x8.json") +
                                             R"("workload": {"input_len": 4096, "output_len": 512, "concurrency": 512},
          "sla": {"max_ttft_s": 0.3, "max_tpot_s": 0.03}, )" +
                                             full + "}"),
                         "moe under TTFT and TPOT limits");
  EXPECT_GT(moe.ttft, 0);
  EXPECT_GT(moe.tpot, 0);
  // A dense model whose memory binds: tp1 does not hold the weights, large batches not the KV cache.
  const Pruned memory = expect_same_answer(scenario("memory", head("Llama-3.1-70B", "h100x8.json") +
                                                                  R"("workload": {"input_len": 8192, "output_len": 512,
          "concurrency": 512}, "sla": {"max_tpot_s": 0.2}, )" + full +
                                                                  "}"),
                                           "dense, memory binds");
  EXPECT_GT(memory.memory, 0);
  // A dense model, latency first, every batch up to 256 listed.
  expect_same_answer(scenario("dense", head("Llama-3.1-8B", "h100x8.json") +
                                           R"("workload": {"input_len": 2048, "output_len": 256, "concurrency": 256},
          "sla": {"max_tpot_s": 0.02}, "objective": "latency", )" +
                                           full + "}"),
                     "dense, latency objective");
  // Fewest devices under a request rate.
  expect_same_answer(
      scenario("rate", head("DeepSeek-V2-Lite", "h100x8.json") +
                           R"("workload": {"input_len": 1024, "output_len": 256, "request_rate_per_s": 40},
          "sla": {"max_ttft_s": 1.0, "max_tpot_s": 0.05}, "objective": "fewest_devices", )" +
                           full + "}"),
      "fewest devices at a request rate");
  // Speculative decoding: plain, and drafts of 1 to 3 tokens.
  expect_same_answer(scenario("spec", head("Llama-3.1-8B", "h100x8.json") +
                                          R"("workload": {"input_len": 2048, "output_len": 512, "concurrency": 128},
          "sla": {"max_tpot_s": 0.02}, "speculative": {"method": "eagle", "draft_tokens": 3, "acceptance": [0.7]}, )" +
                                          full + "}"),
                     "speculative settings");
  // Token budgets: long prompts in one, four or sixteen steps, memory binding.
  const Pruned budgets = expect_same_answer(
      scenario("budgets", head("Llama-3.1-70B", "h100x8.json") +
                              R"("workload": {"input_len": 16384, "output_len": 256, "concurrency": 256},
          "sla": {"max_ttft_s": 4.0, "max_tpot_s": 0.1},
          "search": {"space": "full", "token_budgets": [1024, 4096, 16384]}})"),
      "token budgets");
  EXPECT_GT(budgets.memory, 0);
  // Nothing meets the SLA: the suggestions come from the same plans.
  expect_same_answer(scenario("tight", head("Llama-3.1-70B", "h100x8.json") +
                                           R"("workload": {"input_len": 8192, "output_len": 256, "concurrency": 64},
          "sla": {"max_ttft_s": 0.01, "max_tpot_s": 0.001}, )" +
                                           full + "}"),
                     "nothing meets the SLA");
  // Nothing fits.
  expect_same_answer(
      scenario("nofit", head("Llama-3.1-405B", "h100x1.json") +
                            R"("workload": {"input_len": 1024, "output_len": 128, "concurrency": 8}, )" + full + "}"),
      "nothing fits");
  // Disaggregated pools: only the memory rule prunes.
  expect_same_answer(scenario("pools", head("DeepSeek-V2-Lite", "h100x8.json") +
                                           R"("workload": {"input_len": 4096, "output_len": 512, "concurrency": 256},
          "sla": {"max_ttft_s": 1.0, "max_tpot_s": 0.05}, "search": {"space": "full", "disaggregated": true}})"),
                     "disaggregated pools");
}

// Held to a serving engine's memory share (as `dayzero plan` searches), a plan that
// fits may not fit at a larger batch, so the memory rule still stops a group's walk:
// the same answer. vLLM's default share (0.9 of the device) and a tighter one (0.6).
TEST(SearchSpace, PrunedSearchFindsTheExhaustiveAnswerUnderAnEngineMemoryRule) {
  const std::string full = R"("search": {"space": "full"})";
  const Session dense = scenario("engine-dense", head("Llama-3.1-70B", "h100x8.json") +
                                                     R"("workload": {"input_len": 8192, "output_len": 512,
          "concurrency": 512}, "sla": {"max_tpot_s": 0.2}, )" +
                                                     full + "}");
  const Session moe =
      scenario("engine-moe", head("DeepSeek-V2-Lite", "h100x8.json") +
                                 R"("workload": {"input_len": 4096, "output_len": 512, "concurrency": 512},
          "sla": {"max_ttft_s": 0.3, "max_tpot_s": 0.03}, )" +
                                 full + "}");
  Session offload = load_session(std::string(DAYZERO_DATA_DIR) + "/3t-moe-acc300-1x8.json", DAYZERO_DATA_DIR);
  for (const double fraction : {0.9, 0.6}) {
    const simulate::KvMemoryRule rule{fraction, false, 8192, 256};
    const std::string share = " at memory fraction " + std::to_string(fraction);
    EXPECT_GT(expect_same_answer(dense, "dense, memory binds" + share, rule).memory, 0);
    expect_same_answer(moe, "moe under TTFT and TPOT limits" + share, rule);
    EXPECT_GT(expect_same_answer(offload, "3t-moe-acc300-1x8" + share, rule).memory, 0);
  }
}

// Every bundled scenario, as shipped: the same answer. A space of more than 300,000
// plans (the 3T MoE on 512 GPUs: millions, minutes exhaustively; bench_search
// --exhaustive-check compares it) is compared in the compact space.
TEST(SearchSpace, PrunedSearchFindsTheExhaustiveAnswerForEveryBundledScenario) {
  for (const auto& e : std::filesystem::directory_iterator(DAYZERO_DATA_DIR)) {
    if (!e.is_regular_file() || e.path().extension() != ".json") continue;
    Session l = load_session(e.path(), DAYZERO_DATA_DIR);
    std::string name = e.path().stem().string();
    if (make_space(l.scenario, l.model, l.cluster).plans() > 300'000) {
      l.scenario.space.kind = SpaceKind::compact;
      name += " (compact)";
    }
    expect_same_answer(l, name);
  }
}

// Bundled scenarios of one or two nodes in the full space (divisor sizes, expert
// copies, balanced stages): the same answer.
TEST(SearchSpace, PrunedSearchFindsTheExhaustiveAnswerInTheFullSpace) {
  for (const char* name : {"deepseek-v3-h200-2x8", "glm-5-h200x8", "qwen3.5-397b-h200x8", "llama-3.1-70b-h100x8",
                           "3t-moe-acc300-1x8", "kimi-k2.5-h200-2x8"}) {
    Session l = load_session(std::string(DAYZERO_DATA_DIR) + "/" + name + ".json", DAYZERO_DATA_DIR);
    l.scenario.space.kind = SpaceKind::full;
    expect_same_answer(l, std::string(name) + " (full space)");
  }
}

TEST(SearchSpace, FullSpaceHoldsDivisorSizesExpertCopiesAndUnevenStages) {
  const Session l = scenario("shape", head("DeepSeek-V2-Lite", "h100x8.json") +
                                          R"("workload": {"input_len": 1024, "output_len": 128, "concurrency": 48},
      "search": {"space": "full"}})");
  const Space full = make_space(l.scenario, l.model, l.cluster);
  bool three = false, six = false, copies = false, balanced = false;
  for (const LayoutShape& s : full.layouts) {
    three = three || s.devices() == 3;
    six = six || (s.devices() == 6 && s.tp == 2 && s.dp == 3);
    copies = copies || s.moe_dp > 1;
    balanced = balanced || !s.stage_layers.empty();
    EXPECT_EQ(s.moe_tp * s.ep * s.moe_dp, s.tp * s.dp);
  }
  EXPECT_TRUE(three && six && copies && balanced);
  // Every plan of the space is valid for the model and the cluster.
  for (const plan::Plan& p : list_plans(full, l.scenario, l.model, l.cluster))
    ASSERT_NO_THROW(plan::validate_plan(p, l.model, l.cluster.num_devices(), "space")) << p.pp << " " << p.attention.tp;
  // The compact space: powers of two, one copy of the experts, even stages.
  Scenario compact = l.scenario;
  compact.space.kind = SpaceKind::compact;
  const Space small = make_space(compact, l.model, l.cluster);
  EXPECT_LT(small.plans(), full.plans());
  for (const LayoutShape& s : small.layouts) {
    EXPECT_EQ(s.devices() & (s.devices() - 1), 0) << s.devices();
    EXPECT_EQ(s.moe_dp, 1);
    EXPECT_TRUE(s.stage_layers.empty());
  }
  // Batches per layout: powers of two from one per replica up to the concurrency.
  for (const LayoutShape& s : small.layouts)
    if (s.dp == 4) {
      EXPECT_EQ(s.batches, (std::vector<int64_t>{4, 8, 16, 32, 48}));
    }
}

// Hand-computed: 6 layers of 10 bytes, an embedding of 15 and a head of 25 over 3
// stages. Even (2/2/2) puts 35, 20, 45 on the stages; the balanced split 2/3/1
// puts 35, 30, 35: the heaviest stage holds 35 (no split does better: the last
// stage holds the head and at least one layer, 35).
// A token budget is a dimension of the space: each group runs its prompts in steps of
// at most that many tokens, and a smaller budget holds less activation memory and
// takes longer per prompt.
TEST(SearchSpace, TokenBudgetsAreADimension) {
  const Session l = scenario("budget", head("Llama-3.1-70B", "h100x8.json") +
                                           R"("workload": {"input_len": 16384, "output_len": 256, "concurrency": 64},
      "search": {"space": "full", "token_budgets": [16384, 2048], "batches": [16], "tp": [8]}})");
  const Space space = make_space(l.scenario, l.model, l.cluster);
  EXPECT_EQ(space.budgets, (std::vector<int64_t>{2048, 16384}));  // ascending
  const std::vector<plan::Plan> plans = list_plans(space, l.scenario, l.model, l.cluster);
  ASSERT_EQ(plans.size(), static_cast<size_t>(space.plans()));
  simulate::Simulator sim(l.model, l.cluster, l.efficiency);
  const plan::Plan* small = nullptr;
  const plan::Plan* large = nullptr;
  for (const auto& p : plans)
    if (p.pp == 1 && p.dtypes.kv_cache == plan::KvDtype::bf16) (p.prefill_chunk_tokens == 2048 ? small : large) = &p;
  ASSERT_TRUE(small && large);
  EXPECT_EQ(large->prefill_chunk_tokens, 16384);
  const auto a = sim.simulate(*small), b = sim.simulate(*large);
  EXPECT_GT(a.ttft_s, b.ttft_s);  // eight steps per prompt, not one
  EXPECT_LT(a.ranks.front().activation_bytes, b.ranks.front().activation_bytes);
  Evaluated named;
  named.plan = *small;
  EXPECT_NE(layout_name(named).find("budget=2048"), std::string::npos) << layout_name(named);
  // The scenario's engine budget is the default one.
  const Session e = scenario("engine", head("Llama-3.1-70B", "h100x8.json") +
                                           R"("workload": {"input_len": 4096, "output_len": 256, "concurrency": 64},
      "engine": {"token_budget": 4096}})");
  EXPECT_EQ(make_space(e.scenario, e.model, e.cluster).budgets, (std::vector<int64_t>{4096}));
}

TEST(SearchSpace, BalancedStagesGiveTheEndsFewerLayers) {
  const std::vector<double> layers(6, 10.0);
  EXPECT_EQ(balanced_stage_layers(layers, 15, 25, 3), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(balanced_stage_layers(layers, 0, 0, 3), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(balanced_stage_layers(layers, 0, 0, 6), (std::vector<int64_t>{1, 1, 1, 1, 1, 1}));
  EXPECT_TRUE(balanced_stage_layers(layers, 0, 0, 7).empty());
}

TEST(SearchSpace, CancelStopsTheWorkersAndThrows) {
  const Session l = scenario("cancel", head("DeepSeek-V2-Lite", "h100x8.json") +
                                           R"("workload": {"input_len": 1024, "output_len": 128, "concurrency": 64},
      "search": {"space": "full"}})");
  std::atomic<bool> cancel{true};
  SearchOptions o;
  o.cancel = &cancel;
  EXPECT_THROW(run_search(l.scenario, l.model, l.cluster, l.efficiency, o), Cancelled);
  // Cancelled from the progress callback, on the calling thread, while workers run.
  cancel = false;
  o.progress = [&](size_t, size_t, double) { cancel = true; };
  o.threads = 2;
  try {
    const SearchResult r = run_search(l.scenario, l.model, l.cluster, l.efficiency, o);
    EXPECT_FALSE(cancel.load()) << "finished before the first progress report";
  } catch (const Cancelled&) {
    EXPECT_TRUE(cancel.load());
  }
}

TEST(SearchSpace, ResultDoesNotDependOnTheThreads) {
  const Session l = scenario("threads", head("DeepSeek-V2-Lite", "h100x8.json") +
                                            R"("workload": {"input_len": 2048, "output_len": 256, "concurrency": 256},
      "sla": {"max_tpot_s": 0.04}, "search": {"space": "full"}})");
  SearchOptions one, two;
  one.threads = 1;
  two.threads = 2;
  const SearchResult a = run_search(l.scenario, l.model, l.cluster, l.efficiency, one);
  const SearchResult b = run_search(l.scenario, l.model, l.cluster, l.efficiency, two);
  EXPECT_EQ(answer(a, l.scenario), answer(b, l.scenario));
  ASSERT_EQ(a.all.size(), b.all.size());
  for (size_t i = 0; i < a.all.size(); ++i) EXPECT_EQ(layout_name(a.all[i]), layout_name(b.all[i]));
  EXPECT_EQ(a.pruned.memory, b.pruned.memory);
  EXPECT_EQ(a.pruned.tpot, b.pruned.tpot);
}

}  // namespace
}  // namespace dayzero::search
