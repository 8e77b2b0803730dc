#include "executor/thread_world.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>

namespace dayzero::executor {

namespace {
using Clock = std::chrono::steady_clock;
constexpr auto kSlice = std::chrono::milliseconds(5);  // how often a wait looks for a failed rank
}  // namespace

struct ThreadWorld::Shared {
  int size = 1;
  double timeout_s = 120;
  std::atomic<bool> failed{false};
  std::mutex why_mu;
  std::string why;
  // Point to point: messages by (source, destination) world rank, in order.
  std::mutex mail_mu;
  std::condition_variable mail_cv;
  std::map<std::pair<int, int>, std::deque<std::vector<float>>> mail;

  void fail(const std::string& message) {
    std::lock_guard<std::mutex> lock(why_mu);
    if (!failed.exchange(true)) why = message;
  }
  std::string failure() {
    std::lock_guard<std::mutex> lock(why_mu);
    return why;
  }
  // Waits on `cv` until `done`, a failed rank, or the deadline.
  template <class Done>
  void wait(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Done&& done, const std::string& what) {
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    while (!done()) {
      if (failed) throw AllRanksError(failure());
      if (Clock::now() >= deadline)
        throw CollectiveTimeout(what + " did not complete within " + std::to_string(timeout_s) +
                                " s: a peer thread did not arrive");
      cv.wait_for(lock, kSlice);
    }
  }
};

namespace {

// The ranks of one communicator (the world or a split), and what they post to it.
struct Group {
  std::vector<int> world_ranks;  // by group rank
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  std::vector<const std::byte*> in;    // per group rank: the buffer it posted
  std::vector<size_t> in_bytes;        // its size
  std::vector<const int64_t*> counts;  // all_to_all_v: its send counts
  std::vector<std::pair<int, int>> color_key;
  std::vector<std::shared_ptr<Group>> made;  // split: the groups their leaders made

  explicit Group(std::vector<int> ranks)
      : world_ranks(std::move(ranks)),
        in(world_ranks.size()),
        in_bytes(world_ranks.size()),
        counts(world_ranks.size()),
        color_key(world_ranks.size()),
        made(world_ranks.size()) {}
  int size() const { return static_cast<int>(world_ranks.size()); }
};

class ThreadComm final : public Communicator {
 public:
  ThreadComm(std::shared_ptr<ThreadWorld::Shared> w, std::shared_ptr<Group> g, int rank)
      : w_(std::move(w)), g_(std::move(g)), rank_(rank) {}
  using Communicator::all_reduce_sum, Communicator::all_to_all_v, Communicator::send, Communicator::recv;
  int rank() const override { return rank_; }
  int size() const override { return g_->size(); }
  void set_name(const std::string& name) override { name_ = name; }

