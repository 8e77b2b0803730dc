// Device memory of the CUDA backend (cuda/device.h): the probe answers on any
// machine, and the pool counts what its buffers hold.
#include <gtest/gtest.h>

#include <vector>

#include "cuda/device.h"
#include "gpu.h"

namespace dayzero::cuda {
namespace {

// On any machine, GPU or not: the probe neither throws nor crashes, and says why
// when it finds no device. The runtime is linked statically, so its version is known.
TEST(CudaDevice, ProbeAnswersWithOrWithoutAGpu) {
  const CudaDevices d = probe_cuda();
  EXPECT_GT(d.runtime_version, 0);
  if (d.count == 0) EXPECT_FALSE(d.why_none.empty());
  else EXPECT_GT(d.total_bytes, 0);
  std::printf("cuda: runtime %d, driver %d, %d device(s)%s%s\n", d.runtime_version, d.driver_version, d.count,
              d.count ? ": " : " (", d.count ? d.name.c_str() : (d.why_none + ")").c_str());
}

TEST(CudaDevice, PoolCountsLiveAndPeakBytes) {
  DAYZERO_NEED_GPU();
  DevicePool pool;
  {
    DeviceBuffer a(pool, 1 << 20);
    {
      DeviceBuffer b(pool, 3 << 20);
      EXPECT_EQ(pool.live_bytes(), 4 << 20);
    }
    DeviceBuffer c = std::move(a);  // a move hands the allocation over
    EXPECT_EQ(pool.live_bytes(), 1 << 20);
    std::vector<float> in(1000, 1.5f), out(1000);
    c.upload(in.data(), in.size() * sizeof(float));
    c.download(out.data(), out.size() * sizeof(float));
    EXPECT_EQ(in, out);
    EXPECT_THROW(c.upload(in.data(), (2 << 20)), CudaError);  // more than it holds
  }
  EXPECT_EQ(pool.live_bytes(), 0);
  EXPECT_EQ(pool.peak_bytes(), 4 << 20);
}

// Small uploads through the pinned ring: each copy carries the values the caller had when
// it queued it (the caller's memory is reused at once), the ring starts over when full
// (64 copies of 3 KB through a 64 KB ring, queued behind nothing in particular), and what
// it cannot hold is refused for the caller to copy synchronously.
TEST(CudaDevice, PinnedRingQueuesCopiesOfWhatItWasGiven) {
  DAYZERO_NEED_GPU();
  DevicePool pool;
  PinnedRing ring(64 << 10);
  std::vector<float> host(768);
  std::vector<DeviceBuffer> dst;
  for (int i = 0; i < 64; ++i) {
    for (size_t j = 0; j < host.size(); ++j) host[j] = static_cast<float>(i * 1000 + static_cast<int>(j));
    dst.emplace_back(pool, host.size() * sizeof(float));
    ASSERT_TRUE(ring.copy(dst.back(), host.data(), host.size() * sizeof(float)));
  }
  for (int i = 0; i < 64; ++i) {
    std::vector<float> out(host.size());
    dst[static_cast<size_t>(i)].download(out.data(), out.size() * sizeof(float));
    EXPECT_EQ(out[0], static_cast<float>(i * 1000)) << i;
    EXPECT_EQ(out.back(), static_cast<float>(i * 1000 + 767)) << i;
  }
  DeviceBuffer big(pool, 128 << 10);
  std::vector<char> too_many(128 << 10);
  EXPECT_FALSE(ring.copy(big, too_many.data(), too_many.size()));
  EXPECT_THROW(ring.copy(dst[0], too_many.data(), 4 << 10), CudaError);  // more than dst holds
}

// Weights and kernels' buffers are counted apart (the run's memory by the simulator's
// categories); a move keeps what a buffer holds, and reset_peak starts every count over.
TEST(CudaDevice, PoolCountsWeightsAndWorkspaceApart) {
  DAYZERO_NEED_GPU();
  DevicePool pool;
  DeviceBuffer w(pool, 2 << 20, DeviceUse::weights);
  {
    DeviceBuffer k1(pool, 1 << 20);
    DeviceBuffer k2(pool, 1 << 20);
    EXPECT_EQ(pool.live_bytes(DeviceUse::workspace), 2 << 20);
  }
  DeviceBuffer moved = std::move(w);
  EXPECT_EQ(moved.use(), DeviceUse::weights);
  EXPECT_EQ(pool.live_bytes(DeviceUse::weights), 2 << 20);
  EXPECT_EQ(pool.live_bytes(DeviceUse::workspace), 0);
  EXPECT_EQ(pool.peak_bytes(DeviceUse::workspace), 2 << 20);
  EXPECT_EQ(pool.peak_bytes(), 4 << 20);
  pool.reset_peak();
  EXPECT_EQ(pool.peak_bytes(DeviceUse::workspace), 0);
  EXPECT_EQ(pool.peak_bytes(DeviceUse::weights), 2 << 20);
  EXPECT_EQ(pool.peak_bytes(), 2 << 20);
}

// A freed kernel's buffer stays with the pool for the next request of its size class
// (same block, no cudaMalloc), and so does a KV-cache block (a sequence's delta-net
// state, freed when the sequence leaves); weights go back to the device; trim returns
// the rest. Live bytes by use stay the bytes asked for.
TEST(CudaDevice, PoolReusesFreedWorkspaceBlocks) {
  DAYZERO_NEED_GPU();
  DevicePool pool;
  void* first = nullptr;
  {
    DeviceBuffer a(pool, 1000);
    first = a.data();
  }
  EXPECT_EQ(pool.cached_bytes(), 1024);  // 1,000 bytes in a 512-byte step's block
  EXPECT_EQ(pool.live_bytes(), 0);
  {
    DeviceBuffer b(pool, 700);  // the same class: the same block
    EXPECT_EQ(b.data(), first);
    EXPECT_EQ(b.bytes(), 700u);
    EXPECT_EQ(pool.cached_bytes(), 0);
    EXPECT_EQ(pool.live_bytes(), 700);
    DeviceBuffer c(pool, 3000);  // another class: a block of its own
    EXPECT_NE(c.data(), first);
  }
  EXPECT_EQ(pool.cached_bytes(), 1024 + 3072);
  { DeviceBuffer w(pool, 5 << 20, DeviceUse::weights); }
  EXPECT_EQ(pool.cached_bytes(), 1024 + 3072);  // weights are not kept
  { DeviceBuffer big(pool, (3 << 20) + 1); }    // above 1 MiB: 2 MiB steps
  EXPECT_EQ(pool.cached_bytes(), 1024 + 3072 + (4 << 20));
  void* state = nullptr;
  {
    DeviceBuffer k(pool, 5000, DeviceUse::kv_cache);  // 5,120-byte class: a block of its own
    state = k.data();
    EXPECT_EQ(pool.live_bytes(DeviceUse::kv_cache), 5000);
  }
  EXPECT_EQ(pool.cached_bytes(), 1024 + 3072 + (4 << 20) + 5120);
  EXPECT_EQ(pool.live_bytes(DeviceUse::kv_cache), 0);
  {
    DeviceBuffer again(pool, 4900, DeviceUse::kv_cache);
    EXPECT_EQ(again.data(), state);
  }
  pool.trim();
  EXPECT_EQ(pool.cached_bytes(), 0);
  EXPECT_EQ(pool.peak_bytes(), 5 << 20);
}

}  // namespace
}  // namespace dayzero::cuda
