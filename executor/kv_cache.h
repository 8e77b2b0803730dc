#pragma once
// The paged KV cache (vLLM's layout): each layer has a pool of fixed-size blocks
// of `block_tokens` rows for keys and for values; each sequence has one block
// table, shared by all layers, mapping its positions to blocks. Memory grows a
// block at a time, as the simulator's paged-KV rounding assumes (simulate/memory).
// For MLA the "keys" are the normalized latent and the "values" the rotated rope key.
// Rows are stored in the plan's KV dtype (plan::KvDtype: float32, BF16 or FP8 E4M3,
// rounded to nearest even when written); a reduced-precision cache is read back
// as float32 rows into a per-call scratch (KvRows), as an engine's attention
// kernel converts its FP8 cache on load.

#include <cstdint>
#include <span>
#include <vector>

#include "executor/kv_store.h"
#include "executor/quantize.h"
#include "executor/tensor.h"

namespace dayzero::executor {

// A read-only view of one sequence's cache in one layer: row j (position j) of the
// keys lives in block blocks[j / block_tokens] at row j % block_tokens. Valid until
// the cache next grows (KvCache::extend). Host float32 rows (k, v), or, for a cache a
// device backend holds (Backend::make_kv_store), its stores (k and v null): the
// backend's kernels read them where they lie; to_host() brings them to the host.
struct KvPages {
  const float* k = nullptr;
  const float* v = nullptr;
  const KvStore* k_store = nullptr;
  const KvStore* v_store = nullptr;
  int64_t k_width = 0, v_width = 0;  // floats per row
  int64_t block_tokens = 1;
  int64_t tokens = 0;  // positions 0..tokens-1 are filled
  std::span<const int32_t> blocks;

  const float* k_row(int64_t j) const { return k + slot(j) * k_width; }
  const float* v_row(int64_t j) const { return v + slot(j) * v_width; }
  int64_t slot(int64_t j) const {
    return blocks[static_cast<size_t>(j / block_tokens)] * block_tokens + j % block_tokens;
  }

  bool on_host() const { return k != nullptr || tokens == 0; }
  std::vector<int64_t> slots() const;  // slot(j) for every position 0..tokens-1

  // One block holding all rows of contiguous k and v ([C, k_width], [C, v_width]);
  // `one_block` must outlive the view.
  static KvPages contiguous(const Tensor& k, const Tensor& v, std::vector<int32_t>& one_block);
};

// Float32 rows of one sequence read back from a reduced-precision cache: the
// scratch a KvPages view of it points into (valid until the next read into it).
struct KvRows {
  Tensor k, v;
  std::vector<int32_t> one_block;
};
// `p` itself when its rows are in host memory, else its rows loaded from its stores
// into `scratch` (a kernel that reads the host's rows, given a device's cache).
KvPages to_host(const KvPages& p, KvRows& scratch);

class KvCache {
 public:
  // `layers` pools of blocks with rows of k_width and v_width floats (v_width 0: keys
  // only, as the sparse-attention indexer caches).
  // `make_store` (null: host stores) makes each layer's pools.
  KvCache(int64_t layers, int64_t block_tokens, int64_t k_width, int64_t v_width,
          plan::KvDtype storage = plan::KvDtype::fp32, KvStoreMaker make_store = nullptr);
  // Only the layers marked true hold pools (Qwen3.5: its full-attention layers; the
  // linear-attention layers keep a state per sequence instead); the block tables are shared.
  KvCache(std::vector<bool> cached_layers, int64_t block_tokens, int64_t k_width, int64_t v_width,
          plan::KvDtype storage = plan::KvDtype::fp32, KvStoreMaker make_store = nullptr);

  int add_sequence();  // a new, empty sequence; its id (a released one's id is reused)
  // Returns `seq`'s blocks to the free list (taken again before the pools grow)
  // and its id for reuse: a serving loop's memory stops growing once the pools
  // reach the most blocks ever held at once.
  void release(int seq);
  // Allocates the pools up to `blocks` (written, so resident) and frees the new
  // blocks for use: an engine's KV pool, sized once at start-up (vLLM's
  // gpu_memory_utilization) instead of growing a block at a time.
  void preallocate(int64_t blocks);
  int sequences() const { return static_cast<int>(tables_.size() - free_ids_.size()); }
  int64_t length(int seq) const;  // positions reserved so far
  // Reserves `n` more positions for `seq` (taking free blocks as needed) and
  // returns the first of them.
  int64_t extend(int seq, int64_t n);
  // Copies `rows` rows of keys and values (k_width / v_width floats each,
  // consecutive) into positions [pos, pos + rows) of `seq` in `layer`, converted to
  // the storage; they must have been reserved.
  void write(int64_t layer, int seq, int64_t pos, const float* k_rows, const float* v_rows, int64_t rows);
  // The same from rows [first, first + rows) of tensors (`v` null for a keys-only
  // cache), wherever their values live: a device's cache takes them on the device.
  void write(int64_t layer, int seq, int64_t pos, const Tensor& k, const Tensor* v, int64_t first, int64_t rows);
  // A view of a host float32 cache itself (throws std::logic_error for another
  // storage), or of a device's cache.
  KvPages pages(int64_t layer, int seq) const;
  // Any storage: a host float32 cache itself, a device's cache, or the sequence's rows
  // of a host BF16 / FP8 cache converted into `scratch` (one contiguous block).
  KvPages pages(int64_t layer, int seq, KvRows& scratch) const;

  int64_t block_tokens() const { return block_tokens_; }
  plan::KvDtype storage() const { return storage_; }
  int64_t allocated_blocks() const { return blocks_; }
  int64_t used_blocks() const { return blocks_ - static_cast<int64_t>(free_blocks_.size()); }
  int64_t bytes() const;  // all layers' pools as allocated

 private:
  void make_pools();
  void grow_pools();
  std::vector<int64_t> slots_of(int seq, int64_t pos, int64_t rows) const;
  KvPages pages_of_stores(int64_t layer, int seq) const;
  bool on_host() const;                                                // the stores are the host's (HostKvStore)
  const std::vector<int32_t>& table_of(int64_t layer, int seq) const;  // checks both
  int64_t layers_, block_tokens_, k_width_, v_width_;
  plan::KvDtype storage_;
  KvStoreMaker make_store_ = nullptr;
  std::vector<bool> cached_;  // per layer: holds a pool
  int64_t blocks_ = 0;
  // Per layer: [blocks * block_tokens, width] rows of keys and of values (null for a
  // layer without a cache, and for the values of a keys-only cache).
  std::vector<std::unique_ptr<KvStore>> k_pool_, v_pool_;
  std::vector<std::vector<int32_t>> tables_;  // per sequence: block ids
  std::vector<int64_t> lengths_;
  std::vector<int32_t> free_blocks_;  // released, reused last-in first-out
  std::vector<int> free_ids_;         // released sequence ids
  std::vector<bool> live_;            // per id: added and not released
};

}  // namespace dayzero::executor
