#pragma once
// A tiny fixture's golden prompt run sharded over the ranks of a ThreadWorld (one
// thread per rank, one process) against the same prompt on one rank: the check that
// a plan's sharding changes nothing but summation order, on any backend (the CPU in
// CI, the CUDA backend with every rank on one GPU in tests/cuda).
#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "executor/runner.h"
#include "executor/thread_world.h"
#include "golden.h"

namespace dayzero::executor::testing {

// Max |logit difference| between a sharded and a 1-rank run, fp32: sharding changes
// summation orders (row-split GEMMs, expert batches), so not bit-equal (as
// tests/executor/mpi_plan_check.cpp).
inline constexpr double kShardTolerance = 1e-5;

struct ShardedCheck {
  double max_logit_diff = 0;     // every rank's prefill and decode logits against one rank's
  bool tokens_equal = true;      // every rank's greedy tokens
  bool repeat_identical = true;  // a second sharded run, bit for bit
};

inline plan::Plan tiny_plan(const model::Model& m, int tp, int ep, int pp = 1) {
  plan::Plan p;
  p.model = m.config.source;
  p.pp = pp;
  p.attention = {tp, 1};
  if (m.config.is_moe()) p.moe = {tp / ep, ep, 1};  // the stage's tp ranks: experts over ep of them
  p.kv_block_tokens = 4;
  p.prefill_chunk_tokens = 7;
  p.dtypes.kv_cache = plan::KvDtype::fp32;
  return p;
}

inline double logit_diff(const SequenceResult& a, const SequenceResult& b) {
  double d = max_abs_diff(a.prefill_logits.data.data(), b.prefill_logits.data.data(),
                          std::min(a.prefill_logits.numel(), b.prefill_logits.numel()));
  for (size_t i = 0; i < std::min(a.decode_logits.size(), b.decode_logits.size()); ++i)
    d = std::max(
        d, max_abs_diff(a.decode_logits[i].data.data(), b.decode_logits[i].data.data(), a.decode_logits[i].numel()));
  return d;
}

// `tp` ranks in attention TP; for MoE models the experts over `ep` of them (moe TP tp / ep);
// `pp` stages of them (the last stage's ranks hold the logits, every rank the tokens).
// `wrap` (optional) decorates each rank's communicator (mirror_collectives.h).
using WrapComm = std::function<std::unique_ptr<Communicator>(Communicator&)>;
inline ShardedCheck sharded_vs_one_rank(const std::string& family, int tp, int ep, const std::string& backend,
                                        int64_t decode_steps = 3, const WrapComm& wrap = nullptr, int pp = 1) {
  const std::string dir = tiny_dir(family);
  const model::Model m = model::load_model(dir);
  const Golden g = read_golden(dir);
  RunnerOptions o;
  o.backend = backend;
  SelfCommunicator one;
  const RunResult ref = Runner(m, tiny_plan(m, 1, 1), one, dir, o).run(g.prompt, decode_steps);
  ShardedCheck c;
  std::mutex mu;
  std::vector<RunResult> first(static_cast<size_t>(tp * pp));
  for (int pass = 0; pass < 2; ++pass) {
    ThreadWorld world(tp * pp);
    world.run([&](Communicator& rank_comm) {
      const std::unique_ptr<Communicator> wrapped = wrap ? wrap(rank_comm) : nullptr;
      Communicator& comm = wrapped ? *wrapped : rank_comm;
      const RunResult r = Runner(m, tiny_plan(m, tp, ep, pp), comm, dir, o).run(g.prompt, decode_steps);
      std::lock_guard<std::mutex> lock(mu);
      const auto& s = r.sequences.at(0);
      if (pass == 0) {
        c.max_logit_diff = std::max(c.max_logit_diff, logit_diff(s, ref.sequences.at(0)));
        c.tokens_equal = c.tokens_equal && s.tokens == ref.sequences.at(0).tokens;
        first[static_cast<size_t>(comm.rank())] = r;
      } else {
        const auto& f = first[static_cast<size_t>(comm.rank())].sequences.at(0);
        c.repeat_identical = c.repeat_identical && f.tokens == s.tokens && logit_diff(f, s) == 0.0;
      }
    });
  }
  return c;
}

}  // namespace dayzero::executor::testing
