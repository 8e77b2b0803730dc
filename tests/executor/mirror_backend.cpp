#include "mirror_backend.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "executor/rope.h"

namespace dayzero::executor::testing {

namespace {

std::atomic<int64_t> g_uploads{0}, g_results{0};

// The values a kernel reads: the device copy where the tensor has one (its host
// copy is not touched), else the host's, uploaded and kept with the tensor.
Tensor device_read(const Tensor& t) {
  Tensor copy;
  copy.shape = t.shape;
  if (const auto* m = dynamic_cast<const HostMirror*>(t.data.device())) {
    copy.data.assign(m->values.begin(), m->values.end());
    return copy;
  }
  const float* host = t.data.data();  // const: the host's copy stays valid
  copy.data.assign(host, host + t.numel());
  t.data.share_device(std::make_shared<HostMirror>(std::vector<float>(host, host + t.numel())));
  g_uploads.fetch_add(1, std::memory_order_relaxed);
  return copy;
}

// A kernel's result left on the device: the host's copy goes.
void keep_on_device(Tensor& t, const Tensor& result) {
  const float* v = result.data.data();
  t.data.set_device(std::make_shared<HostMirror>(std::vector<float>(v, v + result.numel())),
                    static_cast<size_t>(result.numel()));
  t.shape = result.shape;
  g_results.fetch_add(1, std::memory_order_relaxed);
}

// One argument of a kernel call: tensors through the device, the rest as given.
template <class A>
struct Staged {
  A value;
  explicit Staged(A a) : value(std::forward<A>(a)) {}
  A get() { return std::forward<A>(value); }
  void finish() {}
};
template <>
struct Staged<const Tensor&> {
  Tensor read;
  explicit Staged(const Tensor& t) : read(device_read(t)) {}
  const Tensor& get() { return read; }
  void finish() {}
};
template <>
struct Staged<Tensor&> {  // written in place
  Tensor* target;
  Tensor work;
  explicit Staged(Tensor& t) : target(&t), work(device_read(t)) {}
  Tensor& get() { return work; }
  void finish() { keep_on_device(*target, work); }
};

// A sequence's gated delta-net state: read and updated where it lies.
template <>
struct Staged<LinearState&> {
  LinearState* target;
  LinearState work;
  explicit Staged(LinearState& s) : target(&s), work{device_read(s.conv), device_read(s.recurrent)} {}
  LinearState& get() { return work; }
  void finish() {
    keep_on_device(target->conv, work.conv);
    keep_on_device(target->recurrent, work.recurrent);
  }
};

// Attention's and MLA's keep mask (the indexer's result) is read where it lies too.
template <class P>
struct StagedKeep {
  P params;
  Tensor keep;
  explicit StagedKeep(const P& p) : params(p) {
    if (p.keep) keep = device_read(*p.keep);
  }
  const P& get() {  // here, not when made: the stager's tuple holds a moved copy
    if (params.keep) params.keep = &keep;
    return params;
  }
  void finish() {}
};
template <>
struct Staged<const AttentionParams&> : StagedKeep<AttentionParams> {
  using StagedKeep::StagedKeep;
};
template <>
struct Staged<const MlaParams&> : StagedKeep<MlaParams> {
  using StagedKeep::StagedKeep;
};

template <class Sig>
struct Stager;
template <class R, class... A>
struct Stager<R (*)(A...)> {
  static R invoke(R (*fn)(A...), A... a) {
    std::tuple<Staged<A>...> staged{Staged<A>(std::forward<A>(a))...};
    if constexpr (std::is_void_v<R>) {
      std::apply([&](auto&... s) { fn(s.get()...); }, staged);
      std::apply([](auto&... s) { (s.finish(), ...); }, staged);
    } else {
      R r = std::apply([&](auto&... s) { return fn(s.get()...); }, staged);
      std::apply([](auto&... s) { (s.finish(), ...); }, staged);
      if constexpr (std::is_same_v<R, Tensor>) {
        Tensor out;
        keep_on_device(out, r);
        return out;
      } else {
        return r;
      }
    }
  }
};

// The CPU table's entry I through the stager (an entry per index: a kernel table holds
// plain function pointers).
template <size_t I, class Sig>
struct At;
template <size_t I, class R, class... A>
struct At<I, R (*)(A...)> {
  static R call(A... a) {
    return Stager<R (*)(A...)>::invoke(std::get<R (*)(A...)>(cpu_kernel_table()[I].fn), std::forward<A>(a)...);
  }
};

constexpr size_t kMaxKernels = 64;

template <size_t I>
KernelFn wrapped() {
  if (I >= cpu_kernel_table().size()) return KernelFn{};
  return std::visit([](auto f) -> KernelFn { return KernelFn(&At<I, decltype(f)>::call); }, cpu_kernel_table()[I].fn);
}

template <size_t... I>
std::vector<KernelEntry> mirror_table(std::index_sequence<I...>) {
  const auto cpu = cpu_kernel_table();
  if (cpu.size() > kMaxKernels) throw std::logic_error("cpu-mirror: raise kMaxKernels to the CPU table's size");
  const KernelFn fns[] = {wrapped<I>()...};
  std::vector<KernelEntry> out;
  for (size_t i = 0; i < cpu.size(); ++i) out.push_back({cpu[i].kind, cpu[i].variant, fns[i], cpu[i].cost});
  return out;
}

void rope(Tensor& x, int64_t heads, int64_t stride, int64_t offset, std::span<const int64_t> positions,
          const RopeTable& table, RopeLayout layout) {
  Stager<Backend::RopeApplyFn>::invoke(&apply_rope, x, heads, stride, offset, positions, table, layout);
}

void add(Tensor& x, const Tensor& y) { Stager<Backend::AddFn>::invoke(&add_in_place, x, y); }
Tensor rows(const Tensor& x, int64_t first, int64_t count) {
  return Stager<Backend::RowsFn>::invoke(&executor::rows, x, first, count);
}
std::vector<float> row_sum_squares(const Tensor& x) {
  return Stager<Backend::RowSumSquaresFn>::invoke(&executor::row_sum_squares, x);
}
Tensor zeros(std::vector<int64_t> shape) {  // made on the device: nothing uploaded
  Tensor out;
  keep_on_device(out, executor::zeros(std::move(shape)));
  return out;
}
Tensor gather_rows(const Tensor& x, std::span<const int64_t> indices) {
  return Stager<Backend::GatherRowsFn>::invoke(&executor::gather_rows, x, indices);
}
Tensor stack_rows(std::span<const Tensor> parts) {  // each part read through the device
  std::vector<Tensor> read;
  for (const Tensor& p : parts) read.push_back(device_read(p));
  Tensor out;
  keep_on_device(out, executor::stack_rows(read));
  return out;
}
Tensor columns(const Tensor& x, int64_t first, int64_t count) {
  return Stager<Backend::ColumnsFn>::invoke(&executor::columns, x, first, count);
}

// The KV cache on the "device": rows in a store of their own, written from where the
// tensors' values lie, never offered as host rows (host_f32 null), so the attention
// kernels are given the stores and bring the rows over themselves (executor/kv_cache.h).
class MirrorKvStore final : public KvStore {
 public:
  MirrorKvStore(plan::KvDtype dtype, int64_t width) : rows_(dtype, width) {}
  void resize(int64_t rows) override { rows_.resize(rows); }
  void store(std::span<const int64_t> slots, const Tensor& src, int64_t first) override {
    rows_.store(slots, device_read(src), first);
  }
  void load(std::span<const int64_t> slots, float* out) const override { rows_.load(slots, out); }

