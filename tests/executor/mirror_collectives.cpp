#include "mirror_collectives.h"

#include <algorithm>
#include <atomic>
#include <utility>
#include <vector>

#include "mirror_backend.h"

namespace dayzero::executor::testing {

namespace {

std::atomic<int64_t> g_on_device{0};

// The mirror's copy of `v`'s values (the first v.size()), or null where they are on the host only.
const HostMirror* mirror_of(const TensorValues& v) {
  const auto* m = dynamic_cast<const HostMirror*>(v.device());
  return m && m->values.size() >= v.size() ? m : nullptr;
}
std::vector<float> values_of(const HostMirror& m, size_t n) {
  return std::vector<float>(m.values.begin(), m.values.begin() + static_cast<std::ptrdiff_t>(n));
}
void on_mirror(TensorValues& v, std::vector<float> values) {
  const size_t n = values.size();
  v.set_device(std::make_shared<HostMirror>(std::move(values)), n);
  g_on_device.fetch_add(1, std::memory_order_relaxed);
}

class MirrorCollectives final : public Communicator {
 public:
  MirrorCollectives(Communicator& inner, std::unique_ptr<Communicator> owned)
      : owned_(std::move(owned)), inner_(owned_ ? *owned_ : inner) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void all_reduce_sum(std::span<float> data) override { inner_.all_reduce_sum(data); }
  void all_gather(std::span<const float> in, std::span<float> out) override { inner_.all_gather(in, out); }
  void reduce_scatter_sum(std::span<const float> in, std::span<float> out) override {
    inner_.reduce_scatter_sum(in, out);
  }
  void all_to_all_v(std::span<const float> send, std::span<const int64_t> send_counts, std::span<float> recv,
                    std::span<const int64_t> recv_counts) override {
    inner_.all_to_all_v(send, send_counts, recv, recv_counts);
  }
  void send(std::span<const float> data, int dest) override { inner_.send(data, dest); }
  void recv(std::span<float> data, int source) override { inner_.recv(data, source); }

  void all_reduce_sum(TensorValues& data) override {
    const HostMirror* m = mirror_of(data);
    if (!m) return inner_.all_reduce_sum(data);
    std::vector<float> v = values_of(*m, data.size());
    inner_.all_reduce_sum(std::span<float>(v));
    on_mirror(data, std::move(v));
  }
  void all_to_all_v(const TensorValues& send, std::span<const int64_t> send_counts, TensorValues& recv,
                    std::span<const int64_t> recv_counts) override {
    const HostMirror* m = mirror_of(send);
    if (!m) return inner_.all_to_all_v(send, send_counts, recv, recv_counts);
    const std::vector<float> s = values_of(*m, send.size());
    std::vector<float> r(recv.size());
    inner_.all_to_all_v(std::span<const float>(s), send_counts, std::span<float>(r), recv_counts);
    on_mirror(recv, std::move(r));
  }
  void send(const TensorValues& data, int dest) override {
    const HostMirror* m = mirror_of(data);
    if (!m) return inner_.send(data, dest);
    const std::vector<float> s = values_of(*m, data.size());
    inner_.send(std::span<const float>(s), dest);
    g_on_device.fetch_add(1, std::memory_order_relaxed);
  }
  void recv(TensorValues& data, int source) override {  // always onto the mirror, as NCCL's into the device
    std::vector<float> r(data.size());
    inner_.recv(std::span<float>(r), source);
    on_mirror(data, std::move(r));
  }

  void barrier() override { inner_.barrier(); }
  std::unique_ptr<Communicator> split(int color, int key) override {
    return std::make_unique<MirrorCollectives>(inner_, inner_.split(color, key));
  }
  std::vector<std::vector<std::byte>> all_gather_bytes(std::span<const std::byte> data) override {
    return inner_.all_gather_bytes(data);
  }
  void set_name(const std::string& name) override { inner_.set_name(name); }

 private:
  std::unique_ptr<Communicator> owned_;  // a split's group
  Communicator& inner_;
};

}  // namespace

int64_t mirror_collectives_on_device() { return g_on_device.load(std::memory_order_relaxed); }

std::unique_ptr<Communicator> mirror_collectives(Communicator& inner) {
  return std::make_unique<MirrorCollectives>(inner, nullptr);
}

}  // namespace dayzero::executor::testing
