// serve/srt_slurm_recipes.h: InferenceX's srt-slurm recipes as a table, the
// recipe a disaggregated row ran (its key, and the version of its measurement's day), and
// what the recipe's limits do to a prediction.
#include "serve/srt_slurm_recipes.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "serve/bench_predict.h"
#include "simulate/efficiency.h"

namespace dayzero::serve {
namespace {

constexpr const char* kRecipeHeader =
    "engine,model,gpu,precision,isl,osl,prefill_workers,prefill_gpus,prefill_attention_dp,decode_workers,decode_gpus,"
    "decode_attention_dp,concurrency,decode_max_batch,decode_max_tokens,prefill_max_batch,prefill_max_tokens,"
    "first_day,last_day,recipe\n";
// The point: 1 prefill worker of 4 GPUs under attention DP, 4 decode workers of 8 without.
constexpr const char* kPoint = "trtllm,deepseek-r1,gb200,fp4,1024,1024,1,4,1,4,8,0,";
// 1 prefill worker, 4 decode workers of 8 GPUs without attention DP, at `concurrency`.
BenchRow recipe_row(int64_t concurrency, const std::string& day) {
  BenchRow r;
  r.mode = "disagg";
  r.backend = "trtllm";
  r.model_path = "deepseek-ai/DeepSeek-V3";
  r.system = "gb200";
  r.gemm_quant = r.moe_quant = "nvfp4";
  r.isl = r.osl = 1024;
  r.prefill = {1, 1, 1, 1, 4, 1, 4};
  r.decode = {concurrency / 4, 4, 8, 1, 1, 1, 8};
  r.measured_date = day;
  return r;
}

// InferenceX's Kimi-K2.5 vLLM point below: 8K prompts, 128 in flight, 1 prefill worker written
// as TP 4 (EP 4), 4 decode workers of TP 4 (EP 4).
BenchRow kimi_vllm_row() {
  BenchRow r = recipe_row(128, "");
  r.backend = "vllm";
  r.model_path = "moonshotai/Kimi-K2.5";
  r.isl = 8192;
  r.prefill = {1, 1, 4, 1, 1, 1, 4};
  r.decode = {32, 4, 4, 1, 1, 1, 4};
  return r;
}

TEST(SrtSlurmRecipes, ThePointListedOnTheMeasurementsDayIsFound) {
  const std::string p = kPoint;
  const auto table =
      parse_srt_slurm_recipes(std::string(kRecipeHeader) + p + "192,16,16,8,8192,2026-02-01,2026-03-01,a.yaml\n" + p +
                                  "192,32,32,16,16384,2026-03-20,2026-06-01,b.yaml\n" + p +
                                  "96,32,32,16,16384,2026-03-20,2026-06-01,b.yaml\n"
                                  "trtllm,deepseek-r1,gb300,fp4,1024,1024,1,4,1,4,8,0,192,64,64,16,16384,"
                                  "2026-03-20,2026-06-01,c.yaml\n",
                              "t.csv");
  ASSERT_EQ(table.size(), 4u);
  EXPECT_EQ(find_srt_slurm_recipe(table, recipe_row(192, "2026-03-23"))->decode_max_batch, 32);  // the latest listed
  EXPECT_EQ(find_srt_slurm_recipe(table, recipe_row(192, "2026-02-07"))->decode_max_batch, 16);
  EXPECT_EQ(find_srt_slurm_recipe(table, recipe_row(192, "2026-01-01")), nullptr);     // none listed by then
  EXPECT_EQ(find_srt_slurm_recipe(table, recipe_row(192, ""))->decode_max_batch, 32);  // no date: the latest
  EXPECT_EQ(find_srt_slurm_recipe(table, recipe_row(96, ""))->prefill_max_tokens, 16384);
  EXPECT_EQ(find_srt_slurm_recipe(table, recipe_row(48, "2026-03-23")), nullptr);  // a concurrency no point lists
  BenchRow other = recipe_row(192, "2026-03-23");
  other.decode.attention_dp = 8, other.decode.tp = 1;  // attention DP: another point
  EXPECT_EQ(find_srt_slurm_recipe(table, other), nullptr);
  other = recipe_row(192, "2026-03-23");
  other.prefill.attention_dp = 1, other.prefill.tp = 4;  // a prefill worker without attention DP
  EXPECT_EQ(find_srt_slurm_recipe(table, other), nullptr);
  other = recipe_row(192, "2026-03-23");
  other.model_path = "moonshotai/Kimi-K2.5";
  EXPECT_EQ(find_srt_slurm_recipe(table, other), nullptr);
  other = recipe_row(192, "2026-03-23");
  other.backend = "sglang";  // another engine's recipes
  EXPECT_EQ(find_srt_slurm_recipe(table, other), nullptr);
}

// Hand-read: InferenceX's kimik2.5-fp4-gb200-dynamo-vllm lists 1 prefill worker (tp 4, ep 4,
// dp-attn) and 4 decode workers (tp 4, ep 4) at 4-128 in flight with 8K prompts, launching
// recipes/vllm/kimi-k2.5/8k1k/disagg-gb200-1p4d-dep4-tep4.yaml (srt-slurm): prefill
// tensor-parallel-size 1, data-parallel-size 4, max-num-seqs 64, max-num-batched-tokens
// 16384; decode tensor-parallel-size 4, max-num-seqs 16, max-num-batched-tokens 10240. The
// measured rows write the prefill worker as TP 4 without attention DP.
TEST(SrtSlurmRecipes, AVllmPoolWrittenAsTpRunsTheRecipesDataParallelRanks) {
  BenchRow r = kimi_vllm_row();
  const auto table = parse_srt_slurm_recipes(std::string(kRecipeHeader) +
                                                 "vllm,kimi-k2.5,gb200,fp4,8192,1024,1,4,1,4,4,0,128,16,10240,64,"
                                                 "16384,2026-04-07,2026-06-21,r.yaml\n",
                                             "t.csv");
  const SrtSlurmRecipe* x = find_srt_slurm_recipe(table, r);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->decode_max_batch, 16);
  const BenchPool pre = vllm_data_parallel(r.prefill, x->prefill_attention_dp, r);
  EXPECT_EQ(pre.tp, 1);
  EXPECT_EQ(pre.attention_dp, 4);
  EXPECT_EQ(pre.batch_size, 1);  // one prompt per worker: at least one per rank
  EXPECT_EQ(pre.gpus(), 4);
  const BenchPool dec = vllm_data_parallel(r.decode, x->decode_attention_dp, r);
  EXPECT_EQ(dec.tp, 4);  // the recipe's decode is TP 4: as written
  EXPECT_EQ(dec.attention_dp, 1);
  // 1,024 in flight on one decode worker of 16 GPUs under DP: 64 a rank.
  const BenchPool wide = vllm_data_parallel({1024, 1, 16, 1, 1, 1, 16}, true, r);
  EXPECT_EQ(wide.attention_dp, 16);
  EXPECT_EQ(wide.batch_size, 64);
  // The same layout under SGLang or TensorRT-LLM says no attention DP: another point.
  BenchRow other = r;
  other.backend = "sglang";
  EXPECT_EQ(find_srt_slurm_recipe(table, other), nullptr);
  EXPECT_EQ(vllm_data_parallel(other.prefill, true, other).tp, 4);
}

TEST(SrtSlurmRecipes, BadTablesNameFileLineAndColumn) {
  const std::pair<std::string, std::string> cases[] = {
      {"engine,model\n", "column 3"},
      {"model,gpu\n", "column 1"},
      {std::string(kRecipeHeader) + kPoint + "192,x,32,16,16384,a,b,c\n", "line 2, decode_max_batch"},
      {std::string(kRecipeHeader) + "trtllm,deepseek-r1,gb200,fp4\n", "line 2"},
      {std::string(kRecipeHeader) + "trtllm,,gb200,fp4,1024,1024,1,4,1,4,8,0,192,32,32,16,16384,a,b,c\n",
       "line 2, model"},
      {std::string(kRecipeHeader) + kPoint + "192,-1,32,16,16384,a,b,c\n", "line 2, decode_max_batch"},
  };
  for (const auto& [text, named] : cases) {
    try {
      parse_srt_slurm_recipes(text, "recipes.csv");
      ADD_FAILURE() << text << " was accepted";
    } catch (const core::InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("recipes.csv"), std::string::npos) << what;
      EXPECT_NE(what.find(named), std::string::npos) << what;
    }
  }
}

