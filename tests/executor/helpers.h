#pragma once
// Test helpers for the executor suite: deterministic random tensors, weights
// over in-memory floats, small safetensors files.
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "executor/tensor.h"
#include "executor/weights.h"
#include "model/safetensors.h"

namespace dayzero::executor::testing {

// Uniform values in [-scale, scale) from a 64-bit LCG (Knuth MMIX constants): reproducible everywhere.
inline Tensor random_tensor(std::vector<int64_t> shape, uint64_t seed, float scale = 1.0f) {
  Tensor t(std::move(shape));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& v : t.data) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = scale * (static_cast<float>(s >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f);
  }
  return t;
}

// A plain F32 weight viewing `t` (which must outlive it).
inline StoredWeight f32_weight(const Tensor& t, std::string name = "w") {
  StoredWeight w;
  w.name = std::move(name);
  w.shape = t.shape;
  w.data = std::as_bytes(std::span<const float>(t.data));
  return w;
}

struct RawTensor {
  std::string name;
  model::DType dtype;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};
template <class T>
RawTensor raw(std::string name, model::DType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  RawTensor r{std::move(name), dtype, std::move(shape), std::vector<std::byte>(values.size() * sizeof(T))};
  std::memcpy(r.bytes.data(), values.data(), r.bytes.size());
  return r;
}

inline std::filesystem::path write_file(const std::string& stem, const std::vector<RawTensor>& tensors) {
  const auto path = std::filesystem::temp_directory_path() / ("dayzero_executor_" + stem + ".safetensors");
  std::vector<model::TensorToWrite> out;
  for (const auto& t : tensors) {
    const auto* bytes = &t.bytes;
    out.push_back({t.name, t.dtype, t.shape, [bytes](int64_t offset, std::span<std::byte> dst) {
                     std::memcpy(dst.data(), bytes->data() + offset, dst.size());
                   }});
  }
  model::write_safetensors(path, out);
  return path;
}

}  // namespace dayzero::executor::testing
