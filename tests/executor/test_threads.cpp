// The kernel thread pool (executor/threads.h) and the threaded kernels: every index
// once, exceptions, concurrent and nested callers; linear / attention / MLA
// bit-identical (tolerance 0: memcmp) for 1, 2 and 3 threads and run to run.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "executor/kernels.h"
#include "executor/threads.h"
#include "helpers.h"

namespace dayzero::executor {
namespace {
using testing::f32_weight;
using testing::random_tensor;

constexpr double kBigWork = 1e12;  // work per item that always splits into kernel_threads() chunks

// Restores the process-wide thread count after each test.
class Threads : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = kernel_threads(); }
  void TearDown() override { set_kernel_threads(saved_); }
  int saved_ = 1;
};

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape && std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}

// Runs fn with 1, 2 and 3 threads (twice each) and expects bit-identical tensors.
template <class Fn>
void expect_same_for_thread_counts(const Fn& fn, const std::string& what) {
  set_kernel_threads(1);
  const Tensor ref = fn();
  for (int threads : {1, 2, 3, 2}) {
    set_kernel_threads(threads);
    EXPECT_TRUE(same_bits(fn(), ref)) << what << ": " << threads << " threads";
    EXPECT_TRUE(same_bits(fn(), ref)) << what << ": " << threads << " threads, run 2";
  }
}

