#include "executor/kv_cache.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "executor/weights.h"

namespace dayzero::executor {

KvPages KvPages::contiguous(const Tensor& k, const Tensor& v, std::vector<int32_t>& one_block) {
  if (k.rows() != v.rows())
    throw std::invalid_argument("KvPages::contiguous: k " + k.shape_string() + " and v " + v.shape_string() +
                                " hold different numbers of positions");
  one_block.assign(1, 0);
  KvPages p;
  p.k = k.data.data();
  p.v = v.data.data();
  p.k_width = k.cols();
  p.v_width = v.cols();
  p.tokens = k.rows();
  p.block_tokens = std::max<int64_t>(1, k.rows());
  p.blocks = one_block;
  return p;
}

std::vector<int64_t> KvPages::slots() const {
  std::vector<int64_t> out(static_cast<size_t>(tokens));
  for (int64_t j = 0; j < tokens; ++j) out[static_cast<size_t>(j)] = slot(j);
  return out;
}

KvPages to_host(const KvPages& p, KvRows& scratch) {
  if (p.on_host()) return p;
  if (!p.k_store) throw std::logic_error("KvPages: neither host rows nor a store");
  const std::vector<int64_t> slots = p.slots();
  scratch.k = Tensor({p.tokens, p.k_width});
  scratch.v = Tensor({p.tokens, p.v_width});
  p.k_store->load(slots, scratch.k.data.data());
  if (p.v_store && p.v_width > 0) p.v_store->load(slots, scratch.v.data.data());
  scratch.one_block.assign(1, 0);
  KvPages h;  // one block of every row (a keys-only cache's values are 0 wide)
  h.k = scratch.k.data.data();
  h.v = scratch.v.data.data();
  h.k_width = p.k_width;
  h.v_width = p.v_width;
  h.tokens = p.tokens;
  h.block_tokens = std::max<int64_t>(1, p.tokens);
  h.blocks = scratch.one_block;
  return h;
}

KvCache::KvCache(int64_t layers, int64_t block_tokens, int64_t k_width, int64_t v_width, plan::KvDtype storage,
                 KvStoreMaker make_store)
    : layers_(layers), block_tokens_(block_tokens), k_width_(k_width), v_width_(v_width), storage_(storage) {
  if (layers < 0 || block_tokens <= 0 || k_width <= 0 || v_width < 0)
    throw std::invalid_argument("KvCache: " + std::to_string(layers) + " layers, blocks of " +
                                std::to_string(block_tokens) + " tokens, rows of " + std::to_string(k_width) + " / " +
                                std::to_string(v_width) + " floats: each must be positive (values may be 0)");
  cached_.assign(static_cast<size_t>(layers), true);
  make_store_ = make_store;
  make_pools();
}

KvCache::KvCache(std::vector<bool> cached_layers, int64_t block_tokens, int64_t k_width, int64_t v_width,
                 plan::KvDtype storage, KvStoreMaker make_store)
    : KvCache(static_cast<int64_t>(cached_layers.size()), block_tokens, k_width, v_width, storage, make_store) {
  cached_ = std::move(cached_layers);
  make_pools();
}

void KvCache::make_pools() {
  const auto make = [&](int64_t width) -> std::unique_ptr<KvStore> {
    if (make_store_) return make_store_(storage_, width);
    return std::make_unique<HostKvStore>(storage_, width);
  };
  k_pool_.clear();
  v_pool_.clear();
  for (int64_t l = 0; l < layers_; ++l) {
    const bool cached = cached_[static_cast<size_t>(l)];
    k_pool_.push_back(cached ? make(k_width_) : nullptr);
    v_pool_.push_back(cached && v_width_ > 0 ? make(v_width_) : nullptr);
  }
}

void KvCache::grow_pools() {
  for (int64_t l = 0; l < layers_; ++l) {
    if (!cached_[static_cast<size_t>(l)]) continue;
    k_pool_[static_cast<size_t>(l)]->resize(blocks_ * block_tokens_);
    if (v_pool_[static_cast<size_t>(l)]) v_pool_[static_cast<size_t>(l)]->resize(blocks_ * block_tokens_);
  }
}

int KvCache::add_sequence() {
  if (!free_ids_.empty()) {
    const int id = free_ids_.back();
    free_ids_.pop_back();
    live_[static_cast<size_t>(id)] = true;
    return id;
  }
  tables_.emplace_back();
  lengths_.push_back(0);
  live_.push_back(true);
  return static_cast<int>(tables_.size()) - 1;
}

void KvCache::release(int seq) {
  if (seq < 0 || static_cast<size_t>(seq) >= live_.size() || !live_[static_cast<size_t>(seq)])
    throw std::out_of_range("KvCache::release: sequence " + std::to_string(seq) + " is not live");
  auto& table = tables_[static_cast<size_t>(seq)];
  free_blocks_.insert(free_blocks_.end(), table.rbegin(), table.rend());
  table.clear();
  lengths_[static_cast<size_t>(seq)] = 0;
  live_[static_cast<size_t>(seq)] = false;
  free_ids_.push_back(seq);
}

void KvCache::preallocate(int64_t blocks) {
  if (blocks < 0 || blocks > std::numeric_limits<int32_t>::max())
    throw std::invalid_argument("KvCache::preallocate: " + std::to_string(blocks) + " blocks");
  if (blocks <= blocks_) return;
  for (int64_t b = blocks - 1; b >= blocks_; --b) free_blocks_.push_back(static_cast<int32_t>(b));  // lowest first out
  blocks_ = blocks;
  grow_pools();
}

int64_t KvCache::length(int seq) const { return lengths_.at(static_cast<size_t>(seq)); }

int64_t KvCache::extend(int seq, int64_t n) {
  if (n < 0) throw std::invalid_argument("KvCache::extend: " + std::to_string(n) + " positions");
  auto& table = tables_.at(static_cast<size_t>(seq));
  const int64_t first = lengths_[static_cast<size_t>(seq)], end = first + n;
  const int64_t need = (end + block_tokens_ - 1) / block_tokens_;
  if (!live_.at(static_cast<size_t>(seq)))
    throw std::out_of_range("KvCache::extend: sequence " + std::to_string(seq) + " was released");
  while (static_cast<int64_t>(table.size()) < need) {
    if (!free_blocks_.empty()) {
      table.push_back(free_blocks_.back());
      free_blocks_.pop_back();
      continue;
    }
    if (blocks_ >= std::numeric_limits<int32_t>::max()) throw std::length_error("KvCache: out of block ids");
    table.push_back(static_cast<int32_t>(blocks_++));
  }
  grow_pools();
  lengths_[static_cast<size_t>(seq)] = end;
  return first;
}

const std::vector<int32_t>& KvCache::table_of(int64_t layer, int seq) const {
  if (layer < 0 || layer >= layers_ || !cached_[static_cast<size_t>(layer)])
    throw std::out_of_range("KvCache: layer " + std::to_string(layer) + " holds no cache");
  return tables_.at(static_cast<size_t>(seq));
}

std::vector<int64_t> KvCache::slots_of(int seq, int64_t pos, int64_t rows) const {
  const auto& table = tables_.at(static_cast<size_t>(seq));
  const int64_t tokens = lengths_[static_cast<size_t>(seq)];
  if (pos < 0 || rows < 0 || pos + rows > tokens)
    throw std::out_of_range("KvCache::write: positions [" + std::to_string(pos) + ", " + std::to_string(pos + rows) +
                            ") of a sequence with " + std::to_string(tokens) + " reserved");
  std::vector<int64_t> slots(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t j = pos + i;
    slots[static_cast<size_t>(i)] = table[static_cast<size_t>(j / block_tokens_)] * block_tokens_ + j % block_tokens_;
  }
  return slots;
}

void KvCache::write(int64_t layer, int seq, int64_t pos, const float* k_rows, const float* v_rows, int64_t rows) {
  const Tensor k({rows, k_width_}, std::vector<float>(k_rows, k_rows + rows * k_width_));
  const Tensor v = v_rows ? Tensor({rows, v_width_}, std::vector<float>(v_rows, v_rows + rows * v_width_)) : Tensor();
  write(layer, seq, pos, k, v_rows ? &v : nullptr, 0, rows);
}

void KvCache::write(int64_t layer, int seq, int64_t pos, const Tensor& k, const Tensor* v, int64_t first,
                    int64_t rows) {
  table_of(layer, seq);
  const std::vector<int64_t> slots = slots_of(seq, pos, rows);
  k_pool_[static_cast<size_t>(layer)]->store(slots, k, first);
  if (KvStore* vp = v_pool_[static_cast<size_t>(layer)].get()) {
    if (!v) throw std::invalid_argument("KvCache::write: no values for a cache that holds them");
    vp->store(slots, *v, first);
  }
}

// The view through the stores, any storage (a device's cache is read so).
KvPages KvCache::pages_of_stores(int64_t layer, int seq) const {
  KvPages p;
  p.blocks = table_of(layer, seq);
  p.k_store = k_pool_[static_cast<size_t>(layer)].get();
  p.v_store = v_pool_[static_cast<size_t>(layer)].get();
  p.k_width = k_width_;
  p.v_width = v_width_;
  p.block_tokens = block_tokens_;
  p.tokens = lengths_.at(static_cast<size_t>(seq));
  return p;
}

bool KvCache::on_host() const {
  const auto it = std::find_if(k_pool_.begin(), k_pool_.end(), [](const auto& s) { return s != nullptr; });
  return it == k_pool_.end() || dynamic_cast<const HostKvStore*>(it->get()) != nullptr;
}

KvPages KvCache::pages(int64_t layer, int seq) const {
  KvPages p = pages_of_stores(layer, seq);
  if (!on_host()) return p;
  if (storage_ != plan::KvDtype::fp32)
    throw std::logic_error("KvCache::pages: a " + std::string(plan::kv_dtype_name(storage_)) +
                           " cache is read through a scratch of float32 rows");
  p.k = p.k_store->host_f32();
  p.v = p.v_store ? p.v_store->host_f32() : nullptr;  // a keys-only cache: no values
  p.k_store = p.v_store = nullptr;
  return p;
}

KvPages KvCache::pages(int64_t layer, int seq, KvRows& scratch) const {
  if (storage_ == plan::KvDtype::fp32 || !on_host()) return pages(layer, seq);
  return to_host(pages_of_stores(layer, seq), scratch);  // a host BF16 / FP8 cache's rows as float32
}

int64_t KvCache::bytes() const {
  const auto cached = static_cast<int64_t>(std::count(cached_.begin(), cached_.end(), true));
  return cached * blocks_ * block_tokens_ * (k_width_ + v_width_) * plan::kv_elem_bytes(storage_);
}

}  // namespace dayzero::executor
