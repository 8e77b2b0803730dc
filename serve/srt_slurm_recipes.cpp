// NVIDIA/srt-slurm's TensorRT-LLM disaggregated recipes (srt_slurm_recipes.h).
#include "serve/srt_slurm_recipes.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <sstream>

#include "core/error.h"
#include "core/input_file.h"
#include "serve/inferencex_rows.h"

namespace dayzero::serve {

namespace {

// clang-format off
constexpr std::array<const char*, 20> kRecipeColumns = {
    "engine", "model", "gpu", "precision", "isl", "osl",
    "prefill_workers", "prefill_gpus", "prefill_attention_dp",
    "decode_workers", "decode_gpus", "decode_attention_dp", "concurrency",
    "decode_max_batch", "decode_max_tokens", "prefill_max_batch", "prefill_max_tokens",
    "first_day", "last_day", "recipe"};
// clang-format on

std::vector<std::string> split_recipe_fields(const std::string& line) {
  std::vector<std::string> out(1);
  for (char ch : line)
    if (ch == ',') out.emplace_back();
    else if (ch != '\r') out.back() += ch;
  return out;
}

struct RecipeLine {
  const std::string& file;
  int64_t number;
  const std::vector<std::string>& fields;
  std::string where(size_t column) const { return "line " + std::to_string(number) + ", " + kRecipeColumns[column]; }
  int64_t count(size_t column, int64_t min) const {
    const std::string& s = fields[column];
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v < min)
      throw core::InputError(file, where(column), s, "expected an integer of at least " + std::to_string(min));
    return v;
  }
  const std::string& text(size_t column) const {
    if (fields[column].empty()) throw core::InputError(file, where(column), "", "must not be empty");
    return fields[column];
  }
};

SrtSlurmRecipe recipe_of(const RecipeLine& l) {
  SrtSlurmRecipe r;
  r.engine = l.text(0), r.model = l.text(1), r.gpu = l.text(2), r.precision = l.text(3);
  r.isl = l.count(4, 1), r.osl = l.count(5, 1);
  r.prefill_workers = l.count(6, 1), r.prefill_gpus = l.count(7, 1), r.prefill_attention_dp = l.count(8, 0) != 0;
  r.decode_workers = l.count(9, 1), r.decode_gpus = l.count(10, 1), r.decode_attention_dp = l.count(11, 0) != 0;
  r.concurrency = l.count(12, 1);
  r.decode_max_batch = l.count(13, 0), r.decode_max_tokens = l.count(14, 0);
  r.prefill_max_batch = l.count(15, 0), r.prefill_max_tokens = l.count(16, 0);
  r.first_day = l.text(17), r.last_day = l.text(18), r.recipe = l.text(19);
  return r;
}

// The row's model as the recipes name it: DeepSeek-V3 and -R1 share one architecture
// (the publisher labels InferenceX's DeepSeek-R1 runs either way).
std::string recipe_model_family(const std::string& hf_id) {
  std::string name = hf_id.substr(hf_id.find('/') == std::string::npos ? 0 : hf_id.find('/') + 1);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.rfind("deepseek-r1", 0) == 0 || name.rfind("deepseek-v3", 0) == 0) return "deepseek-r1";
  if (const size_t at = name.rfind("-nvfp4"); at != std::string::npos && at + 6 == name.size()) name.resize(at);
  return name;
}

std::string recipe_gpu_of(const std::string& system) {
  const size_t at = system.rfind("_sxm");
  return at != std::string::npos && at + 4 == system.size() ? system.substr(0, at) : system;
}

}  // namespace

std::vector<SrtSlurmRecipe> parse_srt_slurm_recipes(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) throw core::InputError(file, "line 1", "", "expected the header line");
  const std::vector<std::string> header = split_recipe_fields(line);
  for (size_t i = 0; i < kRecipeColumns.size(); ++i)
    if (i >= header.size() || header[i] != kRecipeColumns[i])
      throw core::InputError(file, "line 1, column " + std::to_string(i + 1), i < header.size() ? header[i] : "",
                             std::string("expected the column ") + kRecipeColumns[i]);
  if (header.size() != kRecipeColumns.size())
    throw core::InputError(file, "line 1", header.back(), "unknown column after " + std::string(kRecipeColumns.back()));
  std::vector<SrtSlurmRecipe> out;
  for (int64_t number = 2; std::getline(in, line); ++number) {
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> fields = split_recipe_fields(line);
    if (fields.size() != kRecipeColumns.size())
      throw core::InputError(file, "line " + std::to_string(number), std::to_string(fields.size()) + " fields",
                             "expected " + std::to_string(kRecipeColumns.size()));
    out.push_back(recipe_of(RecipeLine{file, number, fields}));
  }
  return out;
}

std::vector<SrtSlurmRecipe> load_srt_slurm_recipes(const std::filesystem::path& file) {
  return parse_srt_slurm_recipes(core::read_input_file(file), file.string());
}

namespace {

// The row's pool has the recipe's attention DP, or is a vLLM pool written as TP (header).
bool attention_dp_agrees(bool recipe_adp, const BenchPool& pool, const BenchRow& r) {
  return recipe_adp == (pool.attention_dp > 1) || (r.backend == "vllm" && recipe_adp && pool.attention_dp == 1);
}

}  // namespace

BenchPool vllm_data_parallel(const BenchPool& pool, bool recipe_attention_dp, const BenchRow& r) {
  if (r.backend != "vllm" || !recipe_attention_dp || pool.attention_dp != 1 || pool.tp <= 1) return pool;
  BenchPool p = pool;
  p.attention_dp = pool.tp;
  p.tp = 1;
  p.batch_size = (pool.batch_size + p.attention_dp - 1) / p.attention_dp;
  return p;
}

const SrtSlurmRecipe* find_srt_slurm_recipe(const std::vector<SrtSlurmRecipe>& table, const BenchRow& r) {
  if (!r.disaggregated()) return nullptr;
  const std::string model = recipe_model_family(r.model_path), gpu = recipe_gpu_of(r.system);
  const std::string precision = detail::nvfp4_row(r) ? "fp4" : "fp8";
  const SrtSlurmRecipe* found = nullptr;
  for (const SrtSlurmRecipe& x : table) {
    if (x.engine != r.backend || x.model != model || x.gpu != gpu || x.precision != precision || x.isl != r.isl ||
        x.osl != r.osl || x.prefill_workers != r.prefill.workers || x.prefill_gpus != r.prefill.gpus() ||
        !attention_dp_agrees(x.prefill_attention_dp, r.prefill, r) || x.decode_workers != r.decode.workers ||
        x.decode_gpus != r.decode.gpus() || !attention_dp_agrees(x.decode_attention_dp, r.decode, r) ||
        x.concurrency != r.concurrency())
      continue;
    if (!r.measured_date.empty() && x.first_day > r.measured_date) continue;  // listed after the run
    if (!found || x.first_day >= found->first_day) found = &x;
  }
  return found;
}

}  // namespace dayzero::serve
