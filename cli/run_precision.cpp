#include "cli/run_precision.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <span>

#include "cli/format.h"
#include "executor/precision.h"
#include "executor/weight_convert.h"

namespace dayzero::cli {

namespace {
std::string dtypes_text(const plan::PlanDtypes& d) {
  std::string out;
  for (const auto& [part, v] : {std::pair{"attention", d.attention},
                                {"dense_mlp", d.dense_mlp},
                                {"experts", d.experts},
                                {"embedding", d.embedding}})
    out += std::string(part) + " " + std::string(model::precision_name(v)) + ", ";
  return out + "KV cache " + std::string(plan::kv_dtype_name(d.kv_cache));
}

std::string sci(double x) {  // three significant digits: KL divergences span many decades
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

}  // namespace

// What the backend applies of the plan's weight dtypes, and what not.
void print_weight_conversions(const plan::Plan& plan, const std::string& backend) {
  std::string applied, recorded;
  const auto& d = plan.dtypes;
  for (const auto& [part, v] : {std::pair{"attention", d.attention},
                                {"dense_mlp", d.dense_mlp},
                                {"experts", d.experts},
                                {"embedding", d.embedding}}) {
    if (v == model::WeightPrecision::checkpoint) continue;
    std::string& list = executor::converts_to(v) ? applied : recorded;
    list += std::string(list.empty() ? "" : ", ") + part + " " + std::string(model::precision_name(v));
  }
  if (!applied.empty())
    std::cout << "weights converted to the plan's dtypes when loaded (" << applied
              << (applied.find("fp8") != std::string::npos ? "; fp8: E4M3 with 128 x 128 block scales" : "")
              << "); the " << backend << " backend dequantizes them to float32 as it multiplies\n";
  if (!recorded.empty())
    std::cout << "note: the plan's weight dtypes (" << recorded << ") are recorded, not applied: the " << backend
              << " backend converts to bf16 and fp8 only, and runs these as the checkpoint stores them\n";
}

// The run's logits against the reference run of the same weights and prompts
// (executor::reference_plan: the checkpoint's weights, an fp32 KV cache). Each rank
// that holds a sequence's logits once (the last stage's first TP rank) compares
// them; the comparisons are joined on every rank.
plan::PrecisionCheck check_precision(const model::Model& m, const plan::Plan& plan, executor::RunnerOptions ro,
                                     const std::string& weights, executor::Communicator& comm,
                                     const std::vector<std::vector<int64_t>>& prompts, int64_t decode_steps,
                                     const executor::RunResult& candidate) {
  const plan::Plan ref_plan = executor::reference_plan(plan);
  ro.timing_iterations = 0;  // the reference's step times are not measured
  executor::RunComparison mine;
  {
    executor::Runner ref(m, ref_plan, comm, weights, ro);
    const executor::RunResult reference = ref.run(prompts, decode_steps);
    const int r = comm.rank();
    if (r / plan.ranks_per_stage() == plan.pp - 1 && plan.attn_tp_index(r) == 0)
      mine = executor::compare_runs(reference.sequences, candidate.sequences);
  }
  const nlohmann::json j = {{"rows", mine.logits.rows},
                            {"agree", mine.logits.top1_agreeing_rows},
                            {"kl_sum", mine.logits.kl_sum_nats},
                            {"kl_max", mine.logits.kl_max_nats},
                            {"max_abs", mine.logits.max_abs_diff},
                            {"sequences", mine.sequences},
                            {"equal", mine.sequences_tokens_equal},
                            {"skipped", mine.decode_rows_skipped}};
  const std::string text = j.dump();
  executor::RunComparison all;
  for (const auto& part : comm.all_gather_bytes(std::as_bytes(std::span<const char>(text.data(), text.size())))) {
    const auto p = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(part.data()), part.size()));
    executor::RunComparison c;
    c.logits = {p.at("rows").get<int64_t>(), p.at("agree").get<int64_t>(), p.at("kl_sum").get<double>(),
                p.at("kl_max").get<double>(), p.at("max_abs").get<double>()};
    c.sequences = p.at("sequences").get<int64_t>();
    c.sequences_tokens_equal = p.at("equal").get<int64_t>();
    c.decode_rows_skipped = p.at("skipped").get<int64_t>();
    all.merge(c);
  }
  plan::PrecisionCheck out;
  out.reference = "the same plan with the weights as the checkpoint stores them, KV cache " +
                  std::string(plan::kv_dtype_name(ref_plan.dtypes.kv_cache));
  out.candidate = dtypes_text(plan.dtypes);
  out.rows = all.logits.rows;
  out.top1_agreeing_rows = all.logits.top1_agreeing_rows;
  out.decode_rows_skipped = all.decode_rows_skipped;
  out.kl_mean_nats = all.logits.kl_mean_nats();
  out.kl_max_nats = all.logits.kl_max_nats;
  out.max_abs_logit_diff = all.logits.max_abs_diff;
  out.sequences = all.sequences;
  out.sequences_tokens_equal = all.sequences_tokens_equal;
  return out;
}

void print_precision(const plan::PrecisionCheck& c) {
  std::cout << "precision check: " << c.candidate << "\n  against " << c.reference << "\n  " << c.rows
            << " teacher-forced rows (every prompt position; decode steps while the greedy tokens agree, "
            << c.decode_rows_skipped << " after they parted not compared): KL divergence mean " << sci(c.kl_mean_nats)
            << " nats, max " << sci(c.kl_max_nats) << "; top-1 agreement "
            << fixed(100.0 * static_cast<double>(c.top1_agreeing_rows) /
                         static_cast<double>(std::max<int64_t>(1, c.rows)),
                     1)
            << " %; max |logit diff| " << sci(c.max_abs_logit_diff) << "; greedy tokens equal in "
            << c.sequences_tokens_equal << " of " << c.sequences << " sequence(s)\n";
}

}  // namespace dayzero::cli