// Hand-read: InferenceX's dsr1-fp4-gb200-dynamo-trt lists 1 prefill worker (TP 4, EP 4,
// attention DP) and 4 decode workers (TP 8) at 12-192 in flight with
// recipes/trtllm/gb200-fp4/1k1k/stp/ctx1_gen4_tep8_batch32_eplb0_mtp0.yaml (srt-slurm):
// decode max_batch_size 32, max_num_tokens 32; prefill max_batch_size 16, max_num_tokens 16384.
TEST(SrtSlurmRecipes, TheShippedTableHoldsTheRecipesAsWritten) {
  const auto table =
      load_srt_slurm_recipes(std::filesystem::path(DAYZERO_DATA_DIR) / "fidelity" / "srt-slurm-recipes.csv");
  EXPECT_GT(table.size(), 300u);
  const SrtSlurmRecipe* x = find_srt_slurm_recipe(table, recipe_row(192, "2026-03-23"));
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->decode_max_batch, 32);
  EXPECT_EQ(x->decode_max_tokens, 32);
  EXPECT_EQ(x->prefill_max_batch, 16);
  EXPECT_EQ(x->prefill_max_tokens, 16384);
  EXPECT_NE(x->recipe.find("ctx1_gen4_tep8_batch32"), std::string::npos) << x->recipe;
  BenchRow kimi = kimi_vllm_row();  // the vLLM point above
  kimi.measured_date = "2026-04-08";
  const SrtSlurmRecipe* v = find_srt_slurm_recipe(table, kimi);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->decode_max_batch, 16);
  EXPECT_EQ(v->prefill_max_tokens, 16384);
  EXPECT_NE(v->recipe.find("vllm/kimi-k2.5/8k1k/disagg-gb200-1p4d-dep4-tep4"), std::string::npos) << v->recipe;
}

}  // namespace
}  // namespace dayzero::serve
