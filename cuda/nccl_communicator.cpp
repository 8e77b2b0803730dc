#include "cuda/nccl_communicator.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "cuda/kernels.h"
#include "cuda/nccl.cuh"
#include "cuda/staging.h"
#include "executor/deadline.h"

namespace dayzero::cuda {

using executor::CollectiveTimeout;

struct NcclCommunicator::Impl {
  const detail::Nccl* lib = nullptr;
  DevicePool* pool = nullptr;
  double timeout_s = executor::kDefaultCollectiveTimeout_s;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t queued = nullptr;  // the legacy stream's work before a collective on device values
  int rank = 0, size = 1;
  std::string name = "the NCCL world";
  std::string broken;  // why every call now throws; empty while usable

  Impl(DevicePool& p, double t) : pool(&p), timeout_s(t) {}
  ~Impl() {
    if (comm) {
      if (broken.empty()) lib->destroy(comm);
      else lib->abort(comm);
    }
    if (queued) cudaEventDestroy(queued);
    if (stream) cudaStreamDestroy(stream);
  }

  void guard() const {
    if (!broken.empty()) throw CudaError(name + " is unusable after an earlier failure: " + broken);
  }
  // Aborts the NCCL communicator (its kernels and proxy threads stop) and throws.
  [[noreturn]] void fail(const std::string& why, bool timed_out) {
    broken = why;
    if (comm) lib->abort(comm);
    comm = nullptr;
    if (timed_out) throw CollectiveTimeout(why);
    throw CudaError(why);
  }
  void check(ncclResult_t r, const char* call) {
    if (r == ncclSuccess || r == ncclInProgress) return;
    fail(std::string(call) + " in " + name + ": " + lib->error_string(r) + " (" + lib->last_error(comm) + ")", false);
  }
  // Polls a non-blocking communicator until its pending initialization or split is done.
  void ready(ncclComm_t c, const char* what) {
    ncclResult_t state = ncclInProgress;
    const bool done = executor::poll_until(
        [&] {
          lib->get_async_error(c, &state);
          return state != ncclInProgress;
        },
        timeout_s);
    if (!done)  // fail() aborts this communicator; a split's caller aborts the new one
      fail(std::string(what) + " of " + name + " did not complete within " + std::to_string(timeout_s) +
               " s: a peer rank did not join",
           true);
    if (state != ncclSuccess) fail(std::string(what) + " of " + name + ": " + lib->error_string(state), false);
  }
  // Waits for this call's work on the stream, watching NCCL's asynchronous errors.
  void complete(const char* what) {
    ncclResult_t nccl_state = ncclSuccess;
    cudaError_t stream_state = cudaErrorNotReady;
    const bool done = executor::poll_until(
        [&] {
          // A non-blocking communicator may still be enqueueing the group (ncclInProgress):
          // its stream is empty until then, so it is queried only once NCCL says success.
          lib->get_async_error(comm, &nccl_state);
          if (nccl_state == ncclInProgress) return false;
          if (nccl_state != ncclSuccess) return true;
          stream_state = cudaStreamQuery(stream);
          return stream_state != cudaErrorNotReady;
        },
        timeout_s);
    if (!done)
      fail(std::string("NCCL ") + what + " in " + name + " (rank " + std::to_string(rank) + " of " +
               std::to_string(size) + ") did not complete within " + std::to_string(timeout_s) +
               " s: a peer rank hung or died",
           true);
    if (nccl_state != ncclSuccess)
      fail(std::string("NCCL ") + what + " in " + name + ": " + lib->error_string(nccl_state), false);
    if (stream_state != cudaSuccess)
      fail(std::string("NCCL ") + what + " in " + name + ": " + cudaGetErrorString(stream_state), false);
  }
  void make_stream() {
    if (cudaSetDevice(pool->device()) != cudaSuccess ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreateWithFlags(&queued, cudaEventDisableTiming) != cudaSuccess)
      fail("cannot make a CUDA stream on device " + std::to_string(pool->device()) + " for " + name, false);
  }
  // The communicator's stream (non-blocking: it does not wait for the legacy default
  // stream by itself) waits for the kernels queued before on the legacy stream, the
  // backend's: their results are the collective's input, and a pool block a buffer of
  // the collective reuses may still be read by one of them.
  void after_kernels() {
    if (cudaEventRecord(queued, cudaStreamLegacy) != cudaSuccess ||
        cudaStreamWaitEvent(stream, queued, 0) != cudaSuccess)
      fail("cannot order " + name + "'s stream after the kernels queued before it", false);
  }
  void check_counts(size_t send, std::span<const int64_t> send_counts, size_t recv,
                    std::span<const int64_t> recv_counts) const {
    const auto n = static_cast<size_t>(size);
    int64_t send_total = 0, recv_total = 0;
    for (size_t r = 0; r < n && r < send_counts.size(); ++r) send_total += send_counts[r];
    for (size_t r = 0; r < n && r < recv_counts.size(); ++r) recv_total += recv_counts[r];
    if (send_counts.size() != n || recv_counts.size() != n || send_total != static_cast<int64_t>(send) ||
        recv_total != static_cast<int64_t>(recv))
      throw std::invalid_argument("all_to_all_v in " + name + ": counts do not match the buffers (" +
                                  std::to_string(send) + " to send, " + std::to_string(recv) + " to receive, " +
                                  std::to_string(n) + " ranks)");
  }
  // send_counts[p] floats from `s` (consecutive, in rank order) to rank p, recv_counts[p]
  // from rank p into `r`: one group of point-to-point calls, waited for.
  void exchange(const float* s, std::span<const int64_t> send_counts, float* r, std::span<const int64_t> recv_counts) {
    check(lib->group_start(), "ncclGroupStart");
    int64_t so = 0, ro = 0;
    for (size_t p = 0; p < static_cast<size_t>(size); ++p) {
      if (send_counts[p] > 0)
        check(lib->send(s + so, static_cast<size_t>(send_counts[p]), ncclFloat, static_cast<int>(p), comm, stream),
              "ncclSend");
      if (recv_counts[p] > 0)
        check(lib->recv(r + ro, static_cast<size_t>(recv_counts[p]), ncclFloat, static_cast<int>(p), comm, stream),
              "ncclRecv");
      so += send_counts[p];
      ro += recv_counts[p];
    }
    check(lib->group_end(), "ncclGroupEnd");
    complete("all_to_all_v");
  }
  DeviceBuffer on_device(const void* host, size_t bytes) {
    DeviceBuffer b(*pool, bytes == 0 ? 4 : bytes);
    if (bytes > 0) b.upload(host, bytes);
    return b;
  }
  // Every rank's `n` floats of `in`, in rank order, into `out` (size * n).
  void gather(const float* in, size_t n, float* out, const char* what) {
    DeviceBuffer d_in = on_device(in, n * sizeof(float)), d_out(*pool, std::max<size_t>(4, n * size * sizeof(float)));
    after_kernels();
    check(lib->all_gather(d_in.data(), d_out.data(), n, ncclFloat, comm, stream), what);
    complete(what);
    d_out.download(out, n * static_cast<size_t>(size) * sizeof(float));
  }
};

NcclCommunicator::NcclCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

NcclCommunicator::NcclCommunicator(executor::Communicator& bootstrap, DevicePool& pool, double timeout_s)
    : impl_(std::make_unique<Impl>(pool, timeout_s)) {
  Impl& I = *impl_;
  // Loading NCCL and making the id fail alike on every rank, never leaving one waiting.
  ncclUniqueId id{};
  std::string error;
  try {
    I.lib = &detail::nccl();
    if (bootstrap.rank() == 0) I.check(I.lib->get_unique_id(&id), "ncclGetUniqueId");
  } catch (const std::exception& e) {
    error = e.what();
  }
  executor::raise_on_every_rank(bootstrap, error);
  const std::span<const std::byte> id_bytes = std::as_bytes(std::span<const ncclUniqueId>(&id, 1));
  const auto ids = bootstrap.all_gather_bytes(bootstrap.rank() == 0 ? id_bytes : std::span<const std::byte>{});
  if (ids.at(0).size() != sizeof id) throw CudaError("NCCL: rank 0 sent a unique id of the wrong size");
  std::memcpy(&id, ids[0].data(), sizeof id);
  I.rank = bootstrap.rank();
  I.size = bootstrap.size();
  I.make_stream();
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // joined below against the deadline
  I.check(I.lib->init_rank_config(&I.comm, I.size, id, I.rank, &config), "ncclCommInitRankConfig");
  I.ready(I.comm, "ncclCommInitRankConfig");
}

NcclCommunicator::~NcclCommunicator() = default;

int NcclCommunicator::rank() const { return impl_->rank; }
int NcclCommunicator::size() const { return impl_->size; }
void NcclCommunicator::set_name(const std::string& name) { impl_->name = name; }

void NcclCommunicator::all_reduce_sum(std::span<float> data) {
  Impl& I = *impl_;
  I.guard();
  if (I.size == 1 || data.empty()) return;
  std::vector<float> all(data.size() * static_cast<size_t>(I.size));
  I.gather(data.data(), data.size(), all.data(), "all_reduce_sum");
  for (size_t i = 0; i < data.size(); ++i) {  // rank order, as MpiCommunicator sums
    float s = all[i];
    for (int r = 1; r < I.size; ++r) s += all[static_cast<size_t>(r) * data.size() + i];
    data[i] = s;
  }
}

void NcclCommunicator::all_gather(std::span<const float> in, std::span<float> out) {
  Impl& I = *impl_;
  I.guard();
  if (out.size() != in.size() * static_cast<size_t>(I.size))
    throw std::invalid_argument("all_gather in " + I.name + ": out has " + std::to_string(out.size()) +
                                " floats, needs " + std::to_string(I.size) + " x " + std::to_string(in.size()));
  if (in.empty()) return;
  I.gather(in.data(), in.size(), out.data(), "all_gather");
}

void NcclCommunicator::reduce_scatter_sum(std::span<const float> in, std::span<float> out) {
  Impl& I = *impl_;
  I.guard();
  if (in.size() != out.size() * static_cast<size_t>(I.size))
    throw std::invalid_argument("reduce_scatter_sum in " + I.name + ": in has " + std::to_string(in.size()) +
                                " floats, needs " + std::to_string(I.size) + " x " + std::to_string(out.size()));
  // Block r of every rank to rank r (all-to-all), summed there in rank order.
  std::vector<float> blocks(in.size());
  const std::vector<int64_t> counts(static_cast<size_t>(I.size), static_cast<int64_t>(out.size()));
  all_to_all_v(in, counts, blocks, counts);
  for (size_t i = 0; i < out.size(); ++i) {
    float s = blocks[i];
    for (int r = 1; r < I.size; ++r) s += blocks[static_cast<size_t>(r) * out.size() + i];
    out[i] = s;
  }
}

void NcclCommunicator::all_to_all_v(std::span<const float> send, std::span<const int64_t> send_counts,
                                    std::span<float> recv, std::span<const int64_t> recv_counts) {
  Impl& I = *impl_;
  I.guard();
  I.check_counts(send.size(), send_counts, recv.size(), recv_counts);
  DeviceBuffer d_send = I.on_device(send.data(), send.size() * sizeof(float)),
               d_recv(*I.pool, std::max<size_t>(4, recv.size() * sizeof(float)));
  I.after_kernels();
  I.exchange(static_cast<const float*>(d_send.data()), send_counts, static_cast<float*>(d_recv.data()), recv_counts);
  if (!recv.empty()) d_recv.download(recv.data(), recv.size() * sizeof(float));
}

void NcclCommunicator::send(std::span<const float> data, int dest) {
  Impl& I = *impl_;
  I.guard();
  if (data.empty()) return;
  DeviceBuffer d = I.on_device(data.data(), data.size() * sizeof(float));
  I.check(I.lib->send(d.data(), data.size(), ncclFloat, dest, I.comm, I.stream), "ncclSend");
  I.complete("send");
}

void NcclCommunicator::recv(std::span<float> data, int source) {
  Impl& I = *impl_;
  I.guard();
  if (data.empty()) return;
  DeviceBuffer d(*I.pool, data.size() * sizeof(float));
  I.after_kernels();  // d may be a pool block a queued kernel still reads
  I.check(I.lib->recv(d.data(), data.size(), ncclFloat, source, I.comm, I.stream), "ncclRecv");
  I.complete("recv");
  d.download(data.data(), data.size() * sizeof(float));
}

namespace {
// The CUDA backend's device copy of `v` (its values where the kernels left them), or
// null where they are on the host only.
const DeviceBuffer* device_copy(const executor::TensorValues& v) {
  const auto* c = dynamic_cast<const staging::CudaValues*>(v.device());
  return c && c->buffer.bytes() >= v.size() * sizeof(float) ? &c->buffer : nullptr;
}
// `n` floats of `b` as a tensor's values, on the device only.
executor::TensorValues device_values(DeviceBuffer b, size_t n) {
  return staging::result({static_cast<int64_t>(n)}, std::move(b)).data;
}
}  // namespace

void NcclCommunicator::all_reduce_sum(executor::TensorValues& data) {
  Impl& I = *impl_;
  I.guard();
  if (data.empty()) return;
  // One rank too (the forward calls it only over several; a one-rank world's test does).
  const DeviceBuffer* in = device_copy(data);
  if (!in) return Communicator::all_reduce_sum(data);  // through the host (the span overload)
  const size_t n = data.size();
  DeviceBuffer all(*I.pool, n * static_cast<size_t>(I.size) * sizeof(float)), sum(*I.pool, n * sizeof(float));
  I.after_kernels();
  I.check(I.lib->all_gather(in->data(), all.data(), n, ncclFloat, I.comm, I.stream), "ncclAllGather");
  I.complete("all_reduce_sum");
  sum_blocks_f32(all, static_cast<int64_t>(n), I.size, sum);  // rank order, on the legacy stream
  data = device_values(std::move(sum), n);
}

void NcclCommunicator::all_to_all_v(const executor::TensorValues& send, std::span<const int64_t> send_counts,
                                    executor::TensorValues& recv, std::span<const int64_t> recv_counts) {
  Impl& I = *impl_;
  I.guard();
  const DeviceBuffer* s = device_copy(send);
  if (!s) return Communicator::all_to_all_v(send, send_counts, recv, recv_counts);
  I.check_counts(send.size(), send_counts, recv.size(), recv_counts);
  const size_t n = recv.size();
  DeviceBuffer r(*I.pool, std::max<size_t>(4, n * sizeof(float)));
  I.after_kernels();
  I.exchange(static_cast<const float*>(s->data()), send_counts, static_cast<float*>(r.data()), recv_counts);
  recv = device_values(std::move(r), n);
}

void NcclCommunicator::send(const executor::TensorValues& data, int dest) {
  Impl& I = *impl_;
  I.guard();
  const DeviceBuffer* d = device_copy(data);
  if (!d || data.empty()) return Communicator::send(data, dest);
  I.after_kernels();
  I.check(I.lib->send(d->data(), data.size(), ncclFloat, dest, I.comm, I.stream), "ncclSend");
  I.complete("send");
}

// Always into the device: the next kernel reads the message where it arrived.
void NcclCommunicator::recv(executor::TensorValues& data, int source) {
  Impl& I = *impl_;
  I.guard();
  if (data.empty()) return;
  const size_t n = data.size();
  DeviceBuffer d(*I.pool, n * sizeof(float));
  I.after_kernels();
  I.check(I.lib->recv(d.data(), n, ncclFloat, source, I.comm, I.stream), "ncclRecv");
  I.complete("recv");
  data = device_values(std::move(d), n);
}

void NcclCommunicator::barrier() {
  Impl& I = *impl_;
  I.guard();
  DeviceBuffer one(*I.pool, sizeof(float));
  I.after_kernels();
  I.check(I.lib->all_reduce(one.data(), one.data(), 1, ncclFloat, ncclSum, I.comm, I.stream), "ncclAllReduce");
  I.complete("barrier");
}

std::unique_ptr<executor::Communicator> NcclCommunicator::split(int color, int key) {
  Impl& I = *impl_;
  I.guard();
  if (color < 0) throw std::invalid_argument("split of " + I.name + ": color " + std::to_string(color) + " < 0");
  auto child = std::make_unique<Impl>(*I.pool, I.timeout_s);
  child->lib = I.lib;
  child->name = "a group split from " + I.name;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  try {
    I.check(I.lib->split(I.comm, color, key, &child->comm, &config), "ncclCommSplit");
    I.ready(I.comm, "ncclCommSplit");
    child->ready(child->comm, "ncclCommSplit");
    child->check(I.lib->user_rank(child->comm, &child->rank), "ncclCommUserRank");
    child->check(I.lib->count(child->comm, &child->size), "ncclCommCount");
    child->make_stream();
  } catch (...) {
    if (child->comm) I.lib->abort(child->comm);  // half-made: never destroyed (that could wait)
    child->comm = nullptr;
    throw;
  }
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(std::move(child)));
}

