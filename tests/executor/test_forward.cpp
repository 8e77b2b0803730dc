// Single-rank forward of the tiny GQA and MLA fixtures against the transformers goldens:
// prefill logits, the 4 cached decode steps, and the greedy tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tiny_forward.h"

namespace dayzero::executor {
namespace {

// fp32 against the fp32 reference: summation order differs (Eigen vs torch), so
// not bit-equal; the goldens' fp32-vs-fp64 gap is of the same order (golden.json).
constexpr double kLogitTolerance = 1e-4;

struct Golden {
  std::vector<int64_t> prompt, generated;
  Tensor prefill, decode;
};

Golden read_golden(const std::string& dir) {
  model::SafetensorsFile f(dir + "/golden.safetensors");
  auto ints = [&](const char* name) {
    const auto* t = f.find(name);
    std::vector<int64_t> v(static_cast<size_t>(t->bytes() / 8));
    std::memcpy(v.data(), f.data(*t).data(), v.size() * 8);
    return v;
  };
  Golden g{ints("prompt_tokens"), ints("generated_tokens"), {}, {}};
  g.prefill = dequantize(find_weight(f, "prefill_logits"));
  g.decode = dequantize(find_weight(f, "decode_logits"));
  return g;
}

double max_abs_diff(const float* a, const float* b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

int64_t argmax(const float* p, int64_t n) { return std::max_element(p, p + n) - p; }

class Forward : public ::testing::TestWithParam<const char*> {};

TEST_P(Forward, MatchesReferenceGoldens) {
  const std::string dir = std::string(DAYZERO_FIXTURES_DIR) + "/tiny/" + GetParam();
  const Golden g = read_golden(dir);
  testing::TinyForward fwd(dir);
  const Tensor logits = fwd.step(g.prompt, 0);
  ASSERT_EQ(logits.shape, g.prefill.shape);
  const double prefill_diff = max_abs_diff(logits.data.data(), g.prefill.data.data(), logits.numel());
  EXPECT_LE(prefill_diff, kLogitTolerance);
  const int64_t V = logits.cols(), T = logits.rows();
  EXPECT_EQ(argmax(logits.row(T - 1), V), g.generated[0]);
  double decode_diff = 0;
  for (int64_t i = 0; i + 1 < static_cast<int64_t>(g.generated.size()); ++i) {
    const Tensor d = fwd.step({g.generated[i]}, T + i);
    decode_diff = std::max(decode_diff, max_abs_diff(d.data.data(), g.decode.row(i), V));
    EXPECT_EQ(argmax(d.data.data(), V), g.generated[i + 1]) << "decode step " << i;
  }
  EXPECT_LE(decode_diff, kLogitTolerance);
  RecordProperty("prefill_max_abs_diff", std::to_string(prefill_diff));
  std::printf("%s: prefill max |diff| %.3g, decode max |diff| %.3g\n", GetParam(), prefill_diff, decode_diff);
}

INSTANTIATE_TEST_SUITE_P(TinyFixtures, Forward, ::testing::Values("llama", "qwen3", "mixtral", "qwen3_moe", "deepseek_v3", "gpt_oss"));

}  // namespace
}  // namespace dayzero::executor
