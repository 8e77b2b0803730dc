// RoPE frequency tables (default, llama3, yarn) and both rotation layouts.
#include <gtest/gtest.h>

#include <cmath>

#include "executor/rope.h"

namespace dayzero::executor {
namespace {

constexpr double kTol = 1e-6;

TEST(Rope, DefaultHalfAndInterleavedLayouts) {
  model::RopeConfig r;  // theta 10000
  const RopeTable t = rope_default(r, 4);
  ASSERT_EQ(t.inv_freq.size(), 2u);
  EXPECT_DOUBLE_EQ(t.inv_freq[0], 1.0);   // 10000^0
  EXPECT_DOUBLE_EQ(t.inv_freq[1], 0.01);  // 10000^(-2/4)
  const std::vector<int64_t> pos = {1};
  // Half layout, x = [1, 2, 3, 4] at position 1: pairs (x0, x2) turn by 1 rad, (x1, x3) by 0.01 rad.
  Tensor x({1, 4}, {1, 2, 3, 4});
  apply_rope(x, 1, 4, 0, pos, t, RopeLayout::half);
  EXPECT_NEAR(x.data[0], -1.98411065, kTol);  // 1 cos 1 - 3 sin 1 = 0.540302 - 2.524413
  EXPECT_NEAR(x.data[1], 1.95990067, kTol);   // 2 cos .01 - 4 sin .01
  EXPECT_NEAR(x.data[2], 2.46237790, kTol);   // 3 cos 1 + 1 sin 1
  EXPECT_NEAR(x.data[3], 4.01979967, kTol);   // 4 cos .01 + 2 sin .01
  // Interleaved (DeepSeek): pairs (x0, x1) by 1 rad, (x2, x3) by 0.01 rad.
  Tensor y({1, 4}, {1, 2, 3, 4});
  apply_rope(y, 1, 4, 0, pos, t, RopeLayout::interleaved);
  EXPECT_NEAR(y.data[0], -1.14263966, kTol);  // 1 cos 1 - 2 sin 1
  EXPECT_NEAR(y.data[1], 1.92207560, kTol);   // 2 cos 1 + 1 sin 1
  EXPECT_NEAR(y.data[2], 2.95985067, kTol);   // 3 cos .01 - 4 sin .01
  EXPECT_NEAR(y.data[3], 4.02979950, kTol);   // 4 cos .01 + 3 sin .01
  // Position 0 is the identity; an offset leaves the features before it alone.
  Tensor z({1, 6}, {9, 9, 1, 2, 3, 4});
  apply_rope(z, 1, 6, 2, std::vector<int64_t>{0}, t, RopeLayout::half);
  EXPECT_EQ(z.data, (std::vector<float>{9, 9, 1, 2, 3, 4}));
}

TEST(Rope, Llama3Table) {
  // The tiny llama fixture: theta 5e5, d 16, factor 8, low 1, high 4, original context 64.
  // Wavelengths 2 pi / inv_freq: < 64/4 = 16 kept, > 64/1 = 64 divided by 8, between blended.
  model::RopeConfig r;
  r.type = "llama3";
  r.theta = 500000.0;
  r.factor = 8.0;
  r.low_freq_factor = 1.0;
  r.high_freq_factor = 4.0;
  r.original_max_position_embeddings = 64;
  const RopeTable t = rope_llama3(r, 16);
  ASSERT_EQ(t.inv_freq.size(), 8u);
  EXPECT_DOUBLE_EQ(t.inv_freq[0], 1.0);  // wavelength 6.28 < 16: unchanged
  // i = 1: inv_freq 5e5^(-1/8) = 0.193922745, wavelength 32.40; smooth = (64/32.40 - 1) / 3 = 0.325094;
  // (1 - 0.325094) * 0.193922745 / 8 + 0.325094 * 0.193922745 = 0.079403009.
  EXPECT_NEAR(t.inv_freq[1], 0.0794030092, 1e-9);
  // i = 2: 5e5^(-1/4) = 0.0376060309, wavelength 167 > 64: / 8 = 0.00470075387.
  EXPECT_NEAR(t.inv_freq[2], 0.00470075387, 1e-11);
  EXPECT_NEAR(t.inv_freq[7], 1.28917317e-06, 1e-14);  // 5e5^(-7/8) / 8
  EXPECT_EQ(t.attention_factor, 1.0);
}

TEST(Rope, YarnTable) {
  // The tiny gpt-oss fixture: theta 150000, d 16, factor 32, original 32, beta 32/1, truncate false.
  model::RopeConfig r;
  r.type = "yarn";
  r.theta = 150000.0;
  r.factor = 32.0;
  r.original_max_position_embeddings = 32;
  r.truncate = false;
  const RopeTable t = rope_yarn(r, 16);
  // Correction range: low = 16 ln(32 / (32 * 2 pi)) / (2 ln 150000) = -1.2336 -> 0;
  // high = 16 ln(32 / (1 * 2 pi)) / (2 ln 150000) = 1.09267. Ramp(i) = i / 1.09267.
  // i = 0: ramp 0, keeps the unscaled frequency 1.
  EXPECT_NEAR(t.inv_freq[0], 1.0, 1e-12);
  // i = 1: ramp 0.91519; 150000^(-1/8) = 0.225857 -> 0.225857 / 32 * 0.91519 + 0.225857 * 0.08481 = 0.0255648.
  EXPECT_NEAR(t.inv_freq[1], 0.0255647603, 1e-9);
  // i >= 2: ramp 1, fully interpolated: 150000^(-2/8) / 32 = 0.00158791.
  EXPECT_NEAR(t.inv_freq[2], 0.00158791484, 1e-11);
  // No mscale keys: attention factor = 0.1 ln 32 + 1 = 1.34657359.
  EXPECT_NEAR(t.attention_factor, 1.34657359, 1e-8);
  // DeepSeek-V3 sets mscale = mscale_all_dim = 1: the cos/sin factor cancels to 1.
  r.mscale = r.mscale_all_dim = 1.0;
  EXPECT_DOUBLE_EQ(rope_yarn(r, 16).attention_factor, 1.0);
  // truncate (the default) floors / ceils the range: [0, 2], so i = 1 gets ramp 1/2.
  r.truncate = true;
  const double f1 = std::pow(150000.0, -1.0 / 8.0);
  EXPECT_NEAR(rope_yarn(r, 16).inv_freq[1], f1 / 32.0 * 0.5 + f1 * 0.5, 1e-12);
}

TEST(Rope, AttentionFactorScalesCosAndSin) {
  RopeTable t;
  t.inv_freq = {0.0};  // angle 0: cos 1, sin 0
  t.attention_factor = 2.0;
  Tensor x({1, 2}, {1, 3});
  apply_rope(x, 1, 2, 0, std::vector<int64_t>{5}, t, RopeLayout::half);
  EXPECT_EQ(x.data, (std::vector<float>{2, 6}));
  EXPECT_THROW(apply_rope(x, 2, 2, 0, std::vector<int64_t>{5}, t, RopeLayout::half), std::invalid_argument);
}

}  // namespace
}  // namespace dayzero::executor