std::vector<std::vector<std::byte>> NcclCommunicator::all_gather_bytes(std::span<const std::byte> data) {
  Impl& I = *impl_;
  I.guard();
  const auto n = static_cast<size_t>(I.size);
  // Sizes first (int64), then every rank's bytes padded to the largest.
  const auto mine = static_cast<int64_t>(data.size());
  DeviceBuffer d_size = I.on_device(&mine, sizeof mine), d_sizes(*I.pool, n * sizeof(int64_t));
  I.check(I.lib->all_gather(d_size.data(), d_sizes.data(), 1, ncclInt64, I.comm, I.stream), "ncclAllGather");
  I.complete("all_gather_bytes (sizes)");
  std::vector<int64_t> sizes(n);
  d_sizes.download(sizes.data(), n * sizeof(int64_t));
  int64_t most = 0;
  for (int64_t s : sizes) most = std::max(most, s);
  std::vector<std::vector<std::byte>> out(n);
  if (most == 0) return out;
  std::vector<std::byte> padded(static_cast<size_t>(most));
  std::copy(data.begin(), data.end(), padded.begin());
  DeviceBuffer d_in = I.on_device(padded.data(), padded.size()), d_all(*I.pool, n * padded.size());
  I.check(I.lib->all_gather(d_in.data(), d_all.data(), padded.size(), ncclUint8, I.comm, I.stream), "ncclAllGather");
  I.complete("all_gather_bytes");
  std::vector<std::byte> all(n * padded.size());
  d_all.download(all.data(), all.size());
  for (size_t r = 0; r < n; ++r)
    out[r].assign(all.begin() + static_cast<std::ptrdiff_t>(r * padded.size()),
                  all.begin() + static_cast<std::ptrdiff_t>(r * padded.size() + static_cast<size_t>(sizes[r])));
  return out;
}

}  // namespace dayzero::cuda
