// The reduced formats the executor stores (executor/quantize.h), and the paged KV
// cache in each of them (executor/kv_cache.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "executor/kv_cache.h"
#include "executor/quantize.h"
#include "executor/weights.h"

namespace dayzero::executor {
namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

TEST(Quantize, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(-2.0f), 0xC000);
  // 1 + 2^-8 lies halfway between 1 (0x3F80, even) and 1 + 2^-7 (0x3F81): down to even.
  EXPECT_EQ(float_to_bf16(from_bits(0x3F808000)), 0x3F80);
  // Halfway between 0x3F81 (odd) and 0x3F82: up to even.
  EXPECT_EQ(float_to_bf16(from_bits(0x3F818000)), 0x3F82);
  // Just above halfway rounds up.
  EXPECT_EQ(float_to_bf16(from_bits(0x3F808001)), 0x3F81);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // The largest finite float rounds to infinity, as the hardware's cvt.rn does.
  EXPECT_TRUE(std::isinf(bf16_to_float(float_to_bf16(std::numeric_limits<float>::max()))));
}

TEST(Quantize, Fp8EveryFiniteCodeRoundTrips) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;  // NaN
    const float v = fp8_e4m3_to_float(static_cast<uint8_t>(c));
    EXPECT_EQ(float_to_fp8_e4m3(v), c) << "code " << c << " value " << v;
  }
}

TEST(Quantize, Fp8RoundsToNearestEvenAndSaturates) {
  // 1.0 is 0x38, 1.125 is 0x39, 1.25 is 0x3A (mantissa steps of 1/8 in [1, 2)).
  EXPECT_EQ(float_to_fp8_e4m3(1.0625f), 0x38);  // halfway 0x38 / 0x39: to even 0x38
  EXPECT_EQ(float_to_fp8_e4m3(1.1875f), 0x3A);  // halfway 0x39 / 0x3A: to even 0x3A
  EXPECT_EQ(float_to_fp8_e4m3(1.07f), 0x39);    // nearer 1.125
  EXPECT_EQ(float_to_fp8_e4m3(-1.07f), 0xB9);
  EXPECT_EQ(float_to_fp8_e4m3(448.0f), 0x7E);   // the largest finite value
  EXPECT_EQ(float_to_fp8_e4m3(1000.0f), 0x7E);  // saturated, not NaN
  EXPECT_EQ(float_to_fp8_e4m3(-1e30f), 0xFE);
  EXPECT_EQ(float_to_fp8_e4m3(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  // Subnormals: the smallest is 2^-9 (code 1); half of it ties to even 0, three quarters go up.
  EXPECT_EQ(float_to_fp8_e4m3(std::ldexp(1.0f, -10)), 0x00);
  EXPECT_EQ(float_to_fp8_e4m3(0.75f * std::ldexp(1.0f, -9)), 0x01);
  EXPECT_EQ(float_to_fp8_e4m3(1.5f * std::ldexp(1.0f, -9)), 0x02);  // tie 1 / 2: even
}

TEST(Quantize, RoundToStorage) {
  std::vector<float> x{1.0625f, 3.14159f, -500.0f};
  round_to_storage(x, plan::KvDtype::fp8);
  EXPECT_EQ(x, (std::vector<float>{1.0f, 3.25f, -448.0f}));
  std::vector<float> y{3.14159f};
  round_to_storage(y, plan::KvDtype::bf16);
  EXPECT_EQ(y[0], 3.140625f);  // 0x4049
  std::vector<float> z{3.14159f};
  round_to_storage(z, plan::KvDtype::fp32);
  EXPECT_EQ(z[0], 3.14159f);
}

// Writes rows 0..n-1 of `width` values each (value = row + col / 7) to one sequence.
std::vector<float> fill(KvCache& cache, int seq, int64_t n, int64_t width) {
  std::vector<float> rows(static_cast<size_t>(n * width));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t j = 0; j < width; ++j)
      rows[static_cast<size_t>(t * width + j)] = static_cast<float>(t) + static_cast<float>(j) / 7.0f;
  cache.extend(seq, n);
  for (int64_t l = 0; l < 2; ++l) cache.write(l, seq, 0, rows.data(), rows.data(), n);
  return rows;
}

TEST(KvCacheStorage, ReducedStorageReadsBackRoundedRowsInAFraction) {
  for (plan::KvDtype s : {plan::KvDtype::fp32, plan::KvDtype::bf16, plan::KvDtype::fp8}) {
    KvCache cache(2, 4, 6, 6, s);
    const int seq = cache.add_sequence();
    std::vector<float> rows = fill(cache, seq, 9, 6);  // 3 blocks of 4
    EXPECT_EQ(cache.bytes(), 2 * 3 * 4 * (6 + 6) * plan::kv_elem_bytes(s)) << plan::kv_dtype_name(s);
    round_to_storage(rows, s);
    KvRows scratch;
    const KvPages p = cache.pages(1, seq, scratch);
    ASSERT_EQ(p.tokens, 9);
    for (int64_t t = 0; t < 9; ++t)
      for (int64_t j = 0; j < 6; ++j) {
        EXPECT_EQ(p.k_row(t)[j], rows[static_cast<size_t>(t * 6 + j)]) << plan::kv_dtype_name(s) << " row " << t;
        EXPECT_EQ(p.v_row(t)[j], rows[static_cast<size_t>(t * 6 + j)]) << plan::kv_dtype_name(s) << " row " << t;
      }
    if (s == plan::KvDtype::fp32) EXPECT_EQ(cache.pages(1, seq).k, p.k);  // the cache itself, no copy
    else EXPECT_THROW((void)cache.pages(1, seq), std::logic_error);
  }
}

TEST(KvCacheStorage, KeysOnlyCacheInReducedStorage) {
  KvCache cache(2, 4, 3, 0, plan::KvDtype::bf16);  // the sparse-attention indexer's layout
  const int seq = cache.add_sequence();
  cache.extend(seq, 2);
  const float k[] = {1, 2, 3, 4, 5, 6};
  cache.write(0, seq, 0, k, nullptr, 2);
  KvRows scratch;
  const KvPages p = cache.pages(0, seq, scratch);
  EXPECT_EQ(p.tokens, 2);
  EXPECT_EQ(p.k_row(1)[2], 6.0f);
  EXPECT_EQ(p.v_width, 0);
}

}  // namespace
}  // namespace dayzero::executor
