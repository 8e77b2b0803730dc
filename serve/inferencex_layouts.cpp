#include "serve/inferencex_layouts.h"

#include <optional>

#include "serve/inferencex_rows.h"

namespace dayzero::serve {

namespace {

using detail::names;
using detail::nvfp4_row;

// A worker as InferenceX's recipe names it: TP (its GPUs), EP, and whether attention runs
// data-parallel (`dp-attn: true`); `dp_unknown` where the row does not say.
struct Recipe {
  int64_t tp = 1, ep = 1;
  bool dp_attention = false, dp_unknown = false;
};

// The recipe a row writes. The 2026-03-25 export writes the engine's layout (attention DP
// as tp 1 and the DP size); the multiplied sources write TP x EP GPUs: vLLM's rows as
// tp T, attention_dp E, moe_ep T x E (with or without `dp-attn`, which they do not tell
// apart: minimaxm2.5-fp8-b300-vllm's plain and dp-attn runs at 1,024 in flight, configs
// 735 and 827, are both `2 2 1 4`), the others' as width T x E (tp, or attention_dp under
// attention DP) with moe_tp T and moe_ep E. Empty where the row is in neither form.
std::optional<Recipe> recipe_of(const BenchRow& r, bool multiplied) {
  const bool dp_form = r.tp == 1 && r.attention_dp > 1;
  if (!dp_form && r.attention_dp > 1 && !(multiplied && r.backend == "vllm")) return std::nullopt;
  if (!multiplied) return Recipe{dp_form ? r.attention_dp : r.tp, r.moe_ep, dp_form, false};
  if (r.backend == "vllm") {
    if (r.attention_dp == 1) return Recipe{r.tp, r.moe_ep, false, false};
    if (r.moe_tp != 1 || r.moe_ep != r.tp * r.attention_dp) return std::nullopt;
    return Recipe{r.tp, r.attention_dp, false, true};
  }
  const int64_t width = dp_form ? r.attention_dp : r.tp;
  if (r.moe_ep == 1) return Recipe{width, 1, dp_form, false};
  if (r.moe_tp * r.moe_ep != width) return std::nullopt;
  return Recipe{r.moe_tp, r.moe_ep, dp_form, false};
}

// Whether vLLM ran expert parallelism (`--enable-expert-parallel`) for a recipe of EP `ep`:
// kimik2.5_{fp4,int4}_*.sh never pass it (to 2026-06); minimaxm2.5_fp8_h200.sh passes it
// whenever EP_SIZE >= 1 from 5e2c705d3 (2026-03-13) to 8014ee637 (2026-05-26, > 1 since)
// and none before; minimaxm2.5_fp8_b200.sh likewise (>= 1) to bddbf4031 (2026-04-03); the
// other MiniMax scripts when EP_SIZE > 1.
bool vllm_expert_parallel(const BenchRow& r, int64_t ep) {
  if (names(r.model_path, "Kimi")) return false;
  if (names(r.model_path, "MiniMax") && !nvfp4_row(r) && !r.measured_date.empty()) {
    if (r.system == "h200_sxm" && r.measured_date < "2026-05-26") return r.measured_date >= "2026-03-13";
    if (r.system == "b200_sxm" && r.measured_date < "2026-04-03") return true;
  }
  return ep > 1;
}

// Whether vLLM may have run the recipe's `dp-attn` as data parallelism: only
// minimaxm2.5_fp4_b200.sh and minimaxm2.5_fp4_b300.sh read DP_ATTENTION
// (`--tensor-parallel-size=1 --data-parallel-size=$TP --enable-expert-parallel`; the
// others launch TP workers), and their recipes' dp-attn lines are all at TP 2 and EP 2
// (nvidia-master.yaml, 2026-04-07 to 2026-04-30), beside plain lines of the same sizes.
bool vllm_may_run_dp_attention(const BenchRow& r, const Recipe& recipe) {
  return names(r.model_path, "MiniMax") && nvfp4_row(r) && (r.system == "b200_sxm" || r.system == "b300_sxm") &&
         recipe.tp == 2 && recipe.ep == 2;
}

// SGLang's dsr1_fp8_h200.sh and glm5_fp8_h200.sh pass no --ep-size: the experts are split
// by TP whatever the recipe's EP.
bool sglang_ignores_ep(const BenchRow& r) {
  return r.system == "h200_sxm" && (names(r.model_path, "DeepSeek") || names(r.model_path, "GLM-5"));
}

std::string layout_text(int64_t tp, int64_t dp, int64_t moe_tp, int64_t moe_ep) {
  return "tp " + std::to_string(tp) + ", attention_dp " + std::to_string(dp) + ", moe_tp " + std::to_string(moe_tp) +
         ", moe_ep " + std::to_string(moe_ep);
}

}  // namespace

bool inferencex_layout_multiplied(const std::string& source) {
  if (source.rfind("db-dump/", 0) == 0) return true;
  const std::string key = "source_file=";
  if (source.rfind(key, 0) != 0 || source.size() < key.size() + 10) return false;
  return source.compare(key.size(), 10, "2026-04-06") >= 0 && source.compare(key.size(), 2, "20") == 0;
}

void read_inferencex_layout(BenchRow& r, bool multiplied) {
  if (r.deployer != Deployer::inferencex || r.disaggregated()) return;
  const std::optional<Recipe> recipe = recipe_of(r, multiplied);
  if (!recipe) return;  // a layout in neither form: as written
  const bool vllm = r.backend == "vllm";
  bool dp = recipe->dp_attention;
  if (vllm) {
    if (recipe->dp_unknown && vllm_may_run_dp_attention(r, *recipe)) {
      r.layout_unknown = "InferenceX's recipe ran TP " + std::to_string(recipe->tp) + " and EP " +
                         std::to_string(recipe->ep) +
                         " with attention DP (a dp-attn line) or without (a plain line of the same sizes), and the "
                         "row's source writes both alike";
      return;
    }
    dp = dp && vllm_may_run_dp_attention(r, *recipe);
  }
  const bool dense_row = r.moe_tp * r.moe_ep == 1 && recipe->ep == 1;
  int64_t moe_tp = recipe->tp, moe_ep = 1;
  if (vllm && vllm_expert_parallel(r, recipe->ep)) {
    moe_tp = 1, moe_ep = recipe->tp;
  } else if (!vllm && !(r.backend == "sglang" && sglang_ignores_ep(r)) && recipe->ep > 1) {
    if (recipe->tp % recipe->ep != 0) return;  // not a recipe: as written
    moe_tp = recipe->tp / recipe->ep, moe_ep = recipe->ep;
  }
  if (dense_row && !(vllm && vllm_expert_parallel(r, 1))) moe_tp = moe_ep = 1;
  const int64_t tp = dp ? 1 : recipe->tp, attention_dp = dp ? recipe->tp : 1;
  const int64_t concurrency = r.concurrency();
  if (concurrency % (attention_dp * r.pp) != 0) {
    r.layout_unknown = "the row's concurrency " + std::to_string(concurrency) + " does not divide over the " +
                       std::to_string(attention_dp) + " attention-DP ranks of InferenceX's recipe";
    return;
  }
  if (tp == r.tp && attention_dp == r.attention_dp && moe_tp == r.moe_tp && moe_ep == r.moe_ep) return;
  r.layout_note = "served as InferenceX's script ran it (" + layout_text(tp, attention_dp, moe_tp, moe_ep) +
                  "); the row writes " + layout_text(r.tp, r.attention_dp, r.moe_tp, r.moe_ep);
  r.tp = tp, r.attention_dp = attention_dp, r.moe_tp = moe_tp, r.moe_ep = moe_ep;
  r.batch_size = concurrency / (attention_dp * r.pp);
}

}  // namespace dayzero::serve
