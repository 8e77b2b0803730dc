#include "executor/mpi_communicator.h"

#include <mpi.h>

#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <vector>

namespace dayzero::executor {

namespace {
void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string("MPI ") + what + " failed: " + std::string(text, static_cast<size_t>(len)));
}
int count_of(size_t n, const char* what) {
  if (n > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw std::invalid_argument(std::string("MpiCommunicator::") + what + ": " + std::to_string(n) +
                                " floats exceed one MPI message");
  return static_cast<int>(n);
}
void sizes(bool ok, const char* what, const std::string& detail) {
  if (!ok) throw std::invalid_argument(std::string("MpiCommunicator::") + what + ": " + detail);
}
}  // namespace

struct MpiCommunicator::Handle {
  MPI_Comm comm = MPI_COMM_WORLD;
  bool owned = false;  // from MPI_Comm_split: freed with the communicator
};

MpiCommunicator::MpiCommunicator() : comm_(std::make_unique<Handle>()) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    check(MPI_Init(nullptr, nullptr), "MPI_Init");
    owns_init_ = true;
  }
  // Errors come back as codes (turned into exceptions, then MPI_Abort by the caller).
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiCommunicator::MpiCommunicator(std::unique_ptr<Handle> comm) : comm_(std::move(comm)) {
  MPI_Comm_set_errhandler(comm_->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_->comm, &rank_);
  MPI_Comm_size(comm_->comm, &size_);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_->owned && !finalized) MPI_Comm_free(&comm_->comm);
  if (!owns_init_) return;
  if (!finalized) MPI_Finalize();
}

void MpiCommunicator::all_gather(std::span<const float> in, std::span<float> out) {
  sizes(out.size() == in.size() * static_cast<size_t>(size_), "all_gather",
        "out has " + std::to_string(out.size()) + " floats, needs " + std::to_string(size_) + " x " +
            std::to_string(in.size()));
  const int n = count_of(in.size(), "all_gather");
  check(MPI_Allgather(in.data(), n, MPI_FLOAT, out.data(), n, MPI_FLOAT, comm_->comm), "MPI_Allgather");
}

// Deterministic: every rank gathers all buffers and sums them in rank order.
void MpiCommunicator::all_reduce_sum(std::span<float> data) {
  if (size_ == 1) return;
  std::vector<float> all(data.size() * static_cast<size_t>(size_));
  all_gather(data, all);
  for (size_t i = 0; i < data.size(); ++i) {
    float s = all[i];
    for (int r = 1; r < size_; ++r) s += all[static_cast<size_t>(r) * data.size() + i];
    data[i] = s;
  }
}

// Deterministic: block r of every rank goes to rank r (all-to-all), summed there in rank order.
void MpiCommunicator::reduce_scatter_sum(std::span<const float> in, std::span<float> out) {
  sizes(in.size() == out.size() * static_cast<size_t>(size_), "reduce_scatter_sum",
        "in has " + std::to_string(in.size()) + " floats, needs " + std::to_string(size_) + " x " +
            std::to_string(out.size()));
  const int n = count_of(out.size(), "reduce_scatter_sum");
  std::vector<float> blocks(in.size());
  check(MPI_Alltoall(in.data(), n, MPI_FLOAT, blocks.data(), n, MPI_FLOAT, comm_->comm), "MPI_Alltoall");
  for (size_t i = 0; i < out.size(); ++i) {
    float s = blocks[i];
    for (int r = 1; r < size_; ++r) s += blocks[static_cast<size_t>(r) * out.size() + i];
    out[i] = s;
  }
}

void MpiCommunicator::all_to_all_v(std::span<const float> send, std::span<const int64_t> send_counts,
                                   std::span<float> recv, std::span<const int64_t> recv_counts) {
  const auto world = static_cast<size_t>(size_);
  sizes(send_counts.size() == world && recv_counts.size() == world, "all_to_all_v",
        "needs one count per rank (" + std::to_string(size_) + ")");
  std::vector<int> sc(world), sd(world), rc(world), rd(world);
  size_t s_total = 0, r_total = 0;
  for (size_t r = 0; r < world; ++r) {
    sd[r] = count_of(s_total, "all_to_all_v");
    rd[r] = count_of(r_total, "all_to_all_v");
    sc[r] = count_of(static_cast<size_t>(send_counts[r]), "all_to_all_v");
    rc[r] = count_of(static_cast<size_t>(recv_counts[r]), "all_to_all_v");
    s_total += static_cast<size_t>(send_counts[r]);
    r_total += static_cast<size_t>(recv_counts[r]);
  }
  sizes(s_total <= send.size() && r_total <= recv.size(), "all_to_all_v", "counts exceed the buffers");
  check(MPI_Alltoallv(send.data(), sc.data(), sd.data(), MPI_FLOAT, recv.data(), rc.data(), rd.data(), MPI_FLOAT,
                      comm_->comm),
        "MPI_Alltoallv");
}

void MpiCommunicator::send(std::span<const float> data, int dest) {
  check(MPI_Send(data.data(), count_of(data.size(), "send"), MPI_FLOAT, dest, 0, comm_->comm), "MPI_Send");
}

void MpiCommunicator::recv(std::span<float> data, int source) {
  MPI_Status status;
  check(MPI_Recv(data.data(), count_of(data.size(), "recv"), MPI_FLOAT, source, 0, comm_->comm, &status), "MPI_Recv");
  int got = 0;
  MPI_Get_count(&status, MPI_FLOAT, &got);
  sizes(static_cast<size_t>(got) == data.size(), "recv",
        "got " + std::to_string(got) + " floats from rank " + std::to_string(source) + ", expected " +
            std::to_string(data.size()));
}

void MpiCommunicator::barrier() { check(MPI_Barrier(comm_->comm), "MPI_Barrier"); }

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  auto h = std::make_unique<Handle>();
  check(MPI_Comm_split(comm_->comm, color, key, &h->comm), "MPI_Comm_split");
  h->owned = true;
  return std::unique_ptr<Communicator>(new MpiCommunicator(std::move(h)));
}

std::vector<std::vector<std::byte>> MpiCommunicator::all_gather_bytes(std::span<const std::byte> data) {
  const int n = count_of(data.size(), "all_gather_bytes");
  std::vector<int> counts(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
  check(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_->comm), "MPI_Allgather");
  size_t total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = count_of(total, "all_gather_bytes");
    total += static_cast<size_t>(counts[r]);
  }
  std::vector<std::byte> all(total);
  check(MPI_Allgatherv(data.data(), n, MPI_BYTE, all.data(), counts.data(), offsets.data(), MPI_BYTE, comm_->comm),
        "MPI_Allgatherv");
  std::vector<std::vector<std::byte>> out;
  for (size_t r = 0; r < counts.size(); ++r)
    out.emplace_back(all.begin() + offsets[r], all.begin() + offsets[r] + counts[r]);
  return out;
}

void MpiCommunicator::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; in case it does
}

}  // namespace dayzero::executor
