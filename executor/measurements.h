#pragma once
// Timing a run: the OpTimer times each distinct op call as nccl-tests does (an
// untimed warm-up, then N timed iterations, mean and min) into the Measurements
// (plan/measurements.h), and the probes of this machine.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "executor/registry.h"
#include "executor/tensor.h"
#include "plan/measurements.h"

namespace dayzero::executor {

// The Measurements types live in plan/ (the cost model reads them back);
// the executor fills them.
using plan::collective_to_json;
using plan::CollectiveMeasurement;
using plan::MachineInfo;
using plan::Measurements;
using plan::measurements_to_json;
using plan::MemoryUse;
using plan::OpMeasurement;
using plan::RankMeasurements;
using plan::save_measurements;

// This machine (hostname, /proc/cpuinfo model name, hardware threads).
MachineInfo this_machine();
// Peak resident set of this process (VmHWM of /proc/self/status), 0 where unknown.
int64_t rss_peak_bytes();
// Resident set of this process now (VmRSS), 0 where unknown.
int64_t rss_current_bytes();
// Of that, the pages of the program's own file (/proc/self/exe's mappings in
// /proc/self/smaps): its code and read-only data, shared by every rank of the binary
// on a host and varying with the build (the CUDA backend's code adds ~0.4 MB).
int64_t program_resident_bytes();

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
  // Off: ops run without being counted or timed (a serving loop, whose shapes never repeat).
  void set_recording(bool on) { recording_ = on; }
  // Times repeats by the backend's device clock (Backend::device_seconds) instead of
  // the host's steady clock; null: the host's.
  // `clock_switch` (or null) turns that clock on for the timed repeats only.
  void set_device_clock(double (*device_seconds)(), void (*clock_switch)(bool) = nullptr) {
    device_seconds_ = device_seconds;
    clock_switch_ = clock_switch;
    if (clock_switch_) clock_switch_(false);
  }
  bool device_clock() const { return device_seconds_ != nullptr; }
  // Back-to-back timing (or nulls): `begin` marks the device's queue, `end` waits for it
  // and returns the seconds since the mark. With it, an op that is not in place has its
  // repeats queued one after the other between the two with the per-launcher clock off,
  // and its time is their span over the count (nccl-tests' and ggml's way): the launches
  // overlap the kernels as in a run, where a clock around each launch also counted the
  // host's launch latency (~20 us an op on the H200, session 29). min_s is then that mean.
  void set_device_span(void (*begin)(), double (*end)()) {
    span_begin_ = begin;
    span_end_ = end;
  }

  template <class Fn>
  auto run(const OpKey& key, Fn&& fn) {
    const auto t0 = std::chrono::steady_clock::now();
    auto result = fn();
    if (!recording_) return result;
    const double host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    OpMeasurement* m = note(key);
    last_->host_s += host_s;
    if (m) {
      const TensorPeakExcluded timing;
      const auto repeat = [&] {
        auto r = fn();
        (void)r;
      };
      if (span_begin_ && span_end_) time_back_to_back(*m, repeat);
      else time(*m, repeat);
    }
    return result;
  }
  // For in-place kernels (x: a Tensor or several): timed repeats work on a copy of
  // x made outside the clock.
  template <class State, class Fn>
  void run_inplace(const OpKey& key, State& x, Fn&& fn) {
    if (OpMeasurement* m = recording_ ? note(key) : nullptr) {
      const TensorPeakExcluded timing;
      State copy = x;
      time(
          *m, [&] { fn(copy); }, [&] { copy = x; });
    }
    const auto t0 = std::chrono::steady_clock::now();
    fn(x);
    if (recording_) last_->host_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::vector<OpMeasurement> results() const;
  double overhead_s() const { return overhead_s_; }  // seconds spent in timed repeats (and their copies)

 private:
  OpMeasurement* note(const OpKey& key);  // nullptr unless this key is to be timed now; last_ either way
  template <class Body>
  void time(OpMeasurement& m, Body&& body) {
    time(m, body, [] {});
  }
  template <class Body>
  void time_back_to_back(OpMeasurement& m, Body&& body) {
    const auto start = std::chrono::steady_clock::now();
    span_begin_();
    for (int i = 0; i < iterations_; ++i) body();
    const double each = span_end_() / iterations_;
    m.iterations = iterations_;
    m.min_s = m.mean_s = each;
    overhead_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  template <class Body, class Reset>
  void time(OpMeasurement& m, Body&& body, Reset&& reset) {
    const auto start = std::chrono::steady_clock::now();
    if (clock_switch_) clock_switch_(true);
    double sum = 0, best = 0;
    for (int i = 0; i < iterations_; ++i) {
      reset();
      if (device_seconds_) device_seconds_();  // what earlier work left on the device clock
      const auto t0 = std::chrono::steady_clock::now();
      body();
      const double s = device_seconds_ ? device_seconds_()
                                       : std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      sum += s;
      best = i == 0 ? s : std::min(best, s);
    }
    if (clock_switch_) clock_switch_(false);
    m.iterations = iterations_;
    m.min_s = best;
    m.mean_s = std::max(best, sum / iterations_);  // equal times can average a rounding below their min
    overhead_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  int iterations_ = 0;
  bool recording_ = true;
  double (*device_seconds_)() = nullptr;
  void (*clock_switch_)(bool) = nullptr;
  void (*span_begin_)() = nullptr;
  double (*span_end_)() = nullptr;
  double overhead_s_ = 0;
  std::string phase_ = "prefill";
  std::map<std::string, OpMeasurement> ops_;
  OpMeasurement* last_ = nullptr;  // the entry note() counted last (map nodes stay put)
  std::vector<std::string> order_;
};

}  // namespace dayzero::executor
