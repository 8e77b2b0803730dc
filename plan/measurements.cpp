// Measurements' own figures, and the merge of one run's per-rank Measurements.
#include "plan/measurements.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace dayzero::plan {

double Measurements::decode_step_mean_s() const {
  if (decode_step_s.empty()) return 0;
  return std::accumulate(decode_step_s.begin(), decode_step_s.end(), 0.0) / static_cast<double>(decode_step_s.size());
}

int64_t Measurements::peak_bytes() const {
  int64_t b = 0;
  for (const auto& r : ranks) b = std::max(b, r.memory.peak_bytes());
  return b;
}

Measurements merge_rank_measurements(const std::vector<Measurements>& per_rank) {
  if (per_rank.empty()) throw std::runtime_error("merge_rank_measurements: no ranks");
  Measurements out = per_rank.front();
  out.ranks.clear();
  out.ops.clear();
  out.collectives.clear();
  out.prefill_s = 0;
  out.decode_step_s.assign(per_rank.front().decode_step_s.size(), 0.0);
  for (const auto& m : per_rank) {
    if (m.ranks.size() != 1) throw std::runtime_error("merge_rank_measurements: each part must be one rank's");
    if (m.decode_step_s.size() != out.decode_step_s.size() || m.prompts.size() != out.prompts.size())
      throw std::runtime_error("merge_rank_measurements: rank " + std::to_string(m.ranks[0].rank) +
                               " ran another number of steps or sequences");
    out.ranks.push_back(m.ranks[0]);
    out.prefill_s = std::max(out.prefill_s, m.prefill_s);
    for (size_t i = 0; i < m.decode_step_s.size(); ++i)
      out.decode_step_s[i] = std::max(out.decode_step_s[i], m.decode_step_s[i]);
    out.ops.insert(out.ops.end(), m.ops.begin(), m.ops.end());
    out.collectives.insert(out.collectives.end(), m.collectives.begin(), m.collectives.end());
    if (m.fp8_block_gemm == Fp8BlockGemm::bf16) out.fp8_block_gemm = Fp8BlockGemm::bf16;
    if (out.fp8_block_gemm_note.empty()) out.fp8_block_gemm_note = m.fp8_block_gemm_note;
    for (size_t s = 0; s < m.tokens.size(); ++s) {
      if (m.tokens[s].empty()) continue;  // this rank did not see the sequence's tokens
      if (out.tokens[s].empty()) out.tokens[s] = m.tokens[s];
      else if (out.tokens[s] != m.tokens[s])
        throw std::runtime_error("merge_rank_measurements: ranks disagree on the tokens of sequence " +
                                 std::to_string(s));
    }
  }
  std::sort(out.ranks.begin(), out.ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  out.world_size = static_cast<int>(per_rank.size());
  return out;
}

}  // namespace dayzero::plan
