#pragma once
// How far a reduced-precision run's logits are from a full-precision run's on the
// same tokens (the "quantization loses little" check): per row, the KL divergence
// of the candidate's next-token distribution from the reference's, whether their
// top-1 tokens agree, and the largest |logit difference|.

#include <cstdint>
#include <span>

#include "executor/tensor.h"
#include "plan/plan.h"

namespace dayzero::executor {

// Sums over compared rows, so that comparisons of several ranks merge.
struct LogitComparison {
  int64_t rows = 0;
  int64_t top1_agreeing_rows = 0;  // rows whose argmax is the same token (ties to the lower id)
  double kl_sum_nats = 0;          // KL(reference || candidate) of each row's softmax, summed
  double kl_max_nats = 0;
  double max_abs_diff = 0;
  double kl_mean_nats() const { return rows > 0 ? kl_sum_nats / static_cast<double>(rows) : 0; }
  double top1_agreement() const {
    return rows > 0 ? static_cast<double>(top1_agreeing_rows) / static_cast<double>(rows) : 0;
  }
  void merge(const LogitComparison& o);
};

// Adds [rows, vocab] logits pairs row by row; throws std::invalid_argument when the
// shapes differ.
class LogitComparer {
 public:
  void add(const Tensor& reference, const Tensor& candidate);
  const LogitComparison& result() const { return c_; }

 private:
  LogitComparison c_;
};

struct SequenceResult;  // executor/runner.h

// Two runs of the same prompts: every prompt position's logits (teacher-forced: the
// same tokens in), and decode step i's while both runs generated the same tokens up
// to it (later steps read different tokens, so they are not compared).
struct RunComparison {
  LogitComparison logits;
  int64_t sequences = 0, sequences_tokens_equal = 0;  // equal: every generated token the same
  int64_t decode_rows_skipped = 0;                    // decode steps after the tokens parted
  void merge(const RunComparison& o);
};
// Sequences matched by position (the same index); throws std::invalid_argument when
// the counts or a sequence's index differ, or a run did not keep its logits.
RunComparison compare_runs(std::span<const SequenceResult> reference, std::span<const SequenceResult> candidate);

// The full-precision run of a plan's weights: the same layout and workload, weights
// as the checkpoint stores them, an fp32 KV cache.
plan::Plan reference_plan(const plan::Plan& p);

// KL(p || q) in nats of p = softmax(reference), q = softmax(candidate), over n logits.
double kl_divergence_nats(const float* reference, const float* candidate, int64_t n);

}  // namespace dayzero::executor
