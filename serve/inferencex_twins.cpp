#include "serve/inferencex_twins.h"

#include <vector>

#include "serve/inferencex_rows.h"

namespace dayzero::serve {

namespace {

// One line of a recipe's search space: ISL and OSL, the worker's TP and EP sizes (EP 1
// where the line names none), attention DP (then the row's TP is 1 and its attention DP
// the line's TP), and the concurrencies from `lo` to `hi` (doubling).
struct SpaceLine {
  int64_t isl, osl, tp, ep;
  bool dp_attention;
  int64_t lo, hi;
};
using Space = std::vector<SpaceLine>;

bool in_space(const BenchRow& r, const Space& space) {
  for (const SpaceLine& l : space) {
    const bool layout = l.dp_attention ? r.tp == 1 && r.attention_dp == l.tp : r.tp == l.tp && r.attention_dp == 1;
    if (r.isl == l.isl && r.osl == l.osl && layout && r.moe_ep == l.ep && r.concurrency() >= l.lo &&
        r.concurrency() <= l.hi)
      return true;
  }
  return false;
}

// The days [from, to) on which `image` served both recipes (`plain` empty: the MTP recipe
// alone, its plain twin having moved to another image).
struct Twins {
  const char* names;
  const char* model;  // a part of the row's model path
  const char* system;
  const char* backend;
  bool fp4;  // nvfp4 checkpoints, else FP8
  const char* image;
  const char* from;
  const char* to;
  Space plain, mtp;
};

constexpr int64_t k1K = 1024, k8K = 8192;

// TensorRT-LLM's DeepSeek-R1 recipes on B200 (bf3456727, 2026-01-15 06:26 +0800, which
// added the MTP twins on the plain recipes' release:1.1.0rc2.post2; the plain fp8 recipe
// left it for 1.2.0rc6.post2 at ec7bafaae, 2026-01-29, the fp4 one at 6eecc0e66,
// 2026-02-03; the MTP recipes left it at 5d517074c and 0aae52d4c, 2026-02-05 and -06).
const Space kTrtB200Fp8Plain = {{k1K, k1K, 8, 8, false, 4, 32},
                                {k1K, k1K, 8, 8, true, 64, 64},
                                {k1K, k8K, 8, 8, false, 4, 64},
                                {k8K, k1K, 8, 8, false, 4, 64}};
const Space kTrtB200Fp8Mtp = {{k1K, k1K, 8, 8, false, 4, 32}, {k1K, k1K, 8, 8, true, 64, 256},
                              {k1K, k8K, 8, 8, false, 4, 64}, {k1K, k8K, 8, 8, true, 128, 256},
                              {k8K, k1K, 8, 8, false, 4, 32}, {k8K, k1K, 8, 8, true, 64, 256}};
const Space kTrtB200Fp4Plain = {
    {k1K, k1K, 4, 1, false, 4, 32}, {k1K, k1K, 4, 4, false, 64, 128}, {k1K, k1K, 4, 4, true, 256, 256},
    {k1K, k1K, 8, 1, false, 4, 8},  {k1K, k1K, 8, 8, false, 16, 128}, {k1K, k1K, 8, 8, true, 256, 256},
    {k1K, k8K, 4, 1, false, 4, 32}, {k1K, k8K, 4, 4, false, 64, 128}, {k1K, k8K, 4, 4, true, 256, 256},
    {k1K, k8K, 8, 1, false, 4, 16}, {k1K, k8K, 8, 8, false, 32, 128}, {k1K, k8K, 8, 8, true, 256, 256},
    {k8K, k1K, 4, 4, false, 4, 32}, {k8K, k1K, 4, 4, true, 64, 256},  {k8K, k1K, 8, 1, false, 4, 32},
    {k8K, k1K, 8, 8, true, 64, 256}};
const Space kTrtB200Fp4Mtp = {
    {k1K, k1K, 4, 1, false, 4, 8},  {k1K, k1K, 4, 4, false, 16, 64}, {k1K, k1K, 4, 4, true, 128, 256},
    {k1K, k1K, 8, 1, false, 4, 8},  {k1K, k1K, 8, 8, false, 16, 32}, {k1K, k1K, 8, 8, true, 64, 256},
    {k1K, k8K, 4, 1, false, 4, 16}, {k1K, k8K, 4, 4, false, 32, 64}, {k1K, k8K, 4, 4, true, 128, 256},
    {k1K, k8K, 8, 1, false, 4, 4},  {k1K, k8K, 8, 8, false, 8, 64},  {k1K, k8K, 8, 8, true, 128, 256},
    {k8K, k1K, 4, 1, false, 4, 16}, {k8K, k1K, 4, 4, true, 32, 256}, {k8K, k1K, 8, 1, false, 4, 16},
    {k8K, k1K, 8, 8, true, 32, 256}};
// TensorRT-LLM's DeepSeek-R1 fp8 recipes on H200: both on release:1.1.0rc2.post2 from
// bf3456727 to 8c5128a95 (2026-05-18, both to 1.3.0rc14); 1K / 8K left both on 2026-03-27.
const Space kTrtH200Fp8Plain = {{k1K, k1K, 8, 8, false, 4, 64},
                                {k1K, k8K, 8, 8, false, 4, 64},
                                {k8K, k1K, 8, 8, false, 4, 32},
                                {k8K, k1K, 8, 8, true, 64, 64}};
const Space kTrtH200Fp8Mtp = {{k1K, k1K, 8, 8, false, 4, 64},  {k1K, k1K, 8, 8, true, 128, 256},
                              {k1K, k8K, 8, 8, false, 4, 128}, {k1K, k8K, 8, 8, true, 256, 256},
                              {k8K, k1K, 8, 8, false, 4, 32},  {k8K, k1K, 8, 8, true, 64, 256}};
// SGLang's DeepSeek-R1 fp8 recipes on B200: both on sglang:v0.5.9-cu130 from 12ba0ae07
// (2026-03-25) to 851c236d2 (2026-05-14).
const Space kSglangB200Fp8Plain = {{k1K, k1K, 8, 1, false, 4, 64},
                                   {k1K, k8K, 8, 1, false, 4, 64},
                                   {k8K, k1K, 8, 1, false, 4, 4},
                                   {k8K, k1K, 4, 1, false, 4, 32}};
const Space kSglangB200Fp8Mtp = {
    {k1K, k1K, 8, 1, false, 4, 512}, {k1K, k8K, 8, 1, false, 4, 512}, {k8K, k1K, 8, 1, false, 4, 512}};

// SGLang's Qwen3.5 fp8 recipes on H200: the MTP one added on the plain recipe's
// sglang:v0.5.9-cu129-amd64 at 51e31df4a (2026-04-06), moved to v0.5.10.post1 at 6cb829125
// (2026-04-14), back for a day and on again (2026-04-16).
const Space kQwenH200Fp8Plain = {{k1K, k1K, 8, 8, false, 4, 64}, {k8K, k1K, 8, 8, false, 4, 64}};
const Space kQwenH200Fp8Mtp = {{k1K, k1K, 8, 8, false, 4, 128}, {k8K, k1K, 8, 8, false, 4, 128}};

const char* const kTrt = "nvcr.io/nvidia/tensorrt-llm/release:1.1.0rc2.post2";

const std::vector<Twins>& all_twins() {
  static const std::vector<Twins> twins = {
      {"dsr1-fp8-b200-trt and dsr1-fp8-b200-trt-mtp", "DeepSeek", "b200_sxm", "trtllm", false, kTrt, "2026-01-14",
       "2026-01-29", kTrtB200Fp8Plain, kTrtB200Fp8Mtp},
      {"dsr1-fp8-b200-trt-mtp",
       "DeepSeek",
       "b200_sxm",
       "trtllm",
       false,
       kTrt,
       "2026-01-29",
       "2026-02-05",
       {},
       kTrtB200Fp8Mtp},
      {"dsr1-fp4-b200-trt and dsr1-fp4-b200-trt-mtp", "DeepSeek", "b200_sxm", "trtllm", true, kTrt, "2026-01-14",
       "2026-02-03", kTrtB200Fp4Plain, kTrtB200Fp4Mtp},
      {"dsr1-fp4-b200-trt-mtp",
       "DeepSeek",
       "b200_sxm",
       "trtllm",
       true,
       kTrt,
       "2026-02-03",
       "2026-02-06",
       {},
       kTrtB200Fp4Mtp},
      {"dsr1-fp8-h200-trt and dsr1-fp8-h200-trt-mtp", "DeepSeek", "h200_sxm", "trtllm", false, kTrt, "2026-01-14",
       "2026-05-18", kTrtH200Fp8Plain, kTrtH200Fp8Mtp},
      {"dsr1-fp8-b200-sglang and dsr1-fp8-b200-sglang-mtp", "DeepSeek", "b200_sxm", "sglang", false,
       "lmsysorg/sglang:v0.5.9-cu130", "2026-03-25", "2026-05-14", kSglangB200Fp8Plain, kSglangB200Fp8Mtp},
      {"qwen3.5-fp8-h200-sglang and qwen3.5-fp8-h200-sglang-mtp", "Qwen3.5", "h200_sxm", "sglang", false,
       "lmsysorg/sglang:v0.5.9-cu129-amd64", "2026-04-06", "2026-04-17", kQwenH200Fp8Plain, kQwenH200Fp8Mtp},
  };
  return twins;
}

const Twins* twins_of(const BenchRow& r) {
  if (r.deployer != Deployer::inferencex || r.disaggregated()) return nullptr;
  const bool fp4 = detail::nvfp4_row(r);
  for (const Twins& t : all_twins())
    if (r.model_path.find(t.model) != std::string::npos && r.system == t.system && r.backend == t.backend &&
        fp4 == t.fp4 && r.image == t.image && r.measured_date >= t.from && r.measured_date < t.to)
      return &t;
  return nullptr;
}

}  // namespace

TwinRecipe inferencex_twin_recipe(const BenchRow& r) {
  const Twins* t = twins_of(r);
  if (!t) return TwinRecipe::none;
  if (t->plain.empty()) return TwinRecipe::mtp;  // the image served the MTP recipe alone
  if (r.in_database_dump) return TwinRecipe::plain;
  const bool plain = in_space(r, t->plain), mtp = in_space(r, t->mtp);
  if (plain && mtp) return TwinRecipe::either;
  return mtp ? TwinRecipe::mtp : TwinRecipe::plain;  // in neither: as before the twins, plain
}

std::string inferencex_twin_names(const BenchRow& r) {
  const Twins* t = twins_of(r);
  return t ? t->names : "";
}

}  // namespace dayzero::serve