  void all_reduce_sum(std::span<float> data) override {
    std::vector<float> sum(data.size());
    exchange("all_reduce_sum", as_bytes(data), nullptr, [&] {
      same_sizes("all_reduce_sum");
      for (size_t i = 0; i < data.size(); ++i) {  // rank order, as MpiCommunicator sums
        float s = floats(0)[i];
        for (int r = 1; r < size(); ++r) s += floats(r)[i];
        sum[i] = s;
      }
    });
    std::copy(sum.begin(), sum.end(), data.begin());  // after every rank has read `data`
  }
  void all_gather(std::span<const float> in, std::span<float> out) override {
    if (out.size() != in.size() * static_cast<size_t>(size()))
      throw std::invalid_argument("all_gather in " + name_ + ": out has " + std::to_string(out.size()) +
                                  " floats, needs " + std::to_string(size()) + " x " + std::to_string(in.size()));
    exchange("all_gather", std::as_bytes(in), nullptr, [&] {
      same_sizes("all_gather");
      for (int r = 0; r < size(); ++r) std::copy_n(floats(r), in.size(), out.begin() + r * in.size());
    });
  }
  void reduce_scatter_sum(std::span<const float> in, std::span<float> out) override {
    if (in.size() != out.size() * static_cast<size_t>(size()))
      throw std::invalid_argument("reduce_scatter_sum in " + name_ + ": in has " + std::to_string(in.size()) +
                                  " floats, needs " + std::to_string(size()) + " x " + std::to_string(out.size()));
    exchange("reduce_scatter_sum", std::as_bytes(in), nullptr, [&] {
      same_sizes("reduce_scatter_sum");
      const size_t at = out.size() * static_cast<size_t>(rank_);
      for (size_t i = 0; i < out.size(); ++i) {
        float s = floats(0)[at + i];
        for (int r = 1; r < size(); ++r) s += floats(r)[at + i];
        out[i] = s;
      }
    });
  }
  void all_to_all_v(std::span<const float> send, std::span<const int64_t> send_counts, std::span<float> recv,
                    std::span<const int64_t> recv_counts) override {
    const auto n = static_cast<size_t>(size());
    if (send_counts.size() != n || recv_counts.size() != n ||
        std::accumulate(send_counts.begin(), send_counts.end(), int64_t{0}) != static_cast<int64_t>(send.size()) ||
        std::accumulate(recv_counts.begin(), recv_counts.end(), int64_t{0}) != static_cast<int64_t>(recv.size()))
      throw std::invalid_argument("all_to_all_v in " + name_ + ": counts do not match the buffers");
    exchange("all_to_all_v", std::as_bytes(send), send_counts.data(), [&] {
      int64_t at = 0;
      for (size_t src = 0; src < n; ++src) {
        const int64_t* theirs = g_->counts[src];
        const int64_t from = std::accumulate(theirs, theirs + rank_, int64_t{0}), count = theirs[rank_];
        if (count != recv_counts[src])
          throw std::logic_error("all_to_all_v in " + name_ + ": rank " + std::to_string(src) + " sends " +
                                 std::to_string(count) + " floats to rank " + std::to_string(rank_) +
                                 ", which expects " + std::to_string(recv_counts[src]));
        std::copy_n(floats(static_cast<int>(src)) + from, count, recv.begin() + at);
        at += count;
      }
    });
  }
  void send(std::span<const float> data, int dest) override {
    const std::pair<int, int> key{g_->world_ranks.at(static_cast<size_t>(rank_)),
                                  g_->world_ranks.at(static_cast<size_t>(dest))};
    {
      std::lock_guard<std::mutex> lock(w_->mail_mu);
      w_->mail[key].emplace_back(data.begin(), data.end());
    }
    w_->mail_cv.notify_all();
  }
  void recv(std::span<float> data, int source) override {
    const std::pair<int, int> key{g_->world_ranks.at(static_cast<size_t>(source)),
                                  g_->world_ranks.at(static_cast<size_t>(rank_))};
    std::unique_lock<std::mutex> lock(w_->mail_mu);
    auto& box = w_->mail[key];
    w_->wait(
        lock, w_->mail_cv, [&] { return !box.empty(); }, "recv from rank " + std::to_string(source) + " in " + name_);
    if (box.front().size() != data.size())
      throw std::invalid_argument("recv in " + name_ + ": " + std::to_string(box.front().size()) + " floats sent, " +
                                  std::to_string(data.size()) + " expected");
    std::copy(box.front().begin(), box.front().end(), data.begin());
    box.pop_front();
  }
  void barrier() override { wait_all("barrier"); }
  std::unique_ptr<Communicator> split(int color, int key) override {
    {
      std::lock_guard<std::mutex> lock(g_->mu);
      g_->color_key[static_cast<size_t>(rank_)] = {color, key};
    }
    wait_all("split");
    std::vector<int> members;  // group ranks of my color, by key then rank
    for (int r = 0; r < size(); ++r)
      if (g_->color_key[static_cast<size_t>(r)].first == color) members.push_back(r);
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
      return g_->color_key[static_cast<size_t>(a)].second < g_->color_key[static_cast<size_t>(b)].second;
    });
    const int leader = *std::min_element(members.begin(), members.end());
    if (rank_ == leader) {
      std::vector<int> world;
      for (int r : members) world.push_back(g_->world_ranks[static_cast<size_t>(r)]);
      std::lock_guard<std::mutex> lock(g_->mu);
      g_->made[static_cast<size_t>(rank_)] = std::make_shared<Group>(std::move(world));
    }
    wait_all("split");
    std::shared_ptr<Group> mine = g_->made[static_cast<size_t>(leader)];
    const int my_rank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
    wait_all("split");  // everyone has taken its group before a later split reuses the slots
    return std::make_unique<ThreadComm>(w_, std::move(mine), my_rank);
  }
  std::vector<std::vector<std::byte>> all_gather_bytes(std::span<const std::byte> data) override {
    std::vector<std::vector<std::byte>> out(static_cast<size_t>(size()));
    exchange("all_gather_bytes", data, nullptr, [&] {
      for (int r = 0; r < size(); ++r)
        out[static_cast<size_t>(r)].assign(g_->in[static_cast<size_t>(r)],
                                           g_->in[static_cast<size_t>(r)] + g_->in_bytes[static_cast<size_t>(r)]);
    });
    return out;
  }