 private:
  HostKvStore rows_;
};
std::unique_ptr<KvStore> make_kv_store(plan::KvDtype dtype, int64_t width) {
  return std::make_unique<MirrorKvStore>(dtype, width);
}

}  // namespace

void HostMirror::download(float* host, size_t count) const {
  std::copy_n(values.begin(), std::min(count, values.size()), host);
}

MirrorCounts mirror_counts() {
  return {g_uploads.load(std::memory_order_relaxed), g_results.load(std::memory_order_relaxed)};
}

const Backend& mirror_backend() {
  static const std::vector<KernelEntry> table = mirror_table(std::make_index_sequence<kMaxKernels>{});
  static const bool registered = [] {
    Backend b;
    b.name = "cpu-mirror";
    b.kernels = table;
    b.rope = &rope;
    b.add = &add;
    b.columns = &columns;
    b.rows = &rows;
    b.stack_rows = &stack_rows;
    b.gather_rows = &gather_rows;
    b.zeros = &zeros;
    b.cache_zeros = &zeros;
    b.row_sum_squares = &row_sum_squares;
    b.make_kv_store = &make_kv_store;
    register_backend(b);
    return true;
  }();
  (void)registered;
  return find_backend("cpu-mirror");
}

}  // namespace dayzero::executor::testing
