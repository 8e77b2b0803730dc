#pragma once
// The Communicator over MPI (MPI_COMM_WORLD, or a group split from it), for
// ranks launched with `mpirun`.
// No MPI header leaks from here: the implementation (mpi_communicator.cpp) is the
// only file that includes <mpi.h>, and it is built only when CMake found MPI
// (then DAYZERO_HAVE_MPI is defined for dayzero_executor's users).
//
// Reductions are deterministic: all_reduce_sum and reduce_scatter_sum gather every
// rank's buffer and sum in rank order on each rank, so the result never depends on
// MPI's reduction tree and is bit-identical run to run (and on every rank).
//
// No call waits forever (the model: PyTorch's collective timeouts and NCCL's
// abort). Every collective is built from non-blocking point-to-point messages
// (MPI_Isend / MPI_Irecv with each peer; the CPU executor's groups are a few
// ranks), completed by polling against a deadline (executor/deadline.h). When it
// passes, the call throws CollectiveTimeout naming the operation, the group and
// the world ranks whose messages have not arrived; from then on every call throws
// (the pending requests still point at the caller's buffers), the destructor
// neither frees nor finalizes (MPI_Finalize would wait for the missing peer), and
// the caller ends the job with abort(). Not covered: MPI_Init and split
// (MPI_Comm_split has no non-blocking form), which run before any step.

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "executor/communicator.h"
#include "executor/deadline.h"

namespace dayzero::executor {

// True when this process was started by a launcher for a world of more than one
// rank (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_SIZE set and > 1); reads only the
// environment, so it works in builds without MPI.
inline bool launched_with_many_ranks() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(var); v && std::atoi(v) > 1) return true;
  return false;
}

class MpiCommunicator final : public Communicator {
 public:
  // Initializes MPI when nobody has yet (and then finalizes it on destruction).
  // `collective_timeout_s`: each call's deadline (collective_timeout_problem must
  // accept it; std::invalid_argument otherwise); groups split from this one inherit it.
  explicit MpiCommunicator(double collective_timeout_s = kDefaultCollectiveTimeout_s);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  using Communicator::all_reduce_sum, Communicator::all_to_all_v, Communicator::send, Communicator::recv;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void all_reduce_sum(std::span<float> data) override;
  void all_gather(std::span<const float> in, std::span<float> out) override;
  void reduce_scatter_sum(std::span<const float> in, std::span<float> out) override;
  void all_to_all_v(std::span<const float> send, std::span<const int64_t> send_counts, std::span<float> recv,
                    std::span<const int64_t> recv_counts) override;
  void send(std::span<const float> data, int dest) override;
  void recv(std::span<float> data, int source) override;
  void barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;
  std::vector<std::vector<std::byte>> all_gather_bytes(std::span<const std::byte> data) override;
  void set_name(const std::string& name) override;
  int64_t library_bytes() const override { return library_bytes_; }

  double collective_timeout_s() const { return timeout_s_; }
  // Rank r of this communicator in MPI_COMM_WORLD (what messages name).
  int world_rank(int r) const { return world_ranks_.at(static_cast<size_t>(r)); }

  // Stops every rank of the world (MPI_Abort): a failure on one rank never leaves
  // the others waiting in a collective. The one exception to "library code never
  // exits" (CONTRIBUTING.md): only MPI can stop the peer processes. The caller
  // prints its message first.
  [[noreturn]] void abort(int code = 1);

 private:
  struct Handle;    // the MPI_Comm and the calls' reused buffers (no <mpi.h> here)
  struct Exchange;  // one call's messages, one send and one receive per peer (mpi_communicator.cpp)
  MpiCommunicator(std::unique_ptr<Handle> comm, double collective_timeout_s);
  void ranks_in_world();
  // Posts `x`'s messages, copies this rank's own part, and waits for them all by the deadline.
  void run(Exchange& x);
  void all_gather(const char* op, std::span<const float> in, std::span<float> out);

  std::unique_ptr<Handle> comm_;
  int rank_ = 0, size_ = 1;
  bool owns_init_ = false;
  int64_t library_bytes_ = 0;  // the resident set MPI_Init added (the world that started MPI)
  double timeout_s_ = kDefaultCollectiveTimeout_s;
  std::string group_text_;        // "the tensor-parallel group (world ranks 0, 1)"; "the world"
  std::vector<int> world_ranks_;  // by rank of this communicator
};

}  // namespace dayzero::executor
