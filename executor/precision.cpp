#include "executor/precision.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "executor/runner.h"

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

void LogitComparison::merge(const LogitComparison& o) {
  rows += o.rows;
  top1_agreeing_rows += o.top1_agreeing_rows;
  kl_sum_nats += o.kl_sum_nats;
  kl_max_nats = std::max(kl_max_nats, o.kl_max_nats);
  max_abs_diff = std::max(max_abs_diff, o.max_abs_diff);
}

void LogitComparer::add(const Tensor& reference, const Tensor& candidate) {
  if (reference.shape != candidate.shape)
    throw std::invalid_argument("comparing logits " + reference.shape_string() + " with " + candidate.shape_string());
  const int64_t n = reference.cols();
  for (int64_t r = 0; r < reference.rows(); ++r) {
    const float *a = reference.row(r), *b = candidate.row(r);
    const double kl = kl_divergence_nats(a, b, n);
    c_.kl_sum_nats += kl;
    c_.kl_max_nats = std::max(c_.kl_max_nats, kl);
    c_.top1_agreeing_rows += argmax(a, n) == argmax(b, n) ? 1 : 0;
    for (int64_t i = 0; i < n; ++i)
      c_.max_abs_diff = std::max(c_.max_abs_diff, std::abs(static_cast<double>(a[i]) - b[i]));
    ++c_.rows;
  }
}

void RunComparison::merge(const RunComparison& o) {
  logits.merge(o.logits);
  sequences += o.sequences;
  sequences_tokens_equal += o.sequences_tokens_equal;
  decode_rows_skipped += o.decode_rows_skipped;
}

RunComparison compare_runs(std::span<const SequenceResult> reference, std::span<const SequenceResult> candidate) {
  if (reference.size() != candidate.size())
    throw std::invalid_argument("comparing runs of " + std::to_string(reference.size()) + " and " +
                                std::to_string(candidate.size()) + " sequences");
  LogitComparer cmp;
  RunComparison out;
  for (size_t s = 0; s < reference.size(); ++s) {
    const SequenceResult &a = reference[s], &b = candidate[s];
    if (a.index != b.index)
      throw std::invalid_argument("comparing sequence " + std::to_string(a.index) + " with sequence " +
                                  std::to_string(b.index));
    if (a.prefill_logits.numel() == 0 || b.prefill_logits.numel() == 0)
      throw std::invalid_argument("sequence " + std::to_string(a.index) + ": a run kept no logits to compare");
    cmp.add(a.prefill_logits, b.prefill_logits);
    // Decode step i reads generated token i and gives token i + 1.
    const size_t steps = std::min(a.decode_logits.size(), b.decode_logits.size());
    size_t i = 0;
    for (; i < steps && i < a.tokens.size() && i < b.tokens.size() && a.tokens[i] == b.tokens[i]; ++i)
      cmp.add(a.decode_logits[i], b.decode_logits[i]);
    out.decode_rows_skipped += static_cast<int64_t>(steps - i);
    ++out.sequences;
    if (a.tokens == b.tokens) ++out.sequences_tokens_equal;
  }
  out.logits = cmp.result();
  return out;
}

plan::Plan reference_plan(const plan::Plan& p) {
  plan::Plan r = p;
  r.dtypes.attention = r.dtypes.dense_mlp = r.dtypes.experts = r.dtypes.embedding = model::WeightPrecision::checkpoint;
  r.dtypes.kv_cache = plan::KvDtype::fp32;
  return r;
}

}  // namespace dayzero::executor
