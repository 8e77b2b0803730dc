#pragma once
// Collectives behind one interface, so the runner never knows what carries them:
// SelfCommunicator (one rank; copies and no-ops), MpiCommunicator, ThreadWorld's ranks,
// NcclCommunicator (cuda/). Buffers are float32 (the backends' activations); counts are
// per rank. Every call is collective over the communicator's ranks unless said
// otherwise, and blocking.
//
// The forward hands its tensors' values (TensorValues) to the collectives that carry
// activations: all_reduce_sum, all_to_all_v, send and recv have overloads for them. By
// default these go through the host (a device backend's values come back first and the
// result stays on the host, to be sent up by the next kernel that reads it); a
// communicator over device memory (NCCL) overrides them to work where a device backend
// left the values and to leave its result there, so that nothing between two kernels
// crosses to the host (docs/ARCHITECTURE.md, "Device backends").

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "executor/tensor.h"

namespace dayzero::executor {

// An error every rank of the world raises alike, after agreeing on it (see
// raise_on_every_rank): no rank is left waiting in a collective, so callers stop
// normally instead of aborting the others.
struct AllRanksError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A collective or transfer that did not complete by its deadline (a peer hung or
// died; MpiCommunicator). The message names the operation, the group and the
// ranks waited for. The communicator cannot be used afterwards: the caller stops
// the world (MpiCommunicator::abort), it does not wait for the peers to agree.
struct CollectiveTimeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // In place: every rank ends with the element-wise sum over ranks, summed in rank
  // order (deterministic).
  virtual void all_reduce_sum(std::span<float> data) = 0;
  // `out` (size() * in.size()) gets rank r's `in` at offset r * in.size().
  virtual void all_gather(std::span<const float> in, std::span<float> out) = 0;
  // `in` (size() * out.size()): rank r gets the sum over ranks of block r.
  virtual void reduce_scatter_sum(std::span<const float> in, std::span<float> out) = 0;
  // Variable all-to-all: send_counts[r] floats (consecutive in `send`) go to rank r;
  // recv_counts[r] floats arrive from rank r, consecutive in `recv` in rank order.
  virtual void all_to_all_v(std::span<const float> send, std::span<const int64_t> send_counts, std::span<float> recv,
                            std::span<const int64_t> recv_counts) = 0;
  // Point to point (pipeline stages); not collective.
  virtual void send(std::span<const float> data, int dest) = 0;
  virtual void recv(std::span<float> data, int source) = 0;
  virtual void barrier() = 0;

  // The same on a tensor's values, wherever they lie (the header's comment). The
  // all-to-all's `recv` holds as many values as recv_counts sum to, a message's `data`
  // as many as are sent; a result may replace the values' storage (a device
  // communicator's new buffer), never their count.
  virtual void all_reduce_sum(TensorValues& data);
  virtual void all_to_all_v(const TensorValues& send, std::span<const int64_t> send_counts, TensorValues& recv,
                            std::span<const int64_t> recv_counts);
  virtual void send(const TensorValues& data, int dest);
  virtual void recv(TensorValues& data, int source);

  // The ranks passing the same `color`, ordered by `key` (then by rank), as a
  // communicator of their own (MPI_Comm_split). Collective over this communicator.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
  // Every rank's bytes (sizes may differ), in rank order, on every rank: for
  // results, not for the forward's activations.
  virtual std::vector<std::vector<std::byte>> all_gather_bytes(std::span<const std::byte> data) = 0;

  // What this communicator is, for its error messages ("the tensor-parallel group").
  virtual void set_name(const std::string& /*name*/) {}
  // Resident bytes the communication library added to this process when it started
  // the world (MPI_Init: its shared-memory transport), measured; 0 where nothing
  // started one. Memory accounting puts them with the communication buffers.
  virtual int64_t library_bytes() const { return 0; }
};

// Collective: when any rank's `error` is non-empty, throws AllRanksError on every
// rank: its own message when it has one, else "rank k: <message>" of the first
// rank that has.
void raise_on_every_rank(Communicator& comm, const std::string& error);

// The one-rank world: collectives copy or do nothing; send/recv to self keep one
// message in a FIFO (a recv without a matching send is an error, not a hang).
class SelfCommunicator final : public Communicator {
 public:
  using Communicator::all_reduce_sum, Communicator::all_to_all_v, Communicator::send, Communicator::recv;
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce_sum(std::span<float>) override {}
  void all_reduce_sum(TensorValues&) override {}  // where the values lie: nothing comes back
  // One rank's all-to-all hands `send` over as it is (a device copy shared, not brought back).
  void all_to_all_v(const TensorValues& send, std::span<const int64_t> send_counts, TensorValues& recv,
                    std::span<const int64_t> recv_counts) override;
  void all_gather(std::span<const float> in, std::span<float> out) override;
  void reduce_scatter_sum(std::span<const float> in, std::span<float> out) override;
  void all_to_all_v(std::span<const float> send, std::span<const int64_t> send_counts, std::span<float> recv,
                    std::span<const int64_t> recv_counts) override;
  void send(std::span<const float> data, int dest) override;
  void recv(std::span<float> data, int source) override;
  void barrier() override {}
  std::unique_ptr<Communicator> split(int, int) override { return std::make_unique<SelfCommunicator>(); }
  std::vector<std::vector<std::byte>> all_gather_bytes(std::span<const std::byte> data) override {
    return {std::vector<std::byte>(data.begin(), data.end())};
  }

 private:
  std::vector<std::vector<float>> pending_;
};

}  // namespace dayzero::executor
