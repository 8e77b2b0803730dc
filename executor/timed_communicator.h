#pragma once
// TimedCommunicator: a Communicator decorator that times every collective the
// forward makes, as nccl-tests does for one size: per distinct (collective, group
// size, bytes) the real call is the untimed warm-up, then `iterations` timed
// repeats of the same collective on a scratch copy of the buffer (mean and min).
// The decorated communicator (MPI, later NCCL) is unchanged.
//
// Every rank must make the same repeats in the same order, or the repeats would
// pair with different calls on the peers (a hang or garbage). So the decision to
// repeat depends only on what every rank of the group sees alike, never on timing:
// - all_reduce_sum, all_gather, reduce_scatter_sum: the first call of each
//   (collective, bytes); their sizes are the same on every rank.
// - send / recv: the first message of each (direction, peer, bytes); the sender
//   and the receiver see the same sequence of messages between them.
// - all_to_all_v: per-rank counts differ, so a rank cannot know whether its peers
//   see a new key; every call is repeated (ranks make the same number of calls).
// A barrier (outside the clock) lines the ranks up before each timed repeat of a
// collective (not of send / recv, which the other ranks do not repeat).
//
// On one rank nothing is recorded: results() stays empty.

#include <chrono>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "executor/communicator.h"
#include "executor/measurements.h"

namespace dayzero::executor {

class TimedCommunicator final : public Communicator {
 public:
  TimedCommunicator(Communicator& inner, int iterations) : inner_(inner), iterations_(iterations) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void all_reduce_sum(std::span<float> data) override;
  void all_gather(std::span<const float> in, std::span<float> out) override;
  void reduce_scatter_sum(std::span<const float> in, std::span<float> out) override;
  void all_to_all_v(std::span<const float> send, std::span<const int64_t> send_counts, std::span<float> recv,
                    std::span<const int64_t> recv_counts) override;
  void send(std::span<const float> data, int dest) override;
  void recv(std::span<float> data, int source) override;
  // A tensor's values go to the inner communicator as they are (a device communicator
  // works where they lie); the timed repeats start from a copy that shares them.
  void all_reduce_sum(TensorValues& data) override;
  void all_to_all_v(const TensorValues& send, std::span<const int64_t> send_counts, TensorValues& recv,
                    std::span<const int64_t> recv_counts) override;
  void send(const TensorValues& data, int dest) override;
  void recv(TensorValues& data, int source) override;
  void barrier() override { inner_.barrier(); }
  // Untimed: the result is the inner communicator's (wrap it to time it).
  std::unique_ptr<Communicator> split(int color, int key) override { return inner_.split(color, key); }
  std::vector<std::vector<std::byte>> all_gather_bytes(std::span<const std::byte> data) override {
    return inner_.all_gather_bytes(data);
  }
  void set_name(const std::string& name) override { inner_.set_name(name); }

  // Off: calls pass through neither counted nor timed (a run's warm-up pass).
  void set_recording(bool on) { recording_ = on; }
  // In first-seen order.
  std::vector<CollectiveMeasurement> results() const;
  double overhead_s() const { return overhead_s_; }  // seconds spent in timed repeats (and their copies, barriers)

 private:
  // The entry for `key` (counted as a call); `repeat` is set when this call is to be
  // followed by timed repeats.
  CollectiveMeasurement& note(core::Collective collective, int ranks, int64_t size_bytes, const std::string& key,
                              bool& repeat);
  // The entry of an all-reduce of `floats` (repeated on its first call), or null.
  CollectiveMeasurement* note_all_reduce(size_t floats, bool& repeat);
  // The entry of an all-to-all of `send_counts` (repeated on every call), or null.
  CollectiveMeasurement* note_all_to_all(std::span<const int64_t> send_counts, bool& repeat);
  CollectiveMeasurement* note_message(bool sending, int peer, size_t floats, bool& repeat);
  template <class Body, class Reset>
  void time(CollectiveMeasurement& m, Body&& body, Reset&& reset, bool align = true);

  bool counted() const { return recording_ && size() > 1; }

  Communicator& inner_;
  bool recording_ = true;
  int iterations_ = 0;
  double overhead_s_ = 0;
  std::map<std::tuple<core::Collective, int, int64_t>, CollectiveMeasurement> entries_;
  std::vector<std::tuple<core::Collective, int, int64_t>> order_;
  std::map<std::string, bool> seen_;                                    // repeat keys already timed
  std::map<std::tuple<core::Collective, int, int64_t>, double> sum_s_;  // over all timed repeats of an entry
};

}  // namespace dayzero::executor
