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

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "executor/communicator.h"

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
  MpiCommunicator();
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

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

  // Stops every rank of the world (MPI_Abort): a failure on one rank never leaves
  // the others waiting in a collective. The one exception to "library code never
  // exits" (CONTRIBUTING.md): only MPI can stop the peer processes. The caller
  // prints its message first.
  [[noreturn]] void abort(int code = 1);

 private:
  struct Handle;  // the MPI_Comm (no <mpi.h> here)
  explicit MpiCommunicator(std::unique_ptr<Handle> comm);
  std::unique_ptr<Handle> comm_;
  int rank_ = 0, size_ = 1;
  bool owns_init_ = false;
};

}  // namespace dayzero::executor
