// export then import (deploy/launch.h): every command of a plan's launch reads back as
// its worker's plan, on every engine, for the bundled scenarios' best plans and for
// layouts that exercise each engine's multi-node, expert-parallel, pipeline,
// speculative and disaggregated flags.
#include <gtest/gtest.h>

#include "deploy_fixture.h"
#include "search/search.h"

namespace dayzero::deploy {
namespace {

using testing::args;
using testing::layout;
using testing::World;

// The command's words as a user would paste them (launchers and env included).
std::vector<std::string> words(const Command& c) {
  std::vector<std::string> w;
  for (const auto& e : c.env) w.push_back("env"), w.push_back(e);
  w.insert(w.end(), c.launcher.begin(), c.launcher.end());
  w.insert(w.end(), c.program.begin(), c.program.end());
  for (const auto& f : c.flags) {
    w.push_back(f.name);
    if (f.value) w.push_back(*f.value);
  }
  return w;
}

void expect_same(const plan::Plan& want, const plan::Plan& got, bool moe, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(got.pp, want.pp);
  EXPECT_EQ(got.attention.tp, want.attention.tp);
  EXPECT_EQ(got.attention.dp, want.attention.dp);
  if (moe) {
    EXPECT_EQ(got.moe.tp, want.moe.tp);
    EXPECT_EQ(got.moe.ep, want.moe.ep);
    EXPECT_EQ(got.moe.dp, want.moe.dp);
    EXPECT_EQ(got.moe.redundant_experts, want.moe.redundant_experts);
  }
  EXPECT_EQ(got.dtypes.attention, want.dtypes.attention);
  EXPECT_EQ(got.dtypes.dense_mlp, want.dtypes.dense_mlp);
  EXPECT_EQ(got.dtypes.experts, want.dtypes.experts);
  EXPECT_EQ(got.dtypes.embedding, want.dtypes.embedding);
  EXPECT_EQ(got.dtypes.kv_cache, want.dtypes.kv_cache);
  EXPECT_EQ(got.kv_block_tokens, want.kv_block_tokens);
  EXPECT_EQ(got.prefill_chunk_tokens, want.prefill_chunk_tokens);
  EXPECT_EQ(got.workload.batch, want.workload.batch);
  EXPECT_EQ(got.speculative.method, want.speculative.method);
  EXPECT_EQ(got.speculative.draft_tokens, want.speculative.draft_tokens);
}

// Exports `p` for `e` and imports every command back; returns the launch.
struct Target {
  const model::Model& model;
  const topology::Cluster& cluster;
};

Launch round_trip(plan::Engine e, const plan::Plan& p, const Target& w, const plan::EngineSettings& s = {},
                  ExportOptions o = {}) {
  if (o.model_id.empty()) o.model_id = "org/model";
  const EngineArgs a = args(e);
  const Launch l = export_launch(e, p, w.model, w.cluster, s, o, a);
  plan::Plan base;
  base.workload = p.workload;
  for (const Command& c : l.commands) {
    if (c.role == "router") continue;
    std::optional<std::string> yaml;
    for (const auto& f : l.files)
      for (const auto& flag : c.flags)
        if (flag.value && *flag.value == f.name) yaml = f.text();
    Imported im = import_launch(e, words(c), base, w.model, w.cluster, a, yaml);
    if (o.prequantized) im.plan.dtypes = p.dtypes;  // the checkpoint the model id names
    const plan::Plan want = c.role == "prefill" ? p.prefill_worker() : p.decode_worker();
    expect_same(want, im.plan, w.model.config.is_moe(),
                std::string(plan::engine_name(e)) + " node " + std::to_string(c.node) + " " + c.role + ": " + c.line());
    EXPECT_EQ(im.model_id, o.model_id);
    EXPECT_TRUE(im.other.empty()) << im.other.front();
    const double fraction = s.memory_fraction ? *s.memory_fraction : -1;
    if (fraction > 0) {
      EXPECT_DOUBLE_EQ(*im.settings.memory_fraction, fraction);
    }
  }
  return l;
}

TEST(ExportImport, TheBundledScenariosBestPlansRoundTripOnEveryEngine) {
  for (const char* name : {"deepseek-v3-h200-2x8", "llama-3.1-70b-h100x8"}) {
    const search::Session s = search::load_session(search::resolve_scenario(name, testing::kData), testing::kData);
    const search::SearchResult r = search::run_search(s.scenario, s.model, s.cluster, s.efficiency);
    ASSERT_TRUE(r.feasible()) << name;
    const plan::Plan& best = r.all[r.top.front()].plan;
    const Target w{s.model, s.cluster};
    for (plan::Engine e : plan::kAllEngines) {
      ExportOptions o;
      // TensorRT-LLM loads FP8 weights from an FP8 checkpoint only.
      o.prequantized = e == plan::Engine::trtllm && best.dtypes.experts == model::WeightPrecision::fp8;
      const Launch l = round_trip(e, best, w, s.scenario.engine, o);
      EXPECT_FALSE(l.commands.empty());
    }
  }
}

TEST(ExportImport, MultiNodeExpertParallelPipelineAndSpeculativeLayouts) {
  const World world = testing::world("DeepSeek-V3", "h200-4x8");
  const Target w{world.model, world.cluster};
  plan::Plan ep32 = layout(1, 1, 32, {1, 32, 1}, 2048);      // DP attention + EP over four nodes
  plan::Plan tp8pp4 = layout(4, 8, 1, {8, 1, 1}, 256);       // one engine over four nodes
  plan::Plan mtp = layout(1, 1, 16, {1, 16, 1}, 512);        // two nodes, MTP drafts
  plan::Plan eplb = layout(1, 1, 32, {1, 32, 1, 32}, 2048);  // one redundant expert per GPU
  mtp.speculative = {plan::SpecMethod::mtp, 2, {0.8}};
  mtp.dtypes.kv_cache = plan::KvDtype::fp8;
  for (plan::Engine e : plan::kAllEngines) {
    SCOPED_TRACE(std::string(plan::engine_name(e)));
    const Launch a = round_trip(e, ep32, w);
    round_trip(e, tp8pp4, w);
    round_trip(e, mtp, w);
    round_trip(e, eplb, w);
    if (e == plan::Engine::trtllm) {
      ASSERT_EQ(a.commands.size(), 1u);  // one MPI job over the four nodes
      EXPECT_EQ(a.commands[0].launcher.front(), "mpirun");
    } else {
      EXPECT_EQ(a.commands.size(), 4u);  // a command per node
    }
  }
  // SGLang may split experts tp x ep inside the stage; vLLM may not (an error test says so).
  const World one = testing::world("DeepSeek-V3", "h200x8");
  round_trip(plan::Engine::sglang, layout(1, 2, 4, {2, 4, 1}, 256), {one.model, one.cluster});
}

TEST(ExportImport, DisaggregatedPlansEmitBothPoolsAndTheirKvTransfer) {
  const World world = testing::world("DeepSeek-V3", "h200-4x8");
  const Target w{world.model, world.cluster};
  plan::Plan p = layout(1, 1, 16, {1, 16, 1}, 1024);    // decode: DP16 EP16 on two nodes
  p.disaggregated = {2, 1, {1, {8, 1}, {8, 1, 1}, 8}};  // two prefill workers of TP8
  for (plan::Engine e : plan::kAllEngines) {
    SCOPED_TRACE(std::string(plan::engine_name(e)));
    const Launch l = round_trip(e, p, w);
    int prefill = 0, decode = 0;
    for (const auto& c : l.commands) {
      prefill += c.role == "prefill";
      decode += c.role == "decode";
    }
    EXPECT_EQ(prefill, 2);
    EXPECT_EQ(decode, e == plan::Engine::trtllm ? 1 : 2);
    EXPECT_FALSE(l.notes.empty());
    const std::string script = l.script();
    switch (e) {
      case plan::Engine::vllm: EXPECT_NE(script.find("NixlConnector"), std::string::npos); break;
      case plan::Engine::sglang: EXPECT_NE(script.find("--disaggregation-mode prefill"), std::string::npos); break;
      case plan::Engine::trtllm: EXPECT_NE(script.find("cache_transceiver_config"), std::string::npos); break;
    }
  }
}

// Llama-3.1-70B's launch on `e` with settings `s` (round_trip checks every command), and
// its first command imported back with the options file beside it.
Imported first_command_back(plan::Engine e, const plan::Plan& p, const Target& w, const plan::EngineSettings& s) {
  const EngineArgs a = args(e);
  ExportOptions o;
  o.model_id = "meta-llama/Llama-3.1-70B-Instruct";
  const Launch l = round_trip(e, p, w, s, o);
  plan::Plan base;
  base.workload = p.workload;
  std::optional<std::string> yaml;
  if (!l.files.empty()) yaml = l.files.front().text();
  return import_launch(e, words(l.commands.front()), base, w.model, w.cluster, a, yaml);
}

TEST(ExportImport, EngineSettingsTravelBothWays) {
  const World world = testing::world("Llama-3.1-70B", "h100x8");
  const Target w{world.model, world.cluster};
  plan::Plan p = layout(1, 4, 1, {1, 1, 4}, 128);
  plan::EngineSettings s;
  s.memory_fraction = 0.85;
  s.prefix_caching = false;
  s.token_budget = 4096;
  p.prefill_chunk_tokens = 4096;
  for (plan::Engine e : plan::kAllEngines) {
    const Imported im = first_command_back(e, p, w, s);
    ASSERT_TRUE(im.settings.prefix_caching.has_value()) << plan::engine_name(e);
    EXPECT_FALSE(*im.settings.prefix_caching);
    EXPECT_EQ(*im.settings.token_budget, 4096);
    EXPECT_EQ(*im.settings.max_running, 128);
  }
}

// The CUDA graph limit goes out as each engine's setting (vLLM --max-cudagraph-capture-size
// or --enforce-eager, SGLang --cuda-graph-max-bs or --disable-cuda-graph, TensorRT-LLM
// cuda_graph_config.max_batch_size or cuda_graph_config: null) and reads back.
TEST(ExportImport, TheCudaGraphLimitTravelsBothWays) {
  const World world = testing::world("Llama-3.1-70B", "h100x8");
  const Target w{world.model, world.cluster};
  const plan::Plan p = layout(1, 4, 1, {1, 1, 4}, 128);
  for (const int64_t limit : {int64_t{64}, int64_t{0}})
    for (plan::Engine e : plan::kAllEngines) {
      plan::EngineSettings s;
      s.cuda_graph_max_batch = limit;
      const Imported im = first_command_back(e, p, w, s);
      ASSERT_TRUE(im.settings.cuda_graph_max_batch.has_value()) << plan::engine_name(e) << " " << limit;
      EXPECT_EQ(*im.settings.cuda_graph_max_batch, limit) << plan::engine_name(e);
    }
}

// TensorRT-LLM's attention-DP balancing and batch waiting: attention_dp_config's three
// fields and batch_wait_* out and back (the other engines have no such options).
TEST(ExportImport, TheAttentionDpBalanceTravelsToTensorRtLlmAndBack) {
  const World world = testing::world("Llama-3.1-70B", "h100x8");
  const Target w{world.model, world.cluster};
  const plan::Plan p = layout(1, 4, 1, {1, 1, 4}, 128);
  plan::EngineSettings s;
  s.adp_balance = true;
  s.adp_timeout_iters = 60;
  s.adp_batching_wait_iters = 0;
  s.batch_wait_timeout_iters = 40;
  s.batch_wait_max_tokens_ratio = 0.8;
  const Imported im = first_command_back(plan::Engine::trtllm, p, w, s);
  EXPECT_EQ(im.settings.adp_balance, true);
  EXPECT_EQ(im.settings.adp_timeout_iters, 60);
  EXPECT_EQ(im.settings.adp_batching_wait_iters, 0);
  EXPECT_EQ(im.settings.batch_wait_timeout_iters, 40);
  ASSERT_TRUE(im.settings.batch_wait_max_tokens_ratio.has_value());
  EXPECT_DOUBLE_EQ(*im.settings.batch_wait_max_tokens_ratio, 0.8);
}

TEST(ExportImport, TextOfTheLaunch) {
  Command c;
  c.env = {"CUDA_VISIBLE_DEVICES=0,1"};
  c.program = {"vllm", "serve", "org/model"};
  c.flags = {{"--speculative-config", R"({"method":"mtp"})"}, {"--enable-dbo", std::nullopt}};
  EXPECT_EQ(c.line(),
            R"(CUDA_VISIBLE_DEVICES=0,1 vllm serve org/model --speculative-config '{"method":"mtp"}' --enable-dbo)");
  ConfigFile f;
  f.fields = {
      {"enable_attention_dp", "true"}, {"kv_cache_config.dtype", "fp8"}, {"kv_cache_config.tokens_per_block", "32"}};
  EXPECT_EQ(f.text(), "enable_attention_dp: true\nkv_cache_config:\n  dtype: fp8\n  tokens_per_block: 32\n");
}

}  // namespace
}  // namespace dayzero::deploy
