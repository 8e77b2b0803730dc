#include "executor/timed_communicator.h"

#include <algorithm>
#include <numeric>

namespace dayzero::executor {

namespace {
int64_t float_bytes(size_t n) { return static_cast<int64_t>(n * sizeof(float)); }
// A repeat's input gets its host copy before the clock starts (its device copy, if any,
// stays), so that a communicator over host memory times its collective, not the download.
void host_copy_too(const TensorValues& v) { (void)v.data(); }
}  // namespace

CollectiveMeasurement& TimedCommunicator::note(core::Collective collective, int ranks, int64_t size_bytes,
                                               const std::string& key, bool& repeat) {
  const auto id = std::make_tuple(collective, ranks, size_bytes);
  auto [it, fresh] = entries_.try_emplace(id);
  CollectiveMeasurement& m = it->second;
  if (fresh) {
    order_.push_back(id);
    m.collective = collective;
    m.ranks = ranks;
    m.size_bytes = size_bytes;
  }
  ++m.calls;
  repeat = false;
  if (size() > 1 && iterations_ > 0) {
    if (key.empty()) {
      repeat = true;  // repeated on every call (all_to_all_v)
    } else {
      auto [s, first] = seen_.try_emplace(key, true);
      (void)s;
      repeat = first;
    }
  }
  return m;
}

template <class Body, class Reset>
void TimedCommunicator::time(CollectiveMeasurement& m, Body&& body, Reset&& reset, bool align) {
  const auto start = std::chrono::steady_clock::now();
  double& sum = sum_s_[std::make_tuple(m.collective, m.ranks, m.size_bytes)];
  for (int i = 0; i < iterations_; ++i) {
    reset();
    if (align) inner_.barrier();  // not for send / recv: the other ranks make no repeats
    const auto t0 = std::chrono::steady_clock::now();
    body();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m.min_s = m.iterations == 0 ? s : std::min(m.min_s, s);
    ++m.iterations;
    sum += s;
  }
  m.mean_s = std::max(m.min_s, sum / m.iterations);  // equal times can average a rounding below their min
  overhead_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void TimedCommunicator::all_reduce_sum(std::span<float> data) {
  bool repeat = false;
  CollectiveMeasurement* m = note_all_reduce(data.size(), repeat);
  std::vector<float> scratch;
  if (repeat) scratch.assign(data.begin(), data.end());  // the input, before the real call overwrites it
  inner_.all_reduce_sum(data);
  if (repeat) {
    std::vector<float> work(scratch.size());
    time(
        *m, [&] { inner_.all_reduce_sum(work); }, [&] { std::copy(scratch.begin(), scratch.end(), work.begin()); });
  }
}

void TimedCommunicator::all_gather(std::span<const float> in, std::span<float> out) {
  bool repeat = false;
  const int64_t bytes = float_bytes(out.size());  // nccl-tests: the gathered output
  CollectiveMeasurement* m =
      counted() ? &note(core::Collective::all_gather, size(), bytes, "ag|" + std::to_string(bytes), repeat) : nullptr;
  inner_.all_gather(in, out);
  if (repeat) {
    std::vector<float> work(out.size());
    time(
        *m, [&] { inner_.all_gather(in, work); }, [] {});
  }
}

void TimedCommunicator::reduce_scatter_sum(std::span<const float> in, std::span<float> out) {
  bool repeat = false;
  const int64_t bytes = float_bytes(in.size());  // nccl-tests: the full input (size() x the output)
  CollectiveMeasurement* m =
      counted() ? &note(core::Collective::reduce_scatter, size(), bytes, "rs|" + std::to_string(bytes), repeat)
                : nullptr;
  inner_.reduce_scatter_sum(in, out);
  if (repeat) {
    std::vector<float> work(out.size());
    time(
        *m, [&] { inner_.reduce_scatter_sum(in, work); }, [] {});
  }
}

CollectiveMeasurement* TimedCommunicator::note_all_reduce(size_t floats, bool& repeat) {
  repeat = false;
  const int64_t bytes = float_bytes(floats);
  return counted() ? &note(core::Collective::all_reduce, size(), bytes, "ar|" + std::to_string(bytes), repeat)
                   : nullptr;
}

CollectiveMeasurement* TimedCommunicator::note_all_to_all(std::span<const int64_t> send_counts, bool& repeat) {
  repeat = false;
  // This rank's send buffer (nccl-tests: the per-rank buffer; with uneven counts it differs by rank).
  const int64_t sent = std::accumulate(send_counts.begin(), send_counts.end(), int64_t{0});
  return counted() ? &note(core::Collective::all_to_all, size(), float_bytes(static_cast<size_t>(sent)), "", repeat)
                   : nullptr;
}

CollectiveMeasurement* TimedCommunicator::note_message(bool sending, int peer, size_t floats, bool& repeat) {
  repeat = false;
  const int64_t bytes = float_bytes(floats);
  const std::string key = std::string(sending ? "s|" : "r|") + std::to_string(peer) + "|" + std::to_string(bytes);
  return counted() ? &note(core::Collective::send_recv, 2, bytes, key, repeat) : nullptr;
}

void TimedCommunicator::all_to_all_v(std::span<const float> send, std::span<const int64_t> send_counts,
                                     std::span<float> recv, std::span<const int64_t> recv_counts) {
  bool repeat = false;
  CollectiveMeasurement* m = note_all_to_all(send_counts, repeat);
  inner_.all_to_all_v(send, send_counts, recv, recv_counts);
  if (repeat) {
    std::vector<float> work(recv.size());
    time(
        *m, [&] { inner_.all_to_all_v(send, send_counts, work, recv_counts); }, [] {});
  }
}

void TimedCommunicator::send(std::span<const float> data, int dest) {
  bool repeat = false;
  CollectiveMeasurement* m = note_message(true, dest, data.size(), repeat);
  inner_.send(data, dest);
  if (repeat)
    time(
        *m, [&] { inner_.send(data, dest); }, [] {}, false);
}

void TimedCommunicator::recv(std::span<float> data, int source) {
  bool repeat = false;
  CollectiveMeasurement* m = note_message(false, source, data.size(), repeat);
  inner_.recv(data, source);
  if (repeat) {
    std::vector<float> work(data.size());
    time(
        *m, [&] { inner_.recv(work, source); }, [] {}, false);
  }
}

// The tensors' overloads: a repeat's input is a copy sharing the values (a device copy
// is not written once shared).
void TimedCommunicator::all_reduce_sum(TensorValues& data) {
  bool repeat = false;
  CollectiveMeasurement* m = note_all_reduce(data.size(), repeat);
  TensorValues input;
  if (repeat) input = data;  // before the real call replaces the values
  inner_.all_reduce_sum(data);
  if (repeat) {
    TensorValues work;
    time(
        *m, [&] { inner_.all_reduce_sum(work); },
        [&] {
          work = input;
          host_copy_too(work);
        });
  }
}

void TimedCommunicator::all_to_all_v(const TensorValues& send, std::span<const int64_t> send_counts, TensorValues& recv,
                                     std::span<const int64_t> recv_counts) {
  bool repeat = false;
  CollectiveMeasurement* m = note_all_to_all(send_counts, repeat);
  inner_.all_to_all_v(send, send_counts, recv, recv_counts);
  if (repeat) {
    host_copy_too(send);
    TensorValues work(recv.size());
    time(
        *m, [&] { inner_.all_to_all_v(send, send_counts, work, recv_counts); }, [] {});
  }
}

void TimedCommunicator::send(const TensorValues& data, int dest) {
  bool repeat = false;
  CollectiveMeasurement* m = note_message(true, dest, data.size(), repeat);
  inner_.send(data, dest);
  if (repeat) {
    host_copy_too(data);
    time(
        *m, [&] { inner_.send(data, dest); }, [] {}, false);
  }
}

void TimedCommunicator::recv(TensorValues& data, int source) {
  bool repeat = false;
  CollectiveMeasurement* m = note_message(false, source, data.size(), repeat);
  inner_.recv(data, source);
  if (repeat) {
    TensorValues work(data.size());
    time(
        *m, [&] { inner_.recv(work, source); }, [] {}, false);
  }
}

std::vector<CollectiveMeasurement> TimedCommunicator::results() const {
  std::vector<CollectiveMeasurement> out;
  for (const auto& id : order_) out.push_back(entries_.at(id));
  return out;
}

}  // namespace dayzero::executor
