// ThreadWorld (executor/thread_world.h): N ranks as threads of one process. Its
// collectives against what MpiCommunicator computes, a failing or missing rank
// stopping every rank, and sharded plans of the tiny fixtures equal to one rank.
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <string>

#include "executor/thread_world.h"
#include "sharded.h"

namespace dayzero::executor {
namespace {

TEST(ThreadWorld, CollectivesAsMpiComputesThem) {
  ThreadWorld world(3);
  world.run([](Communicator& c) {
    const int r = c.rank();
    ASSERT_EQ(c.size(), 3);
    std::vector<float> v = {1.0f + static_cast<float>(r), 0.1f * static_cast<float>(r)};
    c.all_reduce_sum(v);
    EXPECT_EQ(v[0], (1.0f + 2.0f) + 3.0f);  // rank order
    EXPECT_EQ(v[1], (0.0f + 0.1f) + 0.2f);
    std::vector<float> all(6);
    c.all_gather(std::vector<float>{static_cast<float>(r), -static_cast<float>(r)}, all);
    EXPECT_EQ(all, (std::vector<float>{0, -0.0f, 1, -1, 2, -2}));
    std::vector<float> mine(1);
    c.reduce_scatter_sum(std::vector<float>{1, 10, 100}, mine);
    const float blocks[] = {1, 10, 100};
    EXPECT_EQ(mine[0], 3.0f * blocks[r]);
    // Rank r sends r + 1 copies of its rank to each peer.
    const std::vector<int64_t> send_counts(3, r + 1), recv_counts = {1, 2, 3};
    std::vector<float> send(static_cast<size_t>(3 * (r + 1)), static_cast<float>(r)), recv(6);
    c.all_to_all_v(send, send_counts, recv, recv_counts);
    EXPECT_EQ(recv, (std::vector<float>{0, 1, 1, 2, 2, 2}));
    std::vector<float> token(1);  // a ring: each sends to the next, receives from the previous
    c.send(std::vector<float>{static_cast<float>(r)}, (r + 1) % 3);
    c.recv(token, (r + 2) % 3);
    EXPECT_EQ(token[0], static_cast<float>((r + 2) % 3));
    c.barrier();
    // Split: {0, 2} (key reversed: rank 2 first) and {1}.
    const auto g = c.split(r % 2, -r);
    EXPECT_EQ(g->size(), r % 2 == 0 ? 2 : 1);
    EXPECT_EQ(g->rank(), r == 2 ? 0 : (r == 0 ? 1 : 0));
    std::vector<float> one = {static_cast<float>(r)};
    g->all_reduce_sum(one);
    EXPECT_EQ(one[0], r % 2 == 0 ? 2.0f : 1.0f);
    const std::string text(static_cast<size_t>(r), 'x');
    const auto bytes = c.all_gather_bytes(std::as_bytes(std::span<const char>(text.data(), text.size())));
    for (int k = 0; k < 3; ++k) EXPECT_EQ(bytes[static_cast<size_t>(k)].size(), static_cast<size_t>(k));
  });
}

TEST(ThreadWorld, AFailingRankStopsEveryRank) {
  ThreadWorld world(3);
  try {
    world.run([](Communicator& c) {
      if (c.rank() == 1) throw std::runtime_error("rank one cannot");
      c.barrier();  // the others would wait here for ever
    });
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "rank one cannot");  // the rank's own error, not the others'
  }
  ThreadWorld slow(2, 0.2);  // a rank that never arrives: the other times out
  EXPECT_THROW(slow.run([](Communicator& c) {
    if (c.rank() == 0) c.barrier();
  }),
               CollectiveTimeout);
}

// Sharded plans on the CPU backend, one process: TP=2 (dense and MoE), EP=2 (the same
// cases tests/cuda runs on one GPU).
TEST(ThreadWorld, ShardedTinyFixturesEqualOneRank) {
  for (const auto& [family, tp, ep] :
       {std::tuple{"llama", 2, 1}, std::tuple{"qwen3_moe", 2, 2}, std::tuple{"mixtral", 2, 1},
        std::tuple{"deepseek_v3", 2, 2}, std::tuple{"gpt_oss", 2, 2}}) {
    const auto c = testing::sharded_vs_one_rank(family, tp, ep, "cpu");
    EXPECT_TRUE(c.tokens_equal) << family;
    EXPECT_LE(c.max_logit_diff, testing::kShardTolerance) << family;
    EXPECT_TRUE(c.repeat_identical) << family;
    std::printf("%s tp %d ep %d on 2 threads: max |logit diff| %.3g against 1 rank\n", family, tp, ep,
                c.max_logit_diff);
  }
}

}  // namespace
}  // namespace dayzero::executor
