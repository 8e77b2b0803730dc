#include "executor/mpi_communicator.h"

#include "executor/measurements.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace dayzero::executor {

namespace {
// Tags keep the collectives' messages apart from send / recv's on the same
// communicator; within each, MPI's non-overtaking order pairs the k-th message
// between two ranks with the k-th receive (every rank makes the same calls in the
// same order).
constexpr int kPointToPointTag = 0, kCollectiveTag = 1;

// Set when a transfer timed out or failed: its requests may still point at buffers
// the caller has freed, so no MPI call but MPI_Abort may follow (in any communicator).
bool g_failed = false;

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
                                " elements exceed one MPI message");
  return static_cast<int>(n);
}
void sizes(bool ok, const char* what, const std::string& detail) {
  if (!ok) throw std::invalid_argument(std::string("MpiCommunicator::") + what + ": " + detail);
}
std::string seconds(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}
std::string rank_list(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

// What one call sends to and receives from one rank (a count of -1: no message).
struct Part {
  const void* send = nullptr;
  int send_count = -1;
  void* recv = nullptr;
  int recv_count = -1;
};
// One posted request: with which rank (of the communicator), which way, how much.
struct Waited {
  int rank;
  bool receiving;  // else sending
  int count;       // elements expected (receives)
};
// A communicator's buffers for its calls, kept between them: no allocation per call.
struct Scratch {
  std::vector<Part> parts;  // by rank
  std::vector<MPI_Request> requests;
  std::vector<Waited> who;  // by request
  std::vector<int> done_at;
  std::vector<MPI_Status> statuses;
};
}  // namespace

struct MpiCommunicator::Handle {
  MPI_Comm comm = MPI_COMM_WORLD;
  bool owned = false;  // from MPI_Comm_split: freed with the communicator
  Scratch scratch;
};

// One call's messages: parts[r] for rank r. In a collective this rank's own part
// is copied, not sent.
struct MpiCommunicator::Exchange {
  const char* op;
  MPI_Datatype type;
  size_t element_bytes;
  bool collective;
  std::vector<Part>& parts;  // the communicator's scratch, one per rank, reset
  Exchange(Handle& h, const char* op_name, MPI_Datatype t, size_t bytes, bool coll, int ranks)
      : op(op_name), type(t), element_bytes(bytes), collective(coll), parts(h.scratch.parts) {
    parts.assign(static_cast<size_t>(ranks), Part{});
  }
};

MpiCommunicator::MpiCommunicator(double collective_timeout_s)
    : comm_(std::make_unique<Handle>()), timeout_s_(collective_timeout_s) {
  if (const std::string why = collective_timeout_problem(collective_timeout_s); !why.empty())
    throw std::invalid_argument("collective timeout " + why);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    const int64_t before = rss_current_bytes();
    check(MPI_Init(nullptr, nullptr), "MPI_Init");
    library_bytes_ = std::max<int64_t>(0, rss_current_bytes() - before);
    owns_init_ = true;
  }
  // Errors come back as codes (turned into exceptions, then MPI_Abort by the caller).
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  ranks_in_world();
  set_name("the world");
}

MpiCommunicator::MpiCommunicator(std::unique_ptr<Handle> comm, double collective_timeout_s)
    : comm_(std::move(comm)), timeout_s_(collective_timeout_s) {
  MPI_Comm_set_errhandler(comm_->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_->comm, &rank_);
  MPI_Comm_size(comm_->comm, &size_);
  ranks_in_world();
  set_name("a group");
}

MpiCommunicator::~MpiCommunicator() {
  if (g_failed) return;  // peers may be gone: freeing or finalizing could wait for them
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_->owned && !finalized) MPI_Comm_free(&comm_->comm);
  if (!owns_init_) return;
  if (!finalized) MPI_Finalize();
}