 private:
  static std::span<const std::byte> as_bytes(std::span<float> d) { return std::as_bytes(std::span<const float>(d)); }
  const float* floats(int r) const { return reinterpret_cast<const float*>(g_->in[static_cast<size_t>(r)]); }
  void same_sizes(const char* what) const {
    for (int r = 0; r < size(); ++r)
      if (g_->in_bytes[static_cast<size_t>(r)] != g_->in_bytes[static_cast<size_t>(rank_)])
        throw std::invalid_argument(std::string(what) + " in " + name_ + ": rank " + std::to_string(r) + " gives " +
                                    std::to_string(g_->in_bytes[static_cast<size_t>(r)] / 4) + " floats, rank " +
                                    std::to_string(rank_) + " " +
                                    std::to_string(g_->in_bytes[static_cast<size_t>(rank_)] / 4));
  }
  // Every rank of the group arrives before any leaves (a generation-counted barrier).
  void wait_all(const std::string& what) {
    std::unique_lock<std::mutex> lock(g_->mu);
    const uint64_t generation = g_->generation;
    if (++g_->arrived == size()) {
      g_->arrived = 0;
      ++g_->generation;
      g_->cv.notify_all();
      return;
    }
    w_->wait(
        lock, g_->cv, [&] { return g_->generation != generation; }, what + " in " + name_);
  }
  // Posts this rank's buffer, waits for every rank's, reads them, and waits again so
  // that no rank's buffer goes (or is written) while another still reads it.
  template <class Read>
  void exchange(const std::string& what, std::span<const std::byte> in, const int64_t* counts, Read&& read) {
    {
      std::lock_guard<std::mutex> lock(g_->mu);
      g_->in[static_cast<size_t>(rank_)] = in.data();
      g_->in_bytes[static_cast<size_t>(rank_)] = in.size();
      g_->counts[static_cast<size_t>(rank_)] = counts;
    }
    wait_all(what);
    read();
    wait_all(what);
  }

  std::shared_ptr<ThreadWorld::Shared> w_;
  std::shared_ptr<Group> g_;
  int rank_ = 0;
  std::string name_ = "a thread world";
};

}  // namespace

ThreadWorld::ThreadWorld(int size, double timeout_s) : world_(std::make_shared<Shared>()) {
  if (size < 1) throw std::invalid_argument("ThreadWorld: " + std::to_string(size) + " ranks");
  world_->size = size;
  world_->timeout_s = timeout_s;
}

ThreadWorld::~ThreadWorld() = default;

int ThreadWorld::size() const { return world_->size; }

void ThreadWorld::run(const std::function<void(Communicator&)>& fn) {
  world_->failed = false;  // a new run: an earlier one's failure is not this one's
  world_->mail.clear();
  std::vector<int> all(static_cast<size_t>(world_->size));
  std::iota(all.begin(), all.end(), 0);
  const auto world_group = std::make_shared<Group>(all);
  std::vector<std::exception_ptr> errors(all.size());
  std::vector<std::thread> threads;
  for (int r = 0; r < world_->size; ++r)
    threads.emplace_back([&, r] {
      ThreadComm comm(world_, world_group, r);
      try {
        fn(comm);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        world_->fail("rank " + std::to_string(r) + ": " + e.what());
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        world_->fail("rank " + std::to_string(r) + ": an unknown exception");
      }
    });
  for (auto& t : threads) t.join();
  // The first rank that failed on its own (not because another had) tells why.
  for (const auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const AllRanksError&) {
      continue;
    } catch (...) {
      throw;
    }
  }
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace dayzero::executor
