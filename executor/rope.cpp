#include "executor/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "executor/kernel_checks.h"

namespace dayzero::executor {

namespace {
// YaRN (Peng et al. 2023, arXiv:2309.00071) ramp: guard against low == high as the
// reference does ("prevent singularity").
constexpr double kYarnRampEpsilon = 0.001;

void check_dim(int64_t rot_dim) {
  if (rot_dim <= 0 || rot_dim % 2 != 0)
    throw std::invalid_argument("rope: rotated dim " + std::to_string(rot_dim) + " must be positive and even");
}

// Dimension index at which a wavelength makes `rotations` turns over `max_pos` positions.
double yarn_correction_dim(double rotations, int64_t dim, double base, double max_pos) {
  return static_cast<double>(dim) * std::log(max_pos / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
}
}  // namespace

RopeTable rope_default(const model::RopeConfig& r, int64_t rot_dim) {
  check_dim(rot_dim);
  RopeTable t;
  // inv_freq[i] = theta^(-2i / d)
  for (int64_t i = 0; i < rot_dim / 2; ++i)
    t.inv_freq.push_back(1.0 / std::pow(r.theta, static_cast<double>(2 * i) / static_cast<double>(rot_dim)));
  return t;
}

RopeTable rope_llama3(const model::RopeConfig& r, int64_t rot_dim) {
  RopeTable t = rope_default(r, rot_dim);
  const double old_len = static_cast<double>(r.original_max_position_embeddings);
  if (old_len <= 0) throw std::invalid_argument("rope llama3: original_max_position_embeddings is not set");
  const double low_wavelen = old_len / r.low_freq_factor, high_wavelen = old_len / r.high_freq_factor;
  for (double& f : t.inv_freq) {
    const double wavelen = 2.0 * std::numbers::pi / f;
    if (wavelen < high_wavelen) continue;  // high frequencies: unchanged
    if (wavelen > low_wavelen) {           // low frequencies: interpolated by `factor`
      f /= r.factor;
      continue;
    }
    // In between: blend the two by how many turns the wavelength makes over the old context.
    const double smooth = (old_len / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
    f = (1.0 - smooth) * f / r.factor + smooth * f;
  }
  return t;
}

double yarn_mscale(double scale, double mscale) {
  if (scale <= 1.0) return 1.0;
  return 0.1 * mscale * std::log(scale) + 1.0;
}

RopeTable rope_yarn(const model::RopeConfig& r, int64_t rot_dim) {
  check_dim(rot_dim);
  const double orig = static_cast<double>(r.original_max_position_embeddings);
  if (orig <= 0) throw std::invalid_argument("rope yarn: original_max_position_embeddings is not set");
  RopeTable t;
  if (r.attention_factor > 0) t.attention_factor = r.attention_factor;
  else if (r.mscale != 0 && r.mscale_all_dim != 0)
    t.attention_factor = yarn_mscale(r.factor, r.mscale) / yarn_mscale(r.factor, r.mscale_all_dim);
  else t.attention_factor = yarn_mscale(r.factor, 1.0);

  double low = yarn_correction_dim(r.beta_fast, rot_dim, r.theta, orig);
  double high = yarn_correction_dim(r.beta_slow, rot_dim, r.theta, orig);
  if (r.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(rot_dim - 1));
  if (low == high) high += kYarnRampEpsilon;
  for (int64_t i = 0; i < rot_dim / 2; ++i) {
    const double pos_freq = std::pow(r.theta, static_cast<double>(2 * i) / static_cast<double>(rot_dim));
    const double extrapolated = 1.0 / pos_freq, interpolated = 1.0 / (r.factor * pos_freq);
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double keep = 1.0 - ramp;  // share of the unscaled (extrapolated) frequency
    t.inv_freq.push_back(interpolated * (1.0 - keep) + extrapolated * keep);
  }
  return t;
}

void apply_rope(Tensor& x, int64_t heads, int64_t stride, int64_t offset, std::span<const int64_t> positions,
                const RopeTable& table, RopeLayout layout) {
  checks::rope(x, heads, stride, offset, positions, table);
  const int64_t half = static_cast<int64_t>(table.inv_freq.size());
  std::vector<float> cos_v(static_cast<size_t>(half)), sin_v(static_cast<size_t>(half));
  for (int64_t t = 0; t < x.rows(); ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(positions[t]) * table.inv_freq[i];
      cos_v[i] = static_cast<float>(std::cos(angle) * table.attention_factor);
      sin_v[i] = static_cast<float>(std::sin(angle) * table.attention_factor);
    }
    for (int64_t h = 0; h < heads; ++h) {
      float* p = x.row(t) + h * stride + offset;
      for (int64_t i = 0; i < half; ++i) {
        float& a = layout == RopeLayout::half ? p[i] : p[2 * i];
        float& b = layout == RopeLayout::half ? p[i + half] : p[2 * i + 1];
        const float a0 = a, b0 = b;
        a = a0 * cos_v[i] - b0 * sin_v[i];
        b = b0 * cos_v[i] + a0 * sin_v[i];
      }
    }
  }
}

}  // namespace dayzero::executor