void MpiCommunicator::ranks_in_world() {
  std::vector<int> mine(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) mine[static_cast<size_t>(r)] = r;
  world_ranks_ = mine;
  if (comm_->comm == MPI_COMM_WORLD) return;
  MPI_Group group, world;
  check(MPI_Comm_group(comm_->comm, &group), "MPI_Comm_group");
  check(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
  check(MPI_Group_translate_ranks(group, size_, mine.data(), world, world_ranks_.data()), "MPI_Group_translate_ranks");
  MPI_Group_free(&group);
  MPI_Group_free(&world);
}

void MpiCommunicator::set_name(const std::string& name) {
  group_text_ = name;
  if (comm_->comm == MPI_COMM_WORLD) return;
  group_text_ += " (world ranks ";
  for (size_t i = 0; i < world_ranks_.size(); ++i) group_text_ += (i ? ", " : "") + std::to_string(world_ranks_[i]);
  group_text_ += ")";
}

namespace {
// Completes `requests` by `timeout_s` (poll_until). Throws: CollectiveTimeout
// naming the world ranks still missing, std::runtime_error for an MPI error,
// std::invalid_argument for a message of another size than expected.
void finish(Scratch& scratch, MPI_Datatype type, const char* op, double timeout_s, const std::string& group,
            const std::vector<int>& world_ranks) {
  auto world = [&](int r) { return world_ranks[static_cast<size_t>(r)]; };
  auto& [parts, requests, who, done_at, statuses] = scratch;
  const int n = static_cast<int>(requests.size());
  done_at.resize(requests.size());
  statuses.resize(requests.size());
  int left = n, failed_rc = MPI_SUCCESS, failed_rank = -1;
  std::string wrong_size;
  auto done = [&] {
    int out = 0;
    const int rc = MPI_Testsome(n, requests.data(), &out, done_at.data(), statuses.data());
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
      failed_rc = rc;
      return true;
    }
    if (out == MPI_UNDEFINED) return true;  // no active request left
    for (int i = 0; i < out; ++i) {
      const Waited& w = who[static_cast<size_t>(done_at[static_cast<size_t>(i)])];
      const MPI_Status& st = statuses[static_cast<size_t>(i)];
      if (rc == MPI_ERR_IN_STATUS && st.MPI_ERROR != MPI_SUCCESS && st.MPI_ERROR != MPI_ERR_PENDING) {
        failed_rc = st.MPI_ERROR;
        failed_rank = world(w.rank);
        return true;
      }
      int got = 0;
      if (w.receiving && (MPI_Get_count(&st, type, &got), got != w.count))
        wrong_size = "got " + std::to_string(got) + " elements from rank " + std::to_string(world(w.rank)) +
                     ", expected " + std::to_string(w.count);
    }
    left -= out;
    return left == 0;
  };
  const bool finished = poll_until(done, timeout_s);
  const std::string what = std::string(op) + " on " + group;
  if (failed_rc != MPI_SUCCESS) {
    g_failed = true;
    check(failed_rc, (what + (failed_rank >= 0 ? " with rank " + std::to_string(failed_rank) : "")).c_str());
  }
  if (!finished) {
    g_failed = true;
    std::vector<int> from, to;  // world ranks whose messages are missing
    for (size_t k = 0; k < requests.size(); ++k)
      if (requests[k] != MPI_REQUEST_NULL) (who[k].receiving ? from : to).push_back(world(who[k].rank));
    throw CollectiveTimeout(what + " timed out after " + seconds(timeout_s) + " s waiting for " +
                            (from.empty() ? rank_list(to) + " to receive" : rank_list(from)) +
                            " (hung, dead, or itself waiting)");
  }
  sizes(wrong_size.empty(), op, wrong_size);
}
}  // namespace

void MpiCommunicator::run(Exchange& x) {
  if (g_failed)
    throw std::runtime_error(std::string(x.op) + " on " + group_text_ +
                             ": an earlier transfer failed or timed out; this rank must stop");
  if (x.collective) {  // checked before posting: a throw leaves no request behind
    const auto& self = x.parts[static_cast<size_t>(rank_)];
    sizes(self.send_count == self.recv_count, x.op,
          "sends " + std::to_string(self.send_count) + " elements to itself but receives " +
              std::to_string(self.recv_count));
  }
  auto& requests = comm_->scratch.requests;
  auto& who = comm_->scratch.who;
  requests.clear();
  who.clear();
  auto posted = [&](int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    g_failed = true;
    check(rc, what);
  };
  const int tag = x.collective ? kCollectiveTag : kPointToPointTag;
  for (int r = 0; r < size_; ++r) {  // receives first: no message waits unexpected
    const auto& p = x.parts[static_cast<size_t>(r)];
    if (p.recv_count < 0 || (x.collective && r == rank_)) continue;
    requests.emplace_back();
    posted(MPI_Irecv(p.recv, p.recv_count, x.type, r, tag, comm_->comm, &requests.back()), "MPI_Irecv");
    who.push_back({r, true, p.recv_count});
  }
  for (int r = 0; r < size_; ++r) {
    const auto& p = x.parts[static_cast<size_t>(r)];
    if (p.send_count < 0 || (x.collective && r == rank_)) continue;
    requests.emplace_back();
    posted(MPI_Isend(p.send, p.send_count, x.type, r, tag, comm_->comm, &requests.back()), "MPI_Isend");
    who.push_back({r, false, p.send_count});
  }
  if (x.collective) {
    const auto& self = x.parts[static_cast<size_t>(rank_)];
    if (self.send_count > 0) std::memcpy(self.recv, self.send, static_cast<size_t>(self.send_count) * x.element_bytes);
  }
  finish(comm_->scratch, x.type, x.op, timeout_s_, group_text_, world_ranks_);
}

