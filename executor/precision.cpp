#include "executor/precision.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace dayzero::executor {

namespace {
// log-softmax of x into out (double: KL of nearly equal rows is a difference of small numbers).
void log_softmax(const float* x, int64_t n, std::vector<double>& out) {
  out.resize(static_cast<size_t>(n));
  double m = x[0];
  for (int64_t i = 1; i < n; ++i) m = std::max(m, static_cast<double>(x[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - m);
  const double log_z = m + std::log(sum);
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = static_cast<double>(x[i]) - log_z;
}

int64_t argmax(const float* x, int64_t n) {
  return static_cast<int64_t>(std::max_element(x, x + n) - x);  // the first of equal maxima
}
}  // namespace

double kl_divergence_nats(const float* reference, const float* candidate, int64_t n) {
  if (n <= 0) return 0;
  std::vector<double> lp, lq;
  log_softmax(reference, n, lp);
  log_softmax(candidate, n, lq);
  double kl = 0;
  for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return std::max(0.0, kl);  // rounding can leave -1e-17
}

void LogitComparer::add(const Tensor& reference, const Tensor& candidate) {
  if (reference.shape != candidate.shape)
    throw std::invalid_argument("comparing logits " + reference.shape_string() + " with " + candidate.shape_string());
  const int64_t n = reference.cols();
  for (int64_t r = 0; r < reference.rows(); ++r) {
    const float *a = reference.row(r), *b = candidate.row(r);
    const double kl = kl_divergence_nats(a, b, n);
    kl_sum_ += kl;
    kl_max_ = std::max(kl_max_, kl);
    agree_ += argmax(a, n) == argmax(b, n) ? 1 : 0;
    for (int64_t i = 0; i < n; ++i) max_abs_ = std::max(max_abs_, std::abs(static_cast<double>(a[i]) - b[i]));
    ++rows_;
  }
}

LogitComparison LogitComparer::result() const {
  LogitComparison c;
  c.rows = rows_;
  if (rows_ == 0) return c;
  c.kl_mean_nats = kl_sum_ / static_cast<double>(rows_);
  c.kl_max_nats = kl_max_;
  c.top1_agreement = static_cast<double>(agree_) / static_cast<double>(rows_);
  c.max_abs_diff = max_abs_;
  return c;
}

}  // namespace dayzero::executor
