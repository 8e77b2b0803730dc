#pragma once
// The reference goldens of a tiny fixture (tests/fixtures/tiny/<family>/golden.safetensors):
// the prompt, the greedy tokens, and the prefill and decode logits of transformers.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "executor/weights.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "plan/plan.h"

namespace dayzero::executor::testing {

// fp32 against the fp32 reference: summation order differs (Eigen vs torch), so
// not bit-equal; the goldens' fp32-vs-fp64 gap is of the same order (golden.json).
inline constexpr double kLogitTolerance = 1e-4;

struct Golden {
  std::vector<int64_t> prompt, generated;
  Tensor prefill, decode;  // [prompt, vocab], [generated - 1, vocab]
};

inline std::string tiny_dir(const std::string& family) { return std::string(DAYZERO_FIXTURES_DIR) + "/tiny/" + family; }

// A plan of the fixture on one rank at the goldens' full precision (a test widens it).
inline plan::Plan fixture_plan(const model::Model& m) {
  plan::Plan p;
  p.model = m.config.source;
  p.dtypes.kv_cache = plan::KvDtype::fp32;
  return p;
}

inline Golden read_golden(const std::string& dir) {
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

inline double max_abs_diff(const float* a, const float* b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

}  // namespace dayzero::executor::testing