TEST_F(Threads, EveryIndexExactlyOnceInContiguousChunks) {
  for (int threads : {1, 2, 3, 4, 7}) {
    set_kernel_threads(threads);
    for (int64_t n : {0, 1, 2, 3, 5, 6, 7, 100, 1001}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::mutex m;
      std::vector<std::pair<int64_t, int64_t>> chunks;
      parallel_for(n, kBigWork, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
        std::lock_guard lock(m);
        chunks.emplace_back(b, e);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << "n " << n << ", index " << i;
      const int64_t k = std::min<int64_t>(threads, n);
      ASSERT_EQ(parallel_chunks(n, kBigWork), k);
      ASSERT_EQ(static_cast<int64_t>(chunks.size()), n == 0 ? 0 : k) << "n " << n << ", " << threads << " threads";
      std::sort(chunks.begin(), chunks.end());
      for (int64_t c = 0; c < static_cast<int64_t>(chunks.size()); ++c)
        EXPECT_EQ(chunks[static_cast<size_t>(c)], std::make_pair(n * c / k, n * (c + 1) / k));
    }
  }
}

TEST_F(Threads, SmallWorkRunsInlineOnTheCaller) {
  set_kernel_threads(4);
  EXPECT_EQ(parallel_chunks(1000, kMinChunkWork / 1000), 1);        // one chunk's worth in all
  EXPECT_EQ(parallel_chunks(1000, 2.5 * kMinChunkWork / 1000), 2);  // 2.5 chunks' worth: 2
  EXPECT_EQ(parallel_chunks(1000, 0), 1);
  const auto caller = std::this_thread::get_id();
  int calls = 0;
  parallel_for(1000, 1.0, [&](int64_t b, int64_t e) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 1000);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

TEST_F(Threads, SurvivesManyCallsAndResizes) {
  for (int threads : {2, 3, 1, 2}) {
    set_kernel_threads(threads);
    for (int call = 0; call < 3000; ++call) {
      std::atomic<int64_t> sum{0};
      parallel_for(101, kBigWork, [&](int64_t b, int64_t e) {
        int64_t s = 0;
        for (int64_t i = b; i < e; ++i) s += i;
        sum += s;
      });
      ASSERT_EQ(sum.load(), 101 * 100 / 2) << "call " << call;
    }
  }
}

TEST_F(Threads, ExceptionsReachTheCallerAndThePoolGoesOn) {
  set_kernel_threads(3);
  for (int bad_chunk : {0, 1, 2}) {
    try {
      parallel_for(30, kBigWork, [&](int64_t b, int64_t) {
        if (b / 10 == bad_chunk) throw std::runtime_error("chunk " + std::to_string(bad_chunk));
      });
      ADD_FAILURE() << "no exception from chunk " << bad_chunk;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "chunk " + std::to_string(bad_chunk));
    }
  }
  // All chunks throw: the lowest chunk's exception, after all have finished.
  std::atomic<int> finished{0};
  try {
    parallel_for(30, kBigWork, [&](int64_t b, int64_t) {
      ++finished;
      throw std::out_of_range(std::to_string(b));
    });
  } catch (const std::out_of_range& e) {
    EXPECT_EQ(std::string(e.what()), "0");
  }
  EXPECT_EQ(finished.load(), 3);
  std::atomic<int64_t> n{0};
  parallel_for(30, kBigWork, [&](int64_t b, int64_t e) { n += e - b; });
  EXPECT_EQ(n.load(), 30);
}

TEST_F(Threads, NestedAndConcurrentCallersRunInline) {
  set_kernel_threads(2);
  std::atomic<int64_t> inner{0};
  parallel_for(4, kBigWork, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      parallel_for(10, kBigWork, [&](int64_t ib, int64_t ie) {
        EXPECT_EQ(ie - ib, 10);  // inline: one chunk
        inner += ie - ib;
      });
  });
  EXPECT_EQ(inner.load(), 40);
  // Two threads using the kernels at once (two Runners in one process) get the same results.
  const Tensor x = random_tensor({7, 96}, 1), w = random_tensor({300, 96}, 2);
  const Tensor ref = linear_f32(x, f32_weight(w), 0, {});
  std::atomic<int> mismatches{0};
  auto worker = [&] {
    for (int i = 0; i < 200; ++i)
      if (!same_bits(linear_f32(x, f32_weight(w), 0, {}), ref)) ++mismatches;
  };
  std::thread a(worker), b(worker);
  a.join();
  b.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST_F(Threads, DefaultFromEnvironment) {
  const char* saved = std::getenv("DAYZERO_THREADS");
  const std::string saved_value = saved ? saved : "";
  setenv("DAYZERO_THREADS", "3", 1);
  EXPECT_EQ(default_kernel_threads(), 3);
  setenv("DAYZERO_THREADS", "two", 1);
  EXPECT_THROW(default_kernel_threads(), std::invalid_argument);
  setenv("DAYZERO_THREADS", "0", 1);
  EXPECT_THROW(default_kernel_threads(), std::invalid_argument);
  unsetenv("DAYZERO_THREADS");
  const int alone = default_kernel_threads();
  EXPECT_GE(alone, 1);
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const std::string local_value = local ? local : "";
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1000000", 1);  // more ranks than cores: still one thread
  EXPECT_EQ(default_kernel_threads(), 1);
  if (local) setenv("OMPI_COMM_WORLD_LOCAL_SIZE", local_value.c_str(), 1);
  else unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (saved) setenv("DAYZERO_THREADS", saved_value.c_str(), 1);
  EXPECT_THROW(set_kernel_threads(0), std::invalid_argument);
}

// FP8 E4M3 [out, in] with 32x32 scale blocks; codes avoid NaN (S.1111.111).
struct Fp8Weight {
  std::vector<uint8_t> codes;
  std::vector<float> scales;
  StoredWeight w;
  Fp8Weight(int64_t out, int64_t in, uint64_t seed) {
    const Tensor r = random_tensor({out, in}, seed), s = random_tensor({(out + 31) / 32, (in + 31) / 32}, seed + 1);
    for (float v : r.data) codes.push_back(static_cast<uint8_t>(static_cast<int>((v + 1.0f) * 127.0f) & 0xFE));
    for (float v : s.data) scales.push_back(0.01f + std::abs(v));
    w.name = "fp8";
    w.kind = model::StorageKind::fp8_block;
    w.dtype = model::DType::f8_e4m3;
    w.shape = {out, in};
    w.data = std::as_bytes(std::span<const uint8_t>(codes));
    w.scales = std::as_bytes(std::span<const float>(scales));
    w.block_rows = w.block_cols = 32;
  }
};

TEST_F(Threads, LinearBitIdenticalForAnyThreadCount) {
  for (int64_t T : {1, 5, 64})
    for (int64_t out : {10, 64, 200, 333}) {
      const int64_t in = 130;
      const Tensor x = random_tensor({T, in}, 3), w = random_tensor({out, in}, 4), b = random_tensor({out}, 5);
      const std::string shape = "T " + std::to_string(T) + ", out " + std::to_string(out);
      expect_same_for_thread_counts([&] { return linear_f32(x, f32_weight(w), 0, b.data); }, "f32 " + shape);
      expect_same_for_thread_counts([&] { return linear_dequant(x, f32_weight(w), 0, b.data); }, "dequant " + shape);
      Tensor wt({in, out});  // input-major copy
      for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) wt.row(i)[o] = w.row(o)[i];
      StoredWeight im = f32_weight(wt);
      im.input_major = true;
      expect_same_for_thread_counts([&] { return linear_f32(x, im, 0, b.data); }, "input-major " + shape);
      expect_same_for_thread_counts([&] { return linear_dequant(x, im, 0, b.data); }, "input-major deq " + shape);
      const Fp8Weight q(out, in, 6);
      expect_same_for_thread_counts([&] { return linear_dequant(x, q.w, 0, {}); }, "fp8 " + shape);
      // The blocked FP8 path dequantizes exactly as dequantize_matrix does.
      const Tensor deq = dequantize_matrix(q.w);
      EXPECT_TRUE(same_bits(linear_dequant(x, q.w, 0, {}), linear_f32(x, f32_weight(deq), 0, {}))) << shape;
    }
}

