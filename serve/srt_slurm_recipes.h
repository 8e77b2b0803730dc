#pragma once
// NVIDIA/srt-slurm's disaggregated recipes, which InferenceX's multi-node TensorRT-LLM and
// SGLang runs launched (scenarios/fidelity/srt-slurm-recipes.csv, written from InferenceX's
// configurations and the srt-slurm recipes they name by tools/srt_slurm_recipes.py). A disaggregated row names each
// pool's layout and workers, and a decode batch that is its concurrency over the decode workers; the engine ran the
// recipe's limits, which are often smaller (4 decode workers of `max_batch_size: 32` at 192 in flight: 64 requests wait
// for a decode slot) and, for the prefill workers, larger (16 prompts and 16,384 tokens a step where the generator's
// rule gives one prompt of ISL + 1,500 tokens). docs/ENGINE_DEFAULTS.md, "Disaggregated runs".

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "serve/bench_rows.h"

namespace dayzero::serve {

struct SrtSlurmRecipe {
  // The key a row is matched by: the configuration's point.
  std::string engine;     // "trtllm", "sglang" or "vllm", as a row's backend
  std::string model;      // "deepseek-r1" (a row's DeepSeek-V3 or -R1), "kimi-k2.5", "glm-5", ...
  std::string gpu;        // "gb200", "b200", "h200", ... (a row's system without "_sxm")
  std::string precision;  // "fp8" or "fp4" (a row's nvfp4)
  int64_t isl = 0, osl = 0;
  int64_t prefill_workers = 0, prefill_gpus = 0, decode_workers = 0, decode_gpus = 0;  // GPUs of one worker
  bool prefill_attention_dp = false, decode_attention_dp = false;
  int64_t concurrency = 0;  // one of the point's conc-list
  // What each pool's engine ran per attention-DP rank: sequences and tokens a step
  // (TensorRT-LLM's max_batch_size and max_num_tokens; SGLang's max-running-requests and
  // the smaller of chunked-prefill-size and max-prefill-tokens, divided by the DP size
  // under DP attention; vLLM's max-num-seqs and max-num-batched-tokens, which each
  // data-parallel engine core schedules with whole). 0: the recipe leaves the engine's default.
  int64_t decode_max_batch = 0, decode_max_tokens = 0, prefill_max_batch = 0, prefill_max_tokens = 0;
  // The first and last day InferenceX's configuration listed the point (YYYY-MM-DD), and
  // the srt-slurm recipe it launched.
  std::string first_day, last_day, recipe;
};

// Throws core::InputError naming the file, the line and the column for a missing or
// unknown column, a wrong count of fields, or a count that is not a positive integer.
std::vector<SrtSlurmRecipe> parse_srt_slurm_recipes(const std::string& text, const std::string& file);
std::vector<SrtSlurmRecipe> load_srt_slurm_recipes(const std::filesystem::path& file);

// The recipe a disaggregated row ran: its key, listed by the configuration on or before
// the row's measurement (of several, the latest listed; any, for a row without a date).
// nullptr when none is (the row keeps the generator's rule). InferenceX's vLLM points
// name a worker's GPUs `tp` with `dp-attn`, which vLLM runs as data-parallel ranks of
// TP 1 (the recipe's tensor-parallel-size 1 and data-parallel-size N); the measured rows
// write such a worker as TP N without attention DP, so a vLLM pool of attention DP 1
// matches a recipe's attention-DP pool of as many GPUs (see vllm_data_parallel).
const SrtSlurmRecipe* find_srt_slurm_recipe(const std::vector<SrtSlurmRecipe>& table, const BenchRow& r);

// A vLLM pool written as TP N (find_srt_slurm_recipe) read as the recipe ran it:
// attention DP N of TP 1, its batch (sequences per worker) split over the DP ranks,
// rounded up. Any other pool as it is.
BenchPool vllm_data_parallel(const BenchPool& pool, bool recipe_attention_dp, const BenchRow& r);

}  // namespace dayzero::serve
