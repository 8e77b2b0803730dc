#pragma once
// What a run measured: per-op times by op, kind and shape (timed as nccl-tests
// does: an untimed warm-up, then N timed iterations, mean and min), step times,
// the generated tokens, memory, the plan and the machine. Written as JSON with a
// schema version, atomically.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "executor/registry.h"
#include "executor/tensor.h"
#include "simulate/plan.h"

namespace dayzero::executor {

inline constexpr int kMeasurementsSchemaVersion = 1;

// One (phase, op, variant, shape) the forward ran, and its timing.
struct OpMeasurement {
  std::string phase;    // "prefill" | "decode"
  std::string name;     // op inventory name, e.g. "q_proj", "experts.down_proj"
  std::string kind;     // model::op_kind_name
  std::string variant;  // registry variant, e.g. "f32", "gqa+sinks"
  std::vector<int64_t> shape;  // [tokens, k]; attention [tokens, context]; expert_gemm [rows, k] of one expert
  int64_t calls = 0;    // times the forward ran it with this key (layers, experts, steps)
  int iterations = 0;   // timed iterations (after one untimed warm-up)
  double mean_s = 0, min_s = 0;
  OpCost cost;          // one call, from the registry's cost function
  double gflops() const { return min_s > 0 ? static_cast<double>(cost.flops) / min_s / 1e9 : 0; }
  double gbps() const { return min_s > 0 ? static_cast<double>(cost.bytes) / min_s / 1e9 : 0; }
};

// nccl-tests' bus bandwidth factors (doc/PERFORMANCE.md in NVIDIA/nccl-tests):
// busbw = algbw x factor, with n ranks: all_reduce 2(n-1)/n; all_gather,
// reduce_scatter and alltoall (n-1)/n; sendrecv 1. Throws std::invalid_argument
// for another name.
double bus_factor(const std::string& collective, int ranks);

// One distinct (collective, ranks, size_bytes) the forward called, and its timing:
// the first real call is the untimed warm-up, then timed repeats on a scratch
// buffer (TimedCommunicator). Names and sizes as nccl-tests reports them:
// all_reduce the buffer, all_gather the gathered output, reduce_scatter the full
// input, alltoall the rank's send buffer, sendrecv the message.
struct CollectiveMeasurement {
  std::string collective;  // all_reduce | all_gather | reduce_scatter | alltoall | sendrecv
  int ranks = 0;
  int64_t size_bytes = 0;
  int64_t calls = 0;   // real calls with this key
  int iterations = 0;  // timed repeats
  double mean_s = 0, min_s = 0;
  double algbw_GBps() const { return min_s > 0 ? static_cast<double>(size_bytes) / min_s / 1e9 : 0; }
  double busbw_GBps() const { return algbw_GBps() * bus_factor(collective, ranks); }
};

struct MachineInfo {
  std::string hostname;
  std::string cpu_model;  // /proc/cpuinfo "model name"
  int cores = 0;          // std::thread::hardware_concurrency
};
MachineInfo this_machine();
// Peak resident set of this process (VmHWM of /proc/self/status), 0 where unknown.
int64_t rss_peak_bytes();

struct MemoryUse {
  int64_t weights_bytes = 0;    // this rank's checkpoint tensors (memory-mapped) + dequantized vectors
  int64_t kv_bytes = 0;         // KV cache at its largest
  int64_t workspace_bytes = 0;  // largest activation tensor the runner allocated (an estimate)
  int64_t peak_bytes() const { return weights_bytes + kv_bytes + workspace_bytes; }
  int64_t rss_hwm_bytes = 0;    // what the OS saw (includes the mapped pages touched)
};

struct Measurements {
  int schema_version = kMeasurementsSchemaVersion;
  std::string model;    // config source
  std::string weights;  // weights directory
  int rank = 0, world_size = 1;
  std::vector<int64_t> prompt, tokens;  // prompt and generated token ids
  double prefill_s = 0;
  std::vector<double> decode_step_s;    // one per decode step
  MemoryUse memory;
  simulate::Plan plan;
  MachineInfo machine;
  int timing_iterations = 0;  // timed repeats per op (after one untimed warm-up)
  std::vector<OpMeasurement> ops;
  std::vector<CollectiveMeasurement> collectives;  // empty on one rank
  double decode_step_mean_s() const;
};

nlohmann::json measurements_to_json(const Measurements& m);
nlohmann::json collective_to_json(const CollectiveMeasurement& c);  // one entry of "collectives"
// Writes via a temporary file in the same directory and a rename.
void save_measurements(const std::filesystem::path& file, const Measurements& m);

struct OpKey {
  const model::Op* op = nullptr;  // for the name, kind and cost
  std::string variant;
  std::vector<int64_t> shape;
  OpCost cost;
};

// Times each distinct (phase, op, variant, shape) the first time it runs: the
// real call is the untimed warm-up, then `iterations` timed repeats whose results
// are discarded (0 = no timing). Later calls with the same key only count.
class OpTimer {
 public:
  explicit OpTimer(int iterations = 0) : iterations_(iterations) {}
  void set_phase(std::string phase) { phase_ = std::move(phase); }

  template <class Fn>
  auto run(const OpKey& key, Fn&& fn) {
    auto result = fn();
    if (OpMeasurement* m = note(key))
      time(*m, [&] { auto r = fn(); (void)r; });
    return result;
  }
  // For in-place kernels (x: a Tensor or several): timed repeats work on a copy of
  // x made outside the clock.
  template <class State, class Fn>
  void run_inplace(const OpKey& key, State& x, Fn&& fn) {
    State copy;
    if (OpMeasurement* m = note(key)) {
      copy = x;
      time(*m, [&] { fn(copy); }, [&] { copy = x; });
    }
    fn(x);
  }
  std::vector<OpMeasurement> results() const;
  double overhead_s() const { return overhead_s_; }  // seconds spent in timed repeats (and their copies)

 private:
  OpMeasurement* note(const OpKey& key);  // nullptr unless this key is to be timed now
  template <class Body>
  void time(OpMeasurement& m, Body&& body) {
    time(m, body, [] {});
  }
  template <class Body, class Reset>
  void time(OpMeasurement& m, Body&& body, Reset&& reset) {
    const auto start = std::chrono::steady_clock::now();
    double sum = 0, best = 0;
    for (int i = 0; i < iterations_; ++i) {
      reset();
      const auto t0 = std::chrono::steady_clock::now();
      body();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      sum += s;
      best = i == 0 ? s : std::min(best, s);
    }
    m.iterations = iterations_;
    m.mean_s = sum / iterations_;
    m.min_s = best;
    overhead_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  int iterations_ = 0;
  double overhead_s_ = 0;
  std::string phase_ = "prefill";
  std::map<std::string, OpMeasurement> ops_;
  std::vector<std::string> order_;
};

}  // namespace dayzero::executor
