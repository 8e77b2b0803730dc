// Run under `mpirun -np N` (the `mpi` CTest label): a sharded plan over the N
// ranks against the 1-rank run of the same sequences, which every rank computes
// itself with a SelfCommunicator.
//
//   mpi_plan_check --plan tp=2,dp=1,pp=1,moe_tp=1,ep=2 [--batch B] FAMILY...
//
// For each tiny fixture family: B sequences (the golden prompt, a 5-token prefix,
// the prompt reversed, ...) run through prefill (chunks of 7 tokens, KV blocks of
// 4) and 4 greedy decode steps. Every rank checks the sequences of its DP
// replica: tokens equal to the 1-rank run's; on last-stage ranks (which hold
// logits) prefill and decode logits within kShardTolerance; two sharded runs
// bit-identical; a plan that splits weights leaves each rank fewer weight bytes
// than one rank reads (each rank reads only its shards). A timed run then lists its collectives (with nccl-tests bus
// factors) and they include what the plan implies: all_reduce for TP, alltoall
// for experts over several ranks, sendrecv between PP stages. Dense families
// ignore moe_tp / ep. Any failure aborts every rank (non-zero exit), never a hang.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

#include "executor/mpi_communicator.h"
#include "executor/runner.h"
#include "golden.h"

using namespace dayzero;
using namespace dayzero::executor;

namespace {

// Max |logit difference| between the sharded and the 1-rank run, fp32: sharding
// changes summation orders (row-split GEMMs, expert batches), so not bit-equal.
constexpr double kShardTolerance = 1e-5;

std::map<std::string, int> parse_spec(const std::string& spec) {
  std::map<std::string, int> out{{"tp", 1}, {"dp", 1}, {"pp", 1}, {"moe_tp", 1}, {"ep", 1}};
  std::stringstream ss(spec);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || !out.count(item.substr(0, eq)))
      throw std::runtime_error("bad plan item '" + item + "'");
    out[item.substr(0, eq)] = std::stoi(item.substr(eq + 1));
  }
  return out;
}

plan::Plan make_plan(const model::Model& m, const std::map<std::string, int>& s, int64_t batch) {
  plan::Plan p;
  p.model = m.config.source;
  p.pp = s.at("pp");
  p.attention = {s.at("tp"), s.at("dp")};
  if (m.config.is_moe()) {
    const int ranks = p.ranks_per_stage(), inner = s.at("moe_tp") * s.at("ep");
    p.moe = {s.at("moe_tp"), s.at("ep"), ranks / inner};
  }
  p.kv_block_tokens = 4;
  p.prefill_chunk_tokens = 7;
  p.dtypes.kv_cache = plan::KvDtype::fp32;  // the goldens' full precision
  p.workload.batch = batch;
  return p;
}

std::vector<std::vector<int64_t>> prompts_of(const testing::Golden& g, int64_t batch) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t i = 0; i < batch; ++i) {
    std::vector<int64_t> p = g.prompt;
    if (i % 3 == 1) p.resize(5);
    if (i % 3 == 2) std::reverse(p.begin(), p.end());
    if (i >= 3) p.push_back(i);  // distinct beyond the first three
    out.push_back(p);
  }
  return out;
}

double max_diff(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape)
    throw std::runtime_error("logit shapes differ: " + a.shape_string() + " vs " + b.shape_string());
  return testing::max_abs_diff(a.data.data(), b.data.data(), a.numel());
}

// The sharded run's sequences against the 1-rank run's (same indices).
double compare(const RunResult& sharded, const RunResult& one, bool logits, const std::string& what) {
  double d = 0;
  for (const auto& s : sharded.sequences) {
    const SequenceResult& ref = one.sequences.at(static_cast<size_t>(s.index));
    if (s.tokens != ref.tokens)
      throw std::runtime_error(what + ": sequence " + std::to_string(s.index) + "'s tokens differ");
    if (!logits) continue;
    d = std::max(d, max_diff(s.prefill_logits, ref.prefill_logits));
    if (s.decode_logits.size() != ref.decode_logits.size()) throw std::runtime_error(what + ": decode steps differ");
    for (size_t i = 0; i < s.decode_logits.size(); ++i)
      d = std::max(d, max_diff(s.decode_logits[i], ref.decode_logits[i]));
  }
  return d;
}

bool bit_identical(const RunResult& a, const RunResult& b) {
  if (a.sequences.size() != b.sequences.size()) return false;
  for (size_t i = 0; i < a.sequences.size(); ++i) {
    const auto &x = a.sequences[i], &y = b.sequences[i];
    if (x.tokens != y.tokens || x.prefill_logits.data != y.prefill_logits.data) return false;
    for (size_t s = 0; s < x.decode_logits.size(); ++s)
      if (x.decode_logits[s].data != y.decode_logits[s].data) return false;
  }
  return true;
}

