#pragma once
// The Communicator over NCCL (executor/communicator.h), for ranks that each hold a
// GPU (`mpirun -np N dayzero run --backend cuda`). Plain C++: no NCCL or CUDA type
// reaches a user of this file; NCCL itself is loaded on first use (cuda/nccl.cuh).
//
// Joining: collective over a bootstrap communicator (the MPI world): its rank 0
// makes NCCL's unique id, all_gather_bytes hands it to every rank, and each rank
// joins non-blocking (ncclConfig_t::blocking = 0) on its device. Groups are split
// with ncclCommSplit, non-blocking alike. No call waits forever: initialization,
// splits and every collective are polled against a deadline
// (executor/deadline.h); past it, or on an asynchronous NCCL error, the rank aborts
// its NCCL communicator (ncclCommAbort) and throws CollectiveTimeout (a peer hung)
// or CudaError (NCCL's message), and every later call throws.
//
// A tensor's values that the CUDA backend left on the device (executor/tensor_values.h)
// are the collective's buffers where they lie: all_reduce_sum, all_to_all_v, send and
// recv on TensorValues run NCCL on them after the kernels queued before (an event on
// the legacy default stream, which the backend's kernels use), and their results stay on
// the device as the tensor's values, so nothing crosses to the host. Values on the host
// only, and the span overloads, are copied to the device, carried, and copied back.
// all_reduce_sum and reduce_scatter_sum gather every rank's buffer and sum in rank
// order (on the device for a device tensor: cuda/kernels.h sum_blocks_f32; else on the
// host), as MpiCommunicator does, so results are bit-identical to the MPI
// communicator's (NCCL's own reductions follow its ring or tree order).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cuda/device.h"
#include "executor/communicator.h"

namespace dayzero::cuda {

class NcclCommunicator final : public executor::Communicator {
 public:
  // Collective over `bootstrap`; `pool` (this rank's device) holds the staging
  // buffers and must outlive the communicator. Throws CudaError when NCCL cannot be
  // loaded or joined, CollectiveTimeout past `timeout_s`.
  NcclCommunicator(executor::Communicator& bootstrap, DevicePool& pool, double timeout_s);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override;
  int size() const override;
  void all_reduce_sum(std::span<float> data) override;
  void all_gather(std::span<const float> in, std::span<float> out) override;
  void reduce_scatter_sum(std::span<const float> in, std::span<float> out) override;
  void all_to_all_v(std::span<const float> send, std::span<const int64_t> send_counts, std::span<float> recv,
                    std::span<const int64_t> recv_counts) override;
  void send(std::span<const float> data, int dest) override;
  void recv(std::span<float> data, int source) override;
  void all_reduce_sum(executor::TensorValues& data) override;
  void all_to_all_v(const executor::TensorValues& send, std::span<const int64_t> send_counts,
                    executor::TensorValues& recv, std::span<const int64_t> recv_counts) override;
  void send(const executor::TensorValues& data, int dest) override;
  void recv(executor::TensorValues& data, int source) override;
  void barrier() override;
  std::unique_ptr<executor::Communicator> split(int color, int key) override;
  std::vector<std::vector<std::byte>> all_gather_bytes(std::span<const std::byte> data) override;
  void set_name(const std::string& name) override;

  struct Impl;

 private:
  explicit NcclCommunicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dayzero::cuda
