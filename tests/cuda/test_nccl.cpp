// The NCCL communicator (cuda/nccl_communicator.h): a clear error without a GPU (CI),
// and on a GPU a world of one rank (the GPU machine has one: NCCL refuses two ranks on
// one device) through every collective and a whole run of the tiny Llama.
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../executor/golden.h"
#include "cuda/backend.h"
#include "cuda/kernels.h"
#include "cuda/staging.h"
#include "executor/runner.h"
#include "gpu.h"

namespace dayzero::cuda {
namespace {

TEST(Nccl, WithoutAGpuEveryRankIsToldWhy) {
  if (probe_cuda().count > 0) GTEST_SKIP() << "a GPU is present: the world below checks it";
  executor::SelfCommunicator world;
  try {
    make_nccl_communicator(world, 10);
    FAIL() << "expected an error";
  } catch (const executor::AllRanksError& e) {
#ifdef DAYZERO_HAVE_NCCL
    EXPECT_NE(std::string(e.what()).find("backend 'cuda': no CUDA device"), std::string::npos) << e.what();
#else
    EXPECT_NE(std::string(e.what()).find("built without NCCL"), std::string::npos) << e.what();
#endif
  }
}

#ifdef DAYZERO_HAVE_NCCL
TEST(Nccl, AWorldOfOneRankCarriesEveryCollective) {
  DAYZERO_NEED_GPU();
  executor::SelfCommunicator world;
  const auto comm = make_nccl_communicator(world, 60);
  ASSERT_EQ(comm->size(), 1);
  EXPECT_EQ(comm->rank(), 0);
  std::vector<float> v = {1.5f, -2.0f, 3.25f};
  comm->all_reduce_sum(v);
  EXPECT_EQ(v, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  std::vector<float> g(3);
  comm->all_gather(v, g);
  EXPECT_EQ(g, v);
  std::vector<float> rs(3);
  comm->reduce_scatter_sum(v, rs);
  EXPECT_EQ(rs, v);
  std::vector<float> back(3);
  const std::vector<int64_t> counts = {3};
  comm->all_to_all_v(v, counts, back, counts);
  EXPECT_EQ(back, v);
  comm->barrier();
  const std::string text = "unique";
  const auto bytes = comm->all_gather_bytes(std::as_bytes(std::span<const char>(text.data(), text.size())));
  ASSERT_EQ(bytes.size(), 1u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes[0].data()), bytes[0].size()), text);
  const auto group = comm->split(0, 0);
  EXPECT_EQ(group->size(), 1);
  group->all_reduce_sum(v);
  EXPECT_EQ(v[0], 1.5f);
  EXPECT_THROW(comm->split(-1, 0), std::invalid_argument);
}

// A tensor's values on the device are the collective's buffers: what NCCL carries stays
// there (nothing comes back), and the results are the host path's.
TEST(Nccl, DeviceValuesAreCarriedWhereTheyLie) {
  DAYZERO_NEED_GPU();
  register_cuda_backend();
  executor::SelfCommunicator world;
  const auto comm = make_nccl_communicator(world, 60);
  const std::vector<float> v = {1.5f, -2.0f, 3.25f, 0.125f};
  executor::TensorValues on_device = staging::result({4}, staging::upload(std::span<const float>(v))).data;
  ASSERT_FALSE(on_device.host_valid());
  const int64_t downloads = executor::TensorValues::downloads();
  executor::TensorValues back(v.size());
  const std::vector<int64_t> counts = {4};
  comm->all_to_all_v(on_device, counts, back, counts);  // one rank: a group of a send and a recv to itself
  EXPECT_FALSE(back.host_valid()) << "the received values are on the device";
  comm->all_reduce_sum(back);  // gathered and summed on the device: its own values again
  EXPECT_FALSE(back.host_valid());
  EXPECT_EQ(executor::TensorValues::downloads(), downloads) << "a collective brought its buffer to the host";
  EXPECT_EQ(std::vector<float>(std::as_const(back).begin(), std::as_const(back).end()), v);
  EXPECT_EQ(executor::TensorValues::downloads(), downloads + 1);  // the read above
  executor::TensorValues on_host(v.begin(), v.end()), host_back(v.size());
  comm->all_to_all_v(on_host, counts, host_back, counts);  // host values: staged up and back
  EXPECT_TRUE(host_back.host_valid());
  EXPECT_EQ(host_back, v);
}

// The rank-order sum of the device all-reduce: the host's float adds, bit for bit.
TEST(Nccl, BlocksAreSummedInRankOrderAsOnTheHost) {
  DAYZERO_NEED_GPU();
  constexpr int64_t kN = 1000, kRanks = 5;
  std::vector<float> blocks(static_cast<size_t>(kN * kRanks));
  for (size_t i = 0; i < blocks.size(); ++i)  // magnitudes far apart, so the order shows in the rounding
    blocks[i] = (i % 3 == 0 ? 1e7f : 1.0f) * (0.37f * static_cast<float>(i % 101) - 17.0f);
  DevicePool pool;
  DeviceBuffer d(pool, blocks.size() * sizeof(float)), out(pool, kN * sizeof(float));
  d.upload(blocks.data(), d.bytes());
  sum_blocks_f32(d, kN, kRanks, out);
  std::vector<float> got(kN);
  out.download(got.data(), got.size() * sizeof(float));
  for (int64_t i = 0; i < kN; ++i) {
    float s = blocks[static_cast<size_t>(i)];
    for (int64_t r = 1; r < kRanks; ++r) s += blocks[static_cast<size_t>(r * kN + i)];
    EXPECT_EQ(got[static_cast<size_t>(i)], s) << i;
  }
  EXPECT_THROW(sum_blocks_f32(d, kN + 1, kRanks, out), CudaError);
}

// A whole run on the CUDA backend with NCCL carrying its (one-rank) groups.
TEST(Nccl, TinyLlamaRunsOverNcclAsOverMpi) {
  DAYZERO_NEED_GPU();
  register_cuda_backend();
  const std::string dir = executor::testing::tiny_dir("llama");
  const model::Model m = model::load_model(dir);
  const auto g = executor::testing::read_golden(dir);
  executor::SelfCommunicator world;
  const auto comm = make_nccl_communicator(world, 60);
  executor::RunnerOptions o;
  o.backend = "cuda";
  plan::Plan p;
  p.model = m.config.source;
  p.dtypes.kv_cache = plan::KvDtype::fp32;
  executor::Runner runner(m, p, *comm, dir, o);
  const auto r = runner.run(g.prompt, static_cast<int64_t>(g.generated.size()) - 1);
  ASSERT_EQ(r.sequences.size(), 1u);
  EXPECT_EQ(r.sequences[0].tokens, g.generated);
}
#endif

}  // namespace
}  // namespace dayzero::cuda
