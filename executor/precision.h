#pragma once
// How far a reduced-precision run's logits are from a full-precision run's on the
// same tokens (the "quantization loses little" check): per row, the KL divergence
// of the candidate's next-token distribution from the reference's, whether their
// top-1 tokens agree, and the largest |logit difference|.

#include <cstdint>

#include "executor/tensor.h"

namespace dayzero::executor {

struct LogitComparison {
  int64_t rows = 0;
  double kl_mean_nats = 0;  // mean over rows of KL(reference || candidate), softmax of each row
  double kl_max_nats = 0;
  double top1_agreement = 0;  // share of rows whose argmax is the same token (ties to the lower id)
  double max_abs_diff = 0;
};

// Adds [rows, vocab] logits pairs row by row; throws std::invalid_argument when the
// shapes differ.
class LogitComparer {
 public:
  void add(const Tensor& reference, const Tensor& candidate);
  LogitComparison result() const;

 private:
  int64_t rows_ = 0, agree_ = 0;
  double kl_sum_ = 0, kl_max_ = 0, max_abs_ = 0;
};

// KL(p || q) in nats of p = softmax(reference), q = softmax(candidate), over n logits.
double kl_divergence_nats(const float* reference, const float* candidate, int64_t n);

}  // namespace dayzero::executor