TEST_F(Threads, AttentionAndMlaBitIdenticalForAnyThreadCount) {
  const int64_t C = 40, T = 6, heads = 8, kv_heads = 2, d = 16;
  const Tensor q = random_tensor({T, heads * d}, 7), k = random_tensor({C, kv_heads * d}, 8),
               v = random_tensor({C, kv_heads * d}, 9), sinks = random_tensor({heads}, 10);
  std::vector<int64_t> pos;
  for (int64_t t = 0; t < T; ++t) pos.push_back(C - T + t);
  std::vector<int32_t> block;
  const KvPages kv = KvPages::contiguous(k, v, block);
  AttentionParams p;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.qk_dim = p.v_dim = d;
  p.scale = 0.25;
  expect_same_for_thread_counts([&] { return attention(q, pos, kv, p); }, "gqa");
  p.window = 7;
  p.sinks = sinks.data;
  expect_same_for_thread_counts([&] { return attention(q, pos, kv, p); }, "gqa+sliding+sinks");
  // MLA: latent 32, rope 8, nope 16, v 16.
  const MlaParams mp{heads, 16, 8, 32, 16, 0.2};
  const Tensor mq = random_tensor({T, heads * 24}, 11), latent = random_tensor({C, 32}, 12),
               rope_k = random_tensor({C, 8}, 13), kv_b = random_tensor({heads * 32, 32}, 14);
  std::vector<int32_t> mblock;
  const KvPages cache = KvPages::contiguous(latent, rope_k, mblock);
  expect_same_for_thread_counts([&] { return mla_attention(mq, pos, cache, f32_weight(kv_b), mp); }, "mla");
  const Fp8Weight qb(heads * 32, 32, 15);
  expect_same_for_thread_counts([&] { return mla_attention(mq, pos, cache, qb.w, mp); }, "mla fp8 kv_b");
}

// Not a check: prints what splitting small work over 2 threads gains or loses here
// (the basis of kMinChunkWork): multiply-adds over an L1-resident array.
TEST_F(Threads, ReportsWhenTwoThreadsPay) {
  std::vector<float> x(2048, 1.0f);
  const auto n = static_cast<int64_t>(x.size());
  auto time_us = [&](int threads, int64_t repeats) {
    set_kernel_threads(threads);
    const int calls = 300;
    double best = 1e30;
    for (int i = 0; i < calls; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      parallel_for(n, kBigWork, [&](int64_t b, int64_t e) {
        for (int64_t r = 0; r < repeats; ++r)
          for (int64_t j = b; j < e; ++j) x[static_cast<size_t>(j)] = x[static_cast<size_t>(j)] * 0.999f + 0.001f;
      });
      best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  for (int64_t repeats : {8, 25, 50, 100, 200, 400}) {
    const double one = time_us(1, repeats), two = time_us(2, repeats);
    std::cout << "work " << n * repeats << " multiply-adds: 1 thread " << one << " us, 2 threads " << two
              << " us (best of 300)\n";
  }
  EXPECT_GT(x[0], 0.0f);
}

}  // namespace
}  // namespace dayzero::executor
