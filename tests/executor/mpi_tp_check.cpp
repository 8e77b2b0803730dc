// Run under `mpirun -np N` (the `mpi` CTest label): attention TP over the N ranks
// against the 1-rank run of the same fixture, which every rank computes itself
// with a SelfCommunicator. Checks, for each family named on the command line:
// prefill and decode logits within kTpTolerance of the 1-rank run (TP changes the
// summation order of the row-split GEMMs, so not bit-equal), the greedy tokens
// exactly, and two TP runs bit-identical; then a timed TP run's Measurements list
// its collectives (all_reduce of [tokens, hidden] float32 after the row-split
// GEMMs, with busbw = algbw x 2(n-1)/n). Any failure or exception aborts every
// rank (exit status non-zero), never a hang.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "executor/mpi_communicator.h"
#include "executor/runner.h"
#include "golden.h"

using namespace dayzero;
using namespace dayzero::executor;

namespace {

constexpr double kTpTolerance = 1e-5;  // max |logit difference| between TP = N and 1 rank, fp32

RunResult run_once(const model::Model& m, const std::string& dir, Communicator& comm, int tp,
                   const testing::Golden& g, int iterations = 0) {
  simulate::Plan p;
  p.model = m.config.source;
  p.attention.tp = tp;
  Runner runner(m, p, comm, dir, {iterations, "tp" + std::to_string(tp) + " plan"});
  return runner.run(g.prompt, static_cast<int64_t>(g.generated.size()) - 1);
}

double max_diff(const RunResult& a, const RunResult& b) {
  if (a.prefill_logits.shape != b.prefill_logits.shape || a.decode_logits.size() != b.decode_logits.size())
    throw std::runtime_error("logit shapes differ");
  double d = testing::max_abs_diff(a.prefill_logits.data.data(), b.prefill_logits.data.data(), a.prefill_logits.numel());
  for (size_t i = 0; i < a.decode_logits.size(); ++i)
    d = std::max(d, testing::max_abs_diff(a.decode_logits[i].data.data(), b.decode_logits[i].data.data(),
                                          a.decode_logits[i].numel()));
  return d;
}

bool bit_identical(const RunResult& a, const RunResult& b) {
  if (a.prefill_logits.data != b.prefill_logits.data || a.tokens != b.tokens) return false;
  for (size_t i = 0; i < a.decode_logits.size(); ++i)
    if (a.decode_logits[i].data != b.decode_logits[i].data) return false;
  return true;
}

// The Measurements JSON of a timed TP run: all_reduce entries for the prefill
// ([prompt, hidden]) and decode ([1, hidden]) activations, all_gather for the head.
void check_collectives(const RunResult& r, const model::Model& m, int ranks, int64_t prompt) {
  const nlohmann::json j = measurements_to_json(r.measurements);
  const auto& cs = j.at("collectives");
  if (cs.empty()) throw std::runtime_error("a TP run recorded no collectives");
  const int64_t hidden = m.config.hidden_size;
  const double factor = 2.0 * (ranks - 1) / ranks;  // nccl-tests all_reduce bus factor
  bool prefill = false, decode = false, gather = false;
  for (const auto& c : cs) {
    const std::string name = c.at("collective");
    const int64_t size = c.at("size_bytes");
    if (c.at("ranks") != ranks) throw std::runtime_error("collective over " + c.at("ranks").dump() + " ranks");
    if (c.at("iterations") != 2 || !(c.at("min_s").get<double>() > 0) ||
        c.at("min_s").get<double>() > c.at("mean_s").get<double>())
      throw std::runtime_error("collective " + c.dump() + " is not timed");
    const double algbw = c.at("algbw_GBps"), busbw = c.at("busbw_GBps");
    if (name == "all_reduce") {
      if (busbw != algbw * factor) throw std::runtime_error("all_reduce busbw is not algbw x 2(n-1)/n: " + c.dump());
      if (size == prompt * hidden * 4) prefill = true;
      if (size == hidden * 4) decode = true;
    } else if (name == "all_gather") {
      gather = size == prompt * m.config.vocab_size * 4 || size == m.config.vocab_size * 4 || gather;
    }
  }
  if (!prefill || !decode || !gather)
    throw std::runtime_error("collectives lack all_reduce of tokens x hidden x 4 bytes or the head's all_gather: " +
                             cs.dump());
  std::printf("rank %d: %zu collectives recorded, e.g. %s\n", r.measurements.rank, cs.size(), cs.at(0).dump().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  MpiCommunicator comm;
  try {
    if (argc < 2) throw std::runtime_error("usage: mpirun -np N mpi_tp_check FAMILY...");
    if (comm.size() < 2) throw std::runtime_error("run under mpirun with at least 2 ranks, not " + std::to_string(comm.size()));
    for (int i = 1; i < argc; ++i) {
      const std::string family = argv[i], dir = testing::tiny_dir(family);
      const model::Model m = model::load_model(dir);
      const testing::Golden g = testing::read_golden(dir);
      SelfCommunicator self;
      const RunResult one = run_once(m, dir, self, 1, g);
      const RunResult a = run_once(m, dir, comm, comm.size(), g);
      const RunResult b = run_once(m, dir, comm, comm.size(), g);
      const double d = max_diff(one, a);
      const bool tokens_equal = one.tokens == a.tokens, repeat = bit_identical(a, b);
      std::printf("rank %d %s: tp=%d vs 1 rank: max |logit diff| %.3g (tolerance %.0e), tokens %s, two runs %s\n",
                  comm.rank(), family.c_str(), comm.size(), d, kTpTolerance, tokens_equal ? "equal" : "DIFFER",
                  repeat ? "bit-identical" : "DIFFER");
      std::fflush(stdout);
      if (!(d <= kTpTolerance) || !tokens_equal || !repeat)
        throw std::runtime_error(family + ": TP run does not match the 1-rank run");
      const RunResult timed = run_once(m, dir, comm, comm.size(), g, 2);
      if (timed.tokens != a.tokens) throw std::runtime_error(family + ": the timed TP run's tokens differ");
      check_collectives(timed, m, comm.size(), static_cast<int64_t>(g.prompt.size()));
    }
    comm.barrier();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", comm.rank(), e.what());
    std::fflush(stderr);
    comm.abort(1);
  }
  return 0;
}
