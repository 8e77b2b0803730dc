#pragma once
// Time per cost kind of a step (StepTime::by_kind_s): a fixed array indexed by the
// kind, used like a std::map<CostKind, double> (operator[], at, count, iteration in
// the kinds' order over the kinds that were set), without a heap allocation: a search
// costs millions of steps.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>

namespace dayzero::simulate {

// What a step's time is spent on. Declared in the alphabetical order of their
// names: reports and maps list them in this order.
enum class CostKind {
  attention,        // attention over the context (prefill: compute; decode: reading the KV cache)
  draft,            // speculative decoding: the draft layer's forward passes and their LM head
  elementwise,      // norms, RoPE, activations, routing combine
  embedding,        // the embedding lookup (first stage)
  ep_alltoall,      // expert dispatch and combine
  experts,          // routed expert GEMMs on the busiest EP rank
  gemm,             // dense projections: attention, dense MLP, shared experts
  kernel_overhead,  // fixed launch cost per kernel
  lm_head,          // the LM head (last stage)
  offload_fetch,    // cold experts fetched over the host link
  pp_send,          // activations to the next pipeline stage
  router,           // MoE gate GEMM
  tp_allreduce,     // attention-TP and moe-TP all-reduces
};
inline constexpr size_t kCostKinds = static_cast<size_t>(CostKind::tp_allreduce) + 1;

class KindTimes {
 public:
  using Entry = std::pair<CostKind, double>;

  KindTimes() {
    for (size_t i = 0; i < kCostKinds; ++i) v_[i] = {static_cast<CostKind>(i), 0.0};
  }
  double& operator[](CostKind k) {
    set_ |= bit(k);
    return v_[static_cast<size_t>(k)].second;
  }
  double at(CostKind k) const {
    if (!(set_ & bit(k))) throw std::out_of_range("KindTimes::at: the step has no such cost");
    return v_[static_cast<size_t>(k)].second;
  }
  size_t count(CostKind k) const { return (set_ & bit(k)) ? 1 : 0; }
  size_t size() const { return static_cast<size_t>(std::popcount(set_)); }
  bool empty() const { return set_ == 0; }
  bool operator==(const KindTimes& o) const { return set_ == o.set_ && v_ == o.v_; }

  template <class Owner, class Value>
  class Iter {
   public:
    Iter(Owner* o, size_t i) : o_(o), i_(i) { skip(); }
    Value& operator*() const { return o_->v_[i_]; }
    Value* operator->() const { return &o_->v_[i_]; }
    Iter& operator++() {
      ++i_;
      skip();
      return *this;
    }
    bool operator==(const Iter& x) const { return i_ == x.i_; }
    bool operator!=(const Iter& x) const { return i_ != x.i_; }

   private:
    void skip() {
      while (i_ < kCostKinds && !(o_->set_ & (uint32_t{1} << i_))) ++i_;
    }
    Owner* o_;
    size_t i_;
  };
  using iterator = Iter<KindTimes, Entry>;
  using const_iterator = Iter<const KindTimes, const Entry>;
  iterator begin() { return {this, 0}; }
  iterator end() { return {this, kCostKinds}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, kCostKinds}; }

 private:
  static uint32_t bit(CostKind k) { return uint32_t{1} << static_cast<size_t>(k); }
  std::array<Entry, kCostKinds> v_;
  uint32_t set_ = 0;
};

}  // namespace dayzero::simulate
