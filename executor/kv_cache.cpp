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

void KvCache::Pool::resize(plan::KvDtype s, size_t n) {
  switch (s) {
    case plan::KvDtype::fp32: f32.resize(n); return;
    case plan::KvDtype::bf16: bf16.resize(n); return;
    case plan::KvDtype::fp8: fp8.resize(n); return;
  }
}

void KvCache::Pool::store(plan::KvDtype s, size_t at, const float* x, int64_t n) {
  switch (s) {
    case plan::KvDtype::fp32: std::copy_n(x, n, f32.data() + at); return;
    case plan::KvDtype::bf16:
      for (int64_t i = 0; i < n; ++i) bf16[at + static_cast<size_t>(i)] = float_to_bf16(x[i]);
      return;
    case plan::KvDtype::fp8:
      for (int64_t i = 0; i < n; ++i) fp8[at + static_cast<size_t>(i)] = float_to_fp8_e4m3(x[i]);
      return;
  }
}

void KvCache::Pool::load(plan::KvDtype s, size_t at, float* out, int64_t n) const {
  switch (s) {
    case plan::KvDtype::fp32: std::copy_n(f32.data() + at, n, out); return;
    case plan::KvDtype::bf16:
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(bf16[at + static_cast<size_t>(i)]);
      return;
    case plan::KvDtype::fp8: {
      const auto& table = fp8_e4m3_table();
      for (int64_t i = 0; i < n; ++i) out[i] = table[fp8[at + static_cast<size_t>(i)]];
      return;
    }
  }
}

KvCache::KvCache(int64_t layers, int64_t block_tokens, int64_t k_width, int64_t v_width, plan::KvDtype storage)
    : layers_(layers), block_tokens_(block_tokens), k_width_(k_width), v_width_(v_width), storage_(storage) {
  if (layers < 0 || block_tokens <= 0 || k_width <= 0 || v_width < 0)
    throw std::invalid_argument("KvCache: " + std::to_string(layers) + " layers, blocks of " +
                                std::to_string(block_tokens) + " tokens, rows of " + std::to_string(k_width) + " / " +
                                std::to_string(v_width) + " floats: each must be positive (values may be 0)");
  k_pool_.resize(static_cast<size_t>(layers));
  v_pool_.resize(static_cast<size_t>(layers));
  cached_.assign(static_cast<size_t>(layers), true);
}

KvCache::KvCache(std::vector<bool> cached_layers, int64_t block_tokens, int64_t k_width, int64_t v_width,
                 plan::KvDtype storage)
    : KvCache(static_cast<int64_t>(cached_layers.size()), block_tokens, k_width, v_width, storage) {
  cached_ = std::move(cached_layers);
}

void KvCache::grow_pools() {
  for (int64_t l = 0; l < layers_; ++l) {
    if (!cached_[static_cast<size_t>(l)]) continue;
    k_pool_[static_cast<size_t>(l)].resize(storage_, static_cast<size_t>(blocks_ * block_tokens_ * k_width_));
    v_pool_[static_cast<size_t>(l)].resize(storage_, static_cast<size_t>(blocks_ * block_tokens_ * v_width_));
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

void KvCache::write(int64_t layer, int seq, int64_t pos, const float* k_rows, const float* v_rows, int64_t rows) {
  const auto& table = table_of(layer, seq);
  const int64_t tokens = lengths_[static_cast<size_t>(seq)];
  if (pos < 0 || pos + rows > tokens)
    throw std::out_of_range("KvCache::write: positions [" + std::to_string(pos) + ", " + std::to_string(pos + rows) +
                            ") of a sequence with " + std::to_string(tokens) + " reserved");
  auto& kp = k_pool_[static_cast<size_t>(layer)];
  auto& vp = v_pool_[static_cast<size_t>(layer)];
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t j = pos + i;
    const auto s =
        static_cast<size_t>(table[static_cast<size_t>(j / block_tokens_)] * block_tokens_ + j % block_tokens_);
    kp.store(storage_, s * static_cast<size_t>(k_width_), k_rows + i * k_width_, k_width_);
    vp.store(storage_, s * static_cast<size_t>(v_width_), v_rows + i * v_width_, v_width_);
  }
}

KvPages KvCache::pages(int64_t layer, int seq) const {
  const auto& table = table_of(layer, seq);
  if (storage_ != plan::KvDtype::fp32)
    throw std::logic_error("KvCache::pages: a " + std::string(plan::kv_dtype_name(storage_)) +
                           " cache is read through a scratch of float32 rows");
  KvPages p;
  p.k = k_pool_[static_cast<size_t>(layer)].f32.data();
  p.v = v_pool_[static_cast<size_t>(layer)].f32.data();
  p.k_width = k_width_;
  p.v_width = v_width_;
  p.block_tokens = block_tokens_;
  p.tokens = lengths_.at(static_cast<size_t>(seq));
  p.blocks = table;
  return p;
}

KvPages KvCache::pages(int64_t layer, int seq, KvRows& scratch) const {
  if (storage_ == plan::KvDtype::fp32) return pages(layer, seq);
  const auto& table = table_of(layer, seq);
  const int64_t tokens = lengths_[static_cast<size_t>(seq)];
  scratch.k = Tensor({tokens, k_width_});
  scratch.v = Tensor({tokens, v_width_});
  const Pool& kp = k_pool_[static_cast<size_t>(layer)];
  const Pool& vp = v_pool_[static_cast<size_t>(layer)];
  for (int64_t j = 0; j < tokens; ++j) {
    const auto s =
        static_cast<size_t>(table[static_cast<size_t>(j / block_tokens_)] * block_tokens_ + j % block_tokens_);
    kp.load(storage_, s * static_cast<size_t>(k_width_), scratch.k.row(j), k_width_);
    if (v_width_ > 0) vp.load(storage_, s * static_cast<size_t>(v_width_), scratch.v.row(j), v_width_);
  }
  scratch.one_block.assign(1, 0);
  KvPages p;
  p.k = scratch.k.data.data();
  p.v = scratch.v.data.data();
  p.k_width = k_width_;
  p.v_width = v_width_;
  p.tokens = tokens;
  p.block_tokens = std::max<int64_t>(1, tokens);
  p.blocks = scratch.one_block;
  return p;
}

int64_t KvCache::bytes() const {
  const auto cached = static_cast<int64_t>(std::count(cached_.begin(), cached_.end(), true));
  return cached * blocks_ * block_tokens_ * (k_width_ + v_width_) * plan::kv_elem_bytes(storage_);
}

}  // namespace dayzero::executor
