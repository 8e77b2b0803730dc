// What an engine cannot run is an error naming the plan's field, and a bad command
// line an error naming the flag (deploy/launch.h).
#include <gtest/gtest.h>

#include "deploy_fixture.h"

namespace dayzero::deploy {
namespace {

using testing::args;
using testing::layout;

std::string unexpressible_field(plan::Engine e, const plan::Plan& p, const testing::World& w,
                                const plan::EngineSettings& s = {}) {
  ExportOptions o;
  o.model_id = "org/model";
  try {
    (void)export_launch(e, p, w.model, w.cluster, s, o, args(e));
  } catch (const Unexpressible& x) {
    EXPECT_NE(std::string(x.what()).find(x.field()), std::string::npos) << x.what();
    return x.field();
  }
  return "(exported)";
}

TEST(DeployErrors, APlanAnEngineCannotRunNamesTheField) {
  const testing::World ds = testing::world("DeepSeek-V3", "h200x8");
  const testing::World llama = testing::world("Llama-3.1-70B", "h100x8");
  // Experts split tp 2 x ep 4: SGLang and TensorRT-LLM split a stage's experts ep x tp; vLLM one way only.
  const plan::Plan mixed = layout(1, 8, 1, {2, 4, 1}, 64);
  EXPECT_EQ(unexpressible_field(plan::Engine::vllm, mixed, ds), "moe");
  EXPECT_EQ(unexpressible_field(plan::Engine::sglang, mixed, ds), "(exported)");
  EXPECT_EQ(unexpressible_field(plan::Engine::trtllm, mixed, ds), "(exported)");
  // Replicated expert groups: no engine.
  for (plan::Engine e : plan::kAllEngines)
    EXPECT_EQ(unexpressible_field(e, layout(1, 1, 8, {1, 4, 2}, 64), ds), "moe") << plan::engine_name(e);
  // Attention tp 2 x dp 4: TensorRT-LLM's attention DP is one rank per replica.
  EXPECT_EQ(unexpressible_field(plan::Engine::trtllm, layout(1, 2, 4, {1, 8, 1}, 64), ds), "attention");
  // A dense model's replicas: one trtllm-serve runs one.
  EXPECT_EQ(unexpressible_field(plan::Engine::trtllm, layout(1, 2, 4, {1, 1, 2}, 64), llama), "attention.dp");
  // INT8 weights need a checkpoint stored so (no engine converts online but to FP8);
  // FP8 over a 16-bit checkpoint: vLLM and SGLang convert, TensorRT-LLM does not.
  plan::Plan int8 = layout(1, 4, 1, {1, 1, 4}, 64);
  int8.dtypes.attention = int8.dtypes.dense_mlp = int8.dtypes.experts = model::WeightPrecision::int8;
  EXPECT_EQ(unexpressible_field(plan::Engine::vllm, int8, llama), "dtypes.attention");
  plan::Plan fp8 = layout(1, 4, 1, {1, 1, 4}, 64);
  fp8.dtypes.attention = fp8.dtypes.dense_mlp = fp8.dtypes.experts = fp8.dtypes.embedding = model::WeightPrecision::fp8;
  EXPECT_EQ(unexpressible_field(plan::Engine::vllm, fp8, llama), "(exported)");
  EXPECT_EQ(unexpressible_field(plan::Engine::trtllm, fp8, llama), "dtypes");
  // An fp32 KV cache (the executor's reference run): no engine keeps one.
  plan::Plan fp32_kv = layout(1, 4, 1, {1, 1, 4}, 64);
  fp32_kv.dtypes.kv_cache = plan::KvDtype::fp32;
  for (plan::Engine e : plan::kAllEngines)
    EXPECT_EQ(unexpressible_field(e, fp32_kv, llama), "dtypes.kv_cache") << plan::engine_name(e);
  plan::Plan fp32_act = layout(1, 4, 1, {1, 1, 4}, 64);
  fp32_act.dtypes.activations = plan::ActivationDtype::fp32;
  for (plan::Engine e : plan::kAllEngines)
    EXPECT_EQ(unexpressible_field(e, fp32_act, llama), "dtypes.activations") << plan::engine_name(e);
  // A custom rank-to-device map, an EAGLE draft without its model, two-batch overlap on TensorRT-LLM.
  plan::Plan mapped = layout(1, 2, 1, {1, 1, 2}, 64);
  mapped.devices = {3, 5};
  EXPECT_EQ(unexpressible_field(plan::Engine::sglang, mapped, llama), "devices");
  plan::Plan eagle = layout(1, 4, 1, {1, 1, 4}, 64);
  eagle.speculative = {plan::SpecMethod::eagle, 3, {0.7}};
  EXPECT_EQ(unexpressible_field(plan::Engine::vllm, eagle, llama), "speculative.method");
  plan::EngineSettings tbo;
  tbo.two_batch_overlap = true;
  EXPECT_EQ(unexpressible_field(plan::Engine::trtllm, layout(1, 8, 1, {1, 8, 1}, 64), ds, tbo),
            "engine.two_batch_overlap");
  // Workers that would straddle nodes: a 12-GPU worker on nodes of 8.
  const testing::World two = testing::world("DeepSeek-V3", "h200-2x8");
  EXPECT_EQ(unexpressible_field(plan::Engine::sglang, layout(1, 4, 3, {1, 12, 1}, 96), two), "layout");
}

// Redundant experts (EPLB): vLLM's --enable-eplb with its config, SGLang's
// --ep-num-redundant-experts, TensorRT-LLM's Wide-EP load balancer with a slot per
// expert and per replica (the round trips: test_export_import.cpp).
TEST(DeployErrors, RedundantExpertsAreWrittenForEveryEngine) {
  const testing::World ds = testing::world("DeepSeek-V3", "h200x8");
  const plan::Plan eplb = layout(1, 1, 8, {1, 8, 1, 8}, 64);
  ExportOptions o;
  o.model_id = "org/model";
  const std::string vllm =
      export_launch(plan::Engine::vllm, eplb, ds.model, ds.cluster, {}, o, args(plan::Engine::vllm)).script();
  EXPECT_NE(vllm.find("--enable-eplb"), std::string::npos) << vllm;
  EXPECT_NE(vllm.find("num_redundant_experts\": 8"), std::string::npos) << vllm;
  const std::string sglang =
      export_launch(plan::Engine::sglang, eplb, ds.model, ds.cluster, {}, o, args(plan::Engine::sglang)).script();
  EXPECT_NE(sglang.find("--ep-num-redundant-experts 8"), std::string::npos) << sglang;
  o.prequantized = true;  // TensorRT-LLM loads FP8 weights from an FP8 checkpoint
  const std::string trt =
      export_launch(plan::Engine::trtllm, eplb, ds.model, ds.cluster, {}, o, args(plan::Engine::trtllm)).script();
  EXPECT_NE(trt.find("backend: WIDEEP"), std::string::npos) << trt;
  EXPECT_NE(trt.find("num_slots: 264"), std::string::npos) << trt;  // 256 experts + 8 replicas
  EXPECT_NE(trt.find("layer_updates_per_iter: 1"), std::string::npos) << trt;
}

std::string import_error(plan::Engine e, const std::vector<std::string>& argv, const std::string& yaml = "") {
  const testing::World w = testing::world("DeepSeek-V3", "h200x8");
  plan::Plan base;
  try {
    (void)import_launch(e, argv, base, w.model, w.cluster, args(e),
                        yaml.empty() ? std::nullopt : std::optional<std::string>(yaml));
  } catch (const std::invalid_argument& x) {
    return x.what();
  }
  return "(imported)";
}

TEST(DeployErrors, ABadCommandLineNamesTheFlag) {
  using E = plan::Engine;
  EXPECT_EQ(import_error(E::vllm, {"vllm", "serve", "m", "--tensor-parallel-size", "8", "--turbo"}),
            "--turbo is not an argument of vllm serve 0.18.0");
  EXPECT_EQ(import_error(E::vllm, {"vllm", "serve", "m", "--tensor-parallel-size", "eight"}),
            "--tensor-parallel-size: \"eight\" is not an integer");
  EXPECT_EQ(import_error(E::vllm, {"vllm", "serve", "m", "--tensor-parallel-size"}),
            "--tensor-parallel-size needs a value");
  EXPECT_EQ(import_error(E::vllm, {"vllm", "serve", "m", "--enable-expert-parallel=yes"}),
            "--enable-expert-parallel takes no value, was given \"yes\"");
  EXPECT_EQ(import_error(E::vllm, {"vllm", "serve", "m", "-tp", "8", "--data-parallel-size", "2"}),
            "--tensor-parallel-size 8 x --data-parallel-size 2 x --pipeline-parallel-size 1 = 16 GPUs: the cluster "
            "h200x8 has 8");
  EXPECT_EQ(import_error(E::sglang, {"python3", "-m", "sglang.launch_server", "--model-path", "m", "--tp-size", "16"}),
            "--tp-size 16 x --pp-size 1 = 16 GPUs: the cluster h200x8 has 8");
  EXPECT_EQ(import_error(E::sglang, {"python3", "-m", "sglang.launch_server", "--kv-cache-dtype", "fp9"}),
            "--kv-cache-dtype: \"fp9\" is not one of auto, fp8_e5m2, fp8_e4m3, bf16, bfloat16, fp4_e2m1");
  EXPECT_EQ(import_error(E::trtllm, {"trtllm-serve", "m", "--tp_size", "8"}, "enable_attention_dp: maybe\n"),
            "the extra options: enable_attention_dp: \"maybe\" is not true or false");
  EXPECT_EQ(import_error(E::trtllm, {"trtllm-serve", "m"}, "kv_cache_config:\n  dtyp: fp8\n"),
            "the extra options: kv_cache_config.dtyp is not a field of trtllm-serve 1.3.0rc3's extra options");
  EXPECT_EQ(import_error(E::trtllm, {"python3", "-m", "vllm"}),
            "the command line does not run trtllm-serve (give it from the engine's program on, e.g. \"trtllm-serve "
            "MODEL ...\")");
}

TEST(DeployErrors, WhatTheEnginesAcceptBesidesCanonicalFlags) {
  const testing::World w = testing::world("DeepSeek-V3", "h200x8");
  plan::Plan base;
  // vLLM takes underscores for dashes and its short aliases; launchers before the program are skipped.
  const Imported v = import_launch(plan::Engine::vllm,
                                   {"env", "VLLM_X=1", "vllm", "serve", "m", "--tensor_parallel_size", "4", "-dp", "2"},
                                   base, w.model, w.cluster, args(plan::Engine::vllm));
  EXPECT_EQ(v.plan.attention.tp, 4);
  EXPECT_EQ(v.plan.attention.dp, 2);
  EXPECT_EQ(v.plan.moe.tp, 8);
  // A hand-written TensorRT-LLM YAML with a nested config the list does not expand.
  const Imported t = import_launch(
      plan::Engine::trtllm,
      {"mpirun", "-np", "8", "trtllm-llmapi-launch", "trtllm-serve", "serve", "m", "--tp_size", "8", "--ep_size", "8"},
      base, w.model, w.cluster, args(plan::Engine::trtllm),
      std::string("enable_attention_dp: true\ncuda_graph_config:\n  batch_sizes: [1, 2, 4]\n"
                  "kv_cache_config: {dtype: fp8, free_gpu_memory_fraction: 0.8}\n"));
  EXPECT_EQ(t.plan.attention.dp, 8);
  EXPECT_EQ(t.plan.moe.ep, 8);
  EXPECT_EQ(t.plan.dtypes.kv_cache, plan::KvDtype::fp8);
  EXPECT_EQ(t.model_id, "m");
}

}  // namespace
}  // namespace dayzero::deploy