// The collectives a timed run recorded: bus factors as nccl-tests', and the kinds the plan implies.
void check_collectives(const RunResult& r, const plan::Plan& p, bool moe) {
  bool all_reduce = false, alltoall = false, sendrecv = false;
  for (const auto& c : r.measurements.collectives) {
    // 2 timed repeats per distinct call (all_to_all_v: per call, as its counts differ by rank)
    if (c.iterations < 2 || c.iterations % 2 != 0 || !(c.min_s > 0) || c.min_s > c.mean_s)
      throw std::runtime_error("collective " + std::string(core::collective_name(c.collective)) + " is not timed");
    const double algbw = c.algbw_GBps(), factor = core::bus_factor(c.collective, c.ranks);
    if (c.busbw_GBps() != algbw * factor)
      throw std::runtime_error(std::string(core::collective_name(c.collective)) + " busbw is not algbw x bus factor");
    all_reduce = all_reduce || (c.collective == core::Collective::all_reduce && c.ranks == p.attention.tp);
    alltoall = alltoall || (c.collective == core::Collective::all_to_all && c.ranks == p.ranks_per_stage());
    sendrecv = sendrecv || c.collective == core::Collective::send_recv;
  }
  if (p.attention.tp > 1 && !all_reduce) throw std::runtime_error("a TP run recorded no all_reduce over its TP group");
  if (moe && p.ranks_per_stage() > 1 && !alltoall)
    throw std::runtime_error("an expert-parallel run recorded no alltoall");
  if (p.pp > 1 && !sendrecv) throw std::runtime_error("a PP run recorded no sendrecv");
  std::printf("rank %d: %zu collectives recorded (all_reduce %d, alltoall %d, sendrecv %d)\n",
              r.measurements.ranks[0].rank, r.measurements.collectives.size(), all_reduce, alltoall, sendrecv);
}

}  // namespace

int main(int argc, char** argv) {
  MpiCommunicator comm;
  try {
    std::string spec;
    int64_t batch = 0;
    std::vector<std::string> families;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--plan" && i + 1 < argc) spec = argv[++i];
      else if (a == "--batch" && i + 1 < argc) batch = std::stoll(argv[++i]);
      else families.push_back(a);
    }
    if (spec.empty() || families.empty())
      throw std::runtime_error(
          "usage: mpirun -np N mpi_plan_check --plan tp=2,dp=1,pp=1,moe_tp=1,ep=2 [--batch B] FAMILY...");
    const auto s = parse_spec(spec);
    if (batch == 0) batch = std::max(2, s.at("dp"));
    for (const auto& family : families) {
      const std::string dir = testing::tiny_dir(family);
      const model::Model m = model::load_model(dir);
      const testing::Golden g = testing::read_golden(dir);
      const plan::Plan plan = make_plan(m, s, batch);
      const auto prompts = prompts_of(g, batch);
      auto run = [&](Communicator& c, const plan::Plan& p, int iterations) {
        Runner runner(m, p, c, dir, {iterations, family + " " + spec});
        return runner.run(prompts, 4);
      };
      SelfCommunicator self;
      plan::Plan single = plan;
      single.pp = 1;
      single.attention = {};
      single.moe = {};
      const RunResult one = run(self, single, 0);
      const RunResult a = run(comm, plan, 0), b = run(comm, plan, 0);
      const bool last = plan.stage_of(comm.rank()) == plan.pp - 1;
      const double d = compare(a, one, last, family);
      const bool repeat = bit_identical(a, b);
      std::printf(
          "rank %d %s [%s]: %zu sequence(s), tokens equal to 1 rank; max |logit diff| %s (tolerance %.0e); "
          "two runs %s\n",
          comm.rank(), family.c_str(), spec.c_str(), a.sequences.size(),
          last ? std::to_string(d).c_str() : "- (not the last stage)", kShardTolerance,
          repeat ? "bit-identical" : "DIFFER");
      std::fflush(stdout);
      if (!(d <= kShardTolerance) || !repeat) throw std::runtime_error(family + ": the sharded run does not match");
      // Each rank reads only its shards: a plan that splits weights leaves each rank fewer bytes than one rank holds.
      const int64_t mine = a.measurements.ranks.at(0).memory.weights_bytes,
                    all = one.measurements.ranks.at(0).memory.weights_bytes;
      const bool splits = plan.attention.tp > 1 || plan.pp > 1 || (m.config.is_moe() && plan.moe.ep * plan.moe.tp > 1);
      std::printf("rank %d %s: weights %lld of one rank's %lld bytes\n", comm.rank(), family.c_str(),
                  static_cast<long long>(mine), static_cast<long long>(all));
      if (splits ? mine >= all : mine != all)
        throw std::runtime_error(family + ": rank holds " + std::to_string(mine) + " weight bytes, one rank " +
                                 std::to_string(all));
      const RunResult timed = run(comm, plan, 2);
      compare(timed, one, false, family + " (timed)");
      check_collectives(timed, plan, m.config.is_moe());
    }
    comm.barrier();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", comm.rank(), e.what());
    std::fflush(stderr);
    comm.abort(1);
  }
  return 0;
}