void MpiCommunicator::all_gather(const char* op, std::span<const float> in, std::span<float> out) {
  sizes(out.size() == in.size() * static_cast<size_t>(size_), op,
        "out has " + std::to_string(out.size()) + " floats, needs " + std::to_string(size_) + " x " +
            std::to_string(in.size()));
  const int n = count_of(in.size(), op);
  Exchange x(*comm_, op, MPI_FLOAT, sizeof(float), true, size_);
  for (int r = 0; r < size_; ++r)
    x.parts[static_cast<size_t>(r)] = {in.data(), n, out.data() + in.size() * static_cast<size_t>(r), n};
  run(x);
}

void MpiCommunicator::all_gather(std::span<const float> in, std::span<float> out) { all_gather("all_gather", in, out); }

// Deterministic: every rank gathers all buffers and sums them in rank order.
void MpiCommunicator::all_reduce_sum(std::span<float> data) {
  if (size_ == 1) return;
  std::vector<float> all(data.size() * static_cast<size_t>(size_));
  all_gather("all_reduce_sum", data, all);
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
  Exchange x(*comm_, "reduce_scatter_sum", MPI_FLOAT, sizeof(float), true, size_);
  for (int r = 0; r < size_; ++r) {
    const size_t at = out.size() * static_cast<size_t>(r);
    x.parts[static_cast<size_t>(r)] = {in.data() + at, n, blocks.data() + at, n};
  }
  run(x);
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
  Exchange x(*comm_, "all_to_all_v", MPI_FLOAT, sizeof(float), true, size_);
  size_t s_total = 0, r_total = 0;
  for (size_t r = 0; r < world; ++r) {
    sizes(send_counts[r] >= 0 && recv_counts[r] >= 0, "all_to_all_v", "a count is negative");
    x.parts[r] = {send.data() + s_total, count_of(static_cast<size_t>(send_counts[r]), "all_to_all_v"),
                  recv.data() + r_total, count_of(static_cast<size_t>(recv_counts[r]), "all_to_all_v")};
    s_total += static_cast<size_t>(send_counts[r]);
    r_total += static_cast<size_t>(recv_counts[r]);
  }
  sizes(s_total <= send.size() && r_total <= recv.size(), "all_to_all_v", "counts exceed the buffers");
  run(x);
}

void MpiCommunicator::send(std::span<const float> data, int dest) {
  sizes(dest >= 0 && dest < size_, "send", "rank " + std::to_string(dest) + " does not exist");
  Exchange x(*comm_, "send", MPI_FLOAT, sizeof(float), false, size_);
  x.parts[static_cast<size_t>(dest)].send = data.data();
  x.parts[static_cast<size_t>(dest)].send_count = count_of(data.size(), "send");
  run(x);
}

void MpiCommunicator::recv(std::span<float> data, int source) {
  sizes(source >= 0 && source < size_, "recv", "rank " + std::to_string(source) + " does not exist");
  Exchange x(*comm_, "recv", MPI_FLOAT, sizeof(float), false, size_);
  x.parts[static_cast<size_t>(source)].recv = data.data();
  x.parts[static_cast<size_t>(source)].recv_count = count_of(data.size(), "recv");
  run(x);
}

// An empty message to and from every peer: no rank leaves before all have come.
void MpiCommunicator::barrier() {
  Exchange x(*comm_, "barrier", MPI_BYTE, 1, true, size_);
  for (auto& p : x.parts) p = {nullptr, 0, nullptr, 0};
  run(x);
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  if (g_failed) throw std::runtime_error("split: an earlier transfer failed or timed out; this rank must stop");
  auto h = std::make_unique<Handle>();
  check(MPI_Comm_split(comm_->comm, color, key, &h->comm), "MPI_Comm_split");
  h->owned = true;
  return std::unique_ptr<Communicator>(new MpiCommunicator(std::move(h), timeout_s_));
}

// Two exchanges: every rank's size, then the bytes.
std::vector<std::vector<std::byte>> MpiCommunicator::all_gather_bytes(std::span<const std::byte> data) {
  const auto world = static_cast<size_t>(size_);
  const auto mine = static_cast<int64_t>(data.size());
  std::vector<int64_t> counts(world);
  Exchange x(*comm_, "all_gather_bytes", MPI_INT64_T, sizeof(int64_t), true, size_);
  for (size_t r = 0; r < world; ++r) x.parts[r] = {&mine, 1, &counts[r], 1};
  run(x);
  std::vector<std::vector<std::byte>> out(world);
  Exchange y(*comm_, "all_gather_bytes", MPI_BYTE, 1, true, size_);
  for (size_t r = 0; r < world; ++r) {
    sizes(counts[r] >= 0, "all_gather_bytes", "a negative size");
    out[r].resize(static_cast<size_t>(counts[r]));
    y.parts[r] = {data.data(), count_of(data.size(), "all_gather_bytes"), out[r].data(),
                  count_of(out[r].size(), "all_gather_bytes")};
  }
  run(y);
  return out;
}

void MpiCommunicator::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; in case it does
}

}  // namespace dayzero::executor
