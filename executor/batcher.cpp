#include "executor/batcher.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dayzero::executor {

ContinuousBatcher::ContinuousBatcher(const BatcherLimits& limits, std::vector<BatchRequest> requests)
    : limits_(limits), requests_(std::move(requests)), state_(requests_.size()) {
  auto positive = [](int64_t v, const char* what) {
    if (v <= 0)
      throw std::invalid_argument(std::string("ContinuousBatcher: ") + what + " must be positive, not " +
                                  std::to_string(v));
  };
  positive(limits_.kv_blocks, "kv_blocks");
  positive(limits_.block_tokens, "block_tokens");
  positive(limits_.token_budget, "token_budget");
  positive(limits_.max_running, "max_running");
  for (size_t i = 0; i < requests_.size(); ++i) {
    const BatchRequest& r = requests_[i];
    const std::string which = "ContinuousBatcher: request " + std::to_string(i);
    if (r.prompt_tokens <= 0 || r.output_tokens <= 0)
      throw std::invalid_argument(which + ": prompt " + std::to_string(r.prompt_tokens) + " and output " +
                                  std::to_string(r.output_tokens) + " tokens must both be positive");
    if (r.prompt_tokens > (int64_t{1} << 40) || r.output_tokens > (int64_t{1} << 40))
      throw std::invalid_argument(which + ": more than 2^40 tokens");
    const int64_t need = blocks_of(static_cast<int64_t>(i));
    if (need > limits_.kv_blocks)
      throw std::invalid_argument(which + " needs " + std::to_string(need) + " KV blocks of " +
                                  std::to_string(limits_.block_tokens) + " tokens; the pool holds " +
                                  std::to_string(limits_.kv_blocks));
  }
}

int64_t ContinuousBatcher::blocks_of(int64_t request) const {
  const BatchRequest& r = requests_.at(static_cast<size_t>(request));
  const int64_t positions = r.prompt_tokens + r.output_tokens - 1;  // the last token is never fed back
  return (positions + limits_.block_tokens - 1) / limits_.block_tokens;
}

std::vector<StepRows> ContinuousBatcher::next_step() {
  admitted_.clear();
  std::vector<StepRows> rows;
  int64_t budget = limits_.token_budget;
  for (int64_t i : running_) {
    if (budget == 0) break;
    const BatchRequest& r = requests_[static_cast<size_t>(i)];
    const State& s = state_[static_cast<size_t>(i)];
    if (s.prefilled < r.prompt_tokens) {
      const int64_t n = std::min(budget, r.prompt_tokens - s.prefilled);
      rows.push_back({i, s.prefilled, n, s.prefilled + n == r.prompt_tokens});
      budget -= n;
    } else {
      rows.push_back({i, r.prompt_tokens + s.generated - 1, 1, true});
      --budget;
    }
  }
  admit(budget, rows);
  return rows;
}

int64_t ContinuousBatcher::admit(int64_t budget, std::vector<StepRows>& rows) {
  while (budget > 0 && next_waiting_ < static_cast<int64_t>(requests_.size()) &&
         static_cast<int64_t>(running_.size()) < limits_.max_running) {
    const int64_t i = next_waiting_;
    const int64_t need = blocks_of(i);
    if (reserved_blocks_ + need > limits_.kv_blocks) break;  // first come, first served: no overtaking
    reserved_blocks_ += need;
    running_.push_back(i);
    admitted_.push_back(i);
    ++next_waiting_;
    const int64_t prompt = requests_[static_cast<size_t>(i)].prompt_tokens;
    const int64_t n = std::min(budget, prompt);
    rows.push_back({i, 0, n, n == prompt});
    budget -= n;
  }
  return budget;
}

std::vector<int64_t> ContinuousBatcher::complete(const std::vector<StepRows>& step) {
  std::vector<int64_t> done;
  for (const StepRows& row : step) {
    State& s = state_.at(static_cast<size_t>(row.request));
    const BatchRequest& r = requests_[static_cast<size_t>(row.request)];
    if (s.prefilled < r.prompt_tokens) s.prefilled += row.count;
    if (!row.samples) continue;
    if (++s.generated == r.output_tokens) done.push_back(row.request);
  }
  for (int64_t i : done) {
    running_.erase(std::find(running_.begin(), running_.end(), i));
    reserved_blocks_ -= blocks_of(i);
    ++finished_;
  }
  return done;
}

}  // namespace dayzero::executor
