// The engines' gates on new prompts: whether a step may carry them (replica.h).
#include <algorithm>
#include <random>

#include "serve/replica.h"

namespace dayzero::serve::detail {

// TensorRT-LLM's attention-DP balancing, for this rank and the dp - 1 it stands for:
// whether this step may run new prompts (EngineProfile::adp_balance says when).
bool Replica::adp_releases_prompts() {
  const AttentionDpBalance& b = eng_.adp_balance;
  if (!b.on || !attention_dp_ || role_ != Role::both) return true;
  bool prompt = !waiting_.empty(), decoding = false;
  for (const auto& r : running_) {
    if (r->prefilled()) decoding = true;
    else prompt = true;
  }
  // The other ranks receive prompts as this one has: a Bernoulli draw per step at its
  // arrivals per step so far (a closed loop's next request follows a finish).
  const double rate = static_cast<double>(arrivals_) / static_cast<double>(std::max<int64_t>(1, st_.steps));
  std::bernoulli_distribution arrives(std::min(1.0, rate));
  // After a release the other ranks hold prompts still waiting as this one does: a
  // backlog drains a step at a time on every rank alike.
  if (adp_others_ < 0) adp_others_ = prompt ? dp_ - 1 : 0;
  for (int64_t without = dp_ - 1 - adp_others_; without > 0; --without)
    if (arrives(adp_rng_)) ++adp_others_;
  bool release = false;
  if (prompt && adp_others_ == dp_ - 1) {  // every rank has a prompt: after the batching wait
    adp_wait_ = 0;
    release = !decoding || adp_batching_ >= b.batching_wait_iters;
    adp_batching_ = release ? 0 : adp_batching_ + 1;
  } else {
    release = ++adp_wait_ >= b.timeout_iters || !decoding;
    if (release) adp_wait_ = 0;
  }
  if (release) adp_others_ = -1;  // the other ranks' prompts run in this step too: as this one's, after it
  return release;
}

// TensorRT-LLM's batch waiting (EngineProfile::batch_waiting), decided before the step
// is built: the prompts its scheduler would add beside the decodes (unfinished ones
// first, then the queue's head, while the token budget and the sequence limit allow;
// the cache's room is not checked), each counted whole as the engine counts them, plus
// a token per decode and draft.
bool Replica::batch_wait_releases_prompts() {
  const BatchWaiting& w = eng_.batch_waiting;
  if ((w.timeout_iters <= 0 && w.max_tokens_ratio <= 0) || attention_dp_ || role_ != Role::both) return true;
  const auto decodes = static_cast<int64_t>(
      std::count_if(running_.begin(), running_.end(), [](const auto& s) { return s->prefilled(); }));
  int64_t budget = eng_.token_budget - decodes * width_, tokens = decodes * width_, prompts = 0;
  const auto take = [&](const Seq& s) {
    const int64_t remaining = s.target - s.kv_tokens, chunk = std::min(remaining, budget);
    if (chunk <= 0 || (!eng_.chunked_prefill && chunk < remaining)) return false;
    budget -= chunk;
    tokens += s.target;
    ++prompts;
    return true;
  };
  for (const auto& s : running_)
    if (!s->prefilled()) take(*s);
  auto running = static_cast<int64_t>(running_.size());
  for (const auto& s : waiting_) {
    if (running >= eng_.max_running || !take(*s)) break;
    ++running;
  }
  if (decodes == 0 || prompts == 0) return true;  // the engine waits only beside decodes
  if (batch_wait_ >= w.timeout_iters ||
      static_cast<double>(tokens) >= w.max_tokens_ratio * static_cast<double>(eng_.token_budget)) {
    batch_wait_ = 0;
    return true;
  }
  ++batch_wait_;
  return false;
}

}  // namespace dayzero::serve::detail
