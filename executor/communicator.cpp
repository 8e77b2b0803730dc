#include "executor/communicator.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dayzero::executor {

namespace {
void same_size(size_t a, size_t b, const char* what) {
  if (a != b)
    throw std::invalid_argument(std::string("SelfCommunicator::") + what + ": buffer sizes differ (" +
                                std::to_string(a) + " vs " + std::to_string(b) + ")");
}
void self_rank(int r, const char* what) {
  if (r != 0)
    throw std::invalid_argument(std::string("SelfCommunicator::") + what + ": rank " + std::to_string(r) +
                                " does not exist (size 1)");
}
}  // namespace

void raise_on_every_rank(Communicator& comm, const std::string& error) {
  const auto all = comm.all_gather_bytes(std::as_bytes(std::span<const char>(error.data(), error.size())));
  if (!error.empty()) throw AllRanksError(error);  // this rank's own, when it has one
  for (size_t k = 0; k < all.size(); ++k) {
    if (all[k].empty()) continue;
    const std::string msg(reinterpret_cast<const char*>(all[k].data()), all[k].size());
    throw AllRanksError("rank " + std::to_string(k) + ": " + msg);
  }
}

// Through the host: the values come back (a const read keeps a device copy of the
// input; a written tensor's device copy goes), as a communicator over host memory needs.
void Communicator::all_reduce_sum(TensorValues& data) { all_reduce_sum(std::span<float>(data.data(), data.size())); }

void Communicator::all_to_all_v(const TensorValues& send, std::span<const int64_t> send_counts, TensorValues& recv,
                                std::span<const int64_t> recv_counts) {
  all_to_all_v(std::span<const float>(send.data(), send.size()), send_counts,
               std::span<float>(recv.data(), recv.size()), recv_counts);
}

void Communicator::send(const TensorValues& data, int dest) {
  send(std::span<const float>(data.data(), data.size()), dest);
}

void Communicator::recv(TensorValues& data, int source) { recv(std::span<float>(data.data(), data.size()), source); }

void SelfCommunicator::all_gather(std::span<const float> in, std::span<float> out) {
  same_size(in.size(), out.size(), "all_gather");
  std::copy(in.begin(), in.end(), out.begin());
}

void SelfCommunicator::reduce_scatter_sum(std::span<const float> in, std::span<float> out) {
  same_size(in.size(), out.size(), "reduce_scatter_sum");
  std::copy(in.begin(), in.end(), out.begin());
}

void SelfCommunicator::all_to_all_v(std::span<const float> send, std::span<const int64_t> send_counts,
                                    std::span<float> recv, std::span<const int64_t> recv_counts) {
  if (send_counts.size() != 1 || recv_counts.size() != 1)
    throw std::invalid_argument("SelfCommunicator::all_to_all_v: needs one count per rank (1)");
  same_size(static_cast<size_t>(send_counts[0]), static_cast<size_t>(recv_counts[0]), "all_to_all_v");
  if (send.size() < static_cast<size_t>(send_counts[0]) || recv.size() < static_cast<size_t>(recv_counts[0]))
    throw std::invalid_argument("SelfCommunicator::all_to_all_v: counts exceed the buffers");
  std::copy_n(send.begin(), send_counts[0], recv.begin());
}

void SelfCommunicator::all_to_all_v(const TensorValues& send, std::span<const int64_t> send_counts, TensorValues& recv,
                                    std::span<const int64_t> recv_counts) {
  if (send_counts.size() == 1 && recv_counts.size() == 1 && send_counts[0] == recv_counts[0] &&
      send.size() == static_cast<size_t>(send_counts[0]) && recv.size() == send.size()) {
    recv = send;
    return;
  }
  Communicator::all_to_all_v(send, send_counts, recv, recv_counts);  // its checks name what is wrong
}

void SelfCommunicator::send(std::span<const float> data, int dest) {
  self_rank(dest, "send");
  pending_.emplace_back(data.begin(), data.end());
}

void SelfCommunicator::recv(std::span<float> data, int source) {
  self_rank(source, "recv");
  if (pending_.empty()) throw std::runtime_error("SelfCommunicator::recv: no message was sent (would hang)");
  same_size(pending_.front().size(), data.size(), "recv");
  std::copy(pending_.front().begin(), pending_.front().end(), data.begin());
  pending_.erase(pending_.begin());
}

}  // namespace dayzero::executor
