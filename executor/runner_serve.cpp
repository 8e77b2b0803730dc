// Runner::serve: requests through continuous batching over the paged KV cache.
#include <chrono>
#include <stdexcept>
#include <string>

#include "executor/runner.h"

namespace dayzero::executor {

namespace {
using Clock = std::chrono::steady_clock;

// The requests checked against the model (std::runtime_error naming the request).
void check_requests(const std::vector<ServeRequest>& requests, const model::ModelConfig& c) {
  if (requests.empty()) throw std::runtime_error("serve: no requests");
  for (size_t i = 0; i < requests.size(); ++i) {
    const ServeRequest& r = requests[i];
    const std::string which = "serve: request " + std::to_string(i);
    if (r.prompt.empty()) throw std::runtime_error(which + ": the prompt is empty");
    if (r.output_tokens <= 0 || r.output_tokens > plan::kMaxSequenceTokens)
      throw std::runtime_error(which + ": output tokens must be in [1, " + std::to_string(plan::kMaxSequenceTokens) +
                               "], not " + std::to_string(r.output_tokens));
    for (int64_t t : r.prompt)
      if (t < 0 || t >= c.vocab_size)
        throw std::runtime_error(which + ": prompt token " + std::to_string(t) + " is outside the vocabulary [0, " +
                                 std::to_string(c.vocab_size) + ")");
    const int64_t context = static_cast<int64_t>(r.prompt.size()) + r.output_tokens - 1;
    if (c.max_position_embeddings > 0 && context > c.max_position_embeddings)
      throw std::runtime_error(which + ": " + std::to_string(context) + " positions exceed max_position_embeddings " +
                               std::to_string(c.max_position_embeddings));
  }
}

BatcherLimits limits_of(const ServeOptions& o, const plan::Plan& p) {
  BatcherLimits l;
  l.block_tokens = p.kv_block_tokens;
  l.kv_blocks = o.kv_tokens / p.kv_block_tokens;
  l.token_budget = o.token_budget > 0 ? o.token_budget : p.prefill_chunk_tokens;
  l.max_running = o.max_running;
  return l;
}
}  // namespace

ServeResult Runner::serve(const std::vector<ServeRequest>& requests, const ServeOptions& options) {
  if (ran_) throw std::logic_error("Runner::serve: a Runner runs once");
  ran_ = true;
  if (plan_.pp != 1 || plan_.attention.dp != 1)
    throw std::runtime_error("serve runs one pipeline stage and one attention-DP replica; the plan has pp " +
                             std::to_string(plan_.pp) + " and attention.dp " + std::to_string(plan_.attention.dp));
  check_requests(requests, m_.config);
  std::vector<BatchRequest> sizes;
  for (const auto& r : requests) sizes.push_back({static_cast<int64_t>(r.prompt.size()), r.output_tokens});
  const BatcherLimits limits = limits_of(options, plan_);
  ContinuousBatcher batcher(limits, std::move(sizes));
  forward_->preallocate_kv(limits.kv_blocks);  // the whole pool at start-up, as the engines do
  timer_.set_recording(false);
  timer_.set_phase("serve");

  ServeResult res;
  res.tokens.assign(requests.size(), {});
  for (size_t i = 0; i < requests.size(); ++i) res.tokens[i].reserve(static_cast<size_t>(requests[i].output_tokens));
  std::vector<int> kv_id(requests.size(), -1);
  const auto start = Clock::now();
  for (int64_t s = 0; !batcher.done(); ++s) {
    const auto t0 = Clock::now();
    const double placed0 = placement_s();  // a weight's first upload is load time, not the step's
    const std::vector<StepRows> rows = batcher.next_step();
    for (int64_t i : batcher.admitted()) kv_id[static_cast<size_t>(i)] = forward_->add_sequence();
    std::vector<int> seqs;
    std::vector<int64_t> counts, tokens, keep;
    for (const StepRows& r : rows) {
      const auto i = static_cast<size_t>(r.request);
      seqs.push_back(kv_id[i]);
      counts.push_back(r.count);
      const auto& prompt = requests[i].prompt;
      if (r.first < static_cast<int64_t>(prompt.size()))
        tokens.insert(tokens.end(), prompt.begin() + r.first, prompt.begin() + r.first + r.count);
      else tokens.push_back(res.tokens[i].back());  // decoding: the last token chosen
      if (r.samples) keep.push_back(static_cast<int64_t>(tokens.size()) - 1);
    }
    const Tensor logits = step(seqs, counts, tokens, &keep);
    size_t k = 0;
    for (const StepRows& r : rows)
      if (r.samples) {
        const auto row = static_cast<int64_t>(k++);
        res.tokens[static_cast<size_t>(r.request)].push_back(
            argmax({logits.row(row), static_cast<size_t>(logits.cols())}));
      }
    for (int64_t i : batcher.complete(rows)) forward_->release_sequence(kv_id[static_cast<size_t>(i)]);
    ServeSample smp;
    smp.step = s;
    for (int64_t c : counts) smp.rows += c;
    smp.sampled = static_cast<int64_t>(keep.size());
    smp.running = batcher.running();
    smp.waiting = batcher.waiting();
    smp.finished = batcher.finished();
    smp.kv_blocks_used = forward_->kv().used_blocks();
    smp.kv_blocks_allocated = forward_->kv().allocated_blocks();
    smp.rss_bytes = rss_current_bytes();
    smp.step_s = std::chrono::duration<double>(Clock::now() - t0).count() - (placement_s() - placed0);
    if (options.on_step) options.on_step(smp);
    else res.samples.push_back(smp);
  }
  res.total_s = std::chrono::duration<double>(Clock::now() - start).count();
  return res;
}

}  // namespace dayzero::executor
