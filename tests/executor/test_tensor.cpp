// Tensor storage counts its bytes (executor/tensor.h): the live total, the peak, and
// the scopes a run measures its activations with.
#include <gtest/gtest.h>

#include "executor/tensor.h"

namespace dayzero::executor {
namespace {

TEST(TensorBytes, LiveAndPeakFollowAllocations) {
  const int64_t base = tensor_bytes_live();
  reset_tensor_peak();
  {
    Tensor a({10, 10});  // 400 B
    EXPECT_EQ(tensor_bytes_live(), base + 400);
    {
      Tensor b = a;  // a copy holds its own 400 B
      EXPECT_EQ(tensor_bytes_live(), base + 800);
    }
    Tensor c = std::move(a);  // a move takes the storage: no new bytes
    EXPECT_EQ(tensor_bytes_live(), base + 400);
  }
  EXPECT_EQ(tensor_bytes_live(), base);
  EXPECT_EQ(tensor_bytes_peak(), base + 800);
}

TEST(TensorBytes, ScopeKeepsItsHighWaterMarkAndExcludedScopesDoNotCount) {
  Tensor held({100});  // live before the scope: not the scope's
  int64_t most = 0;
  {
    const TensorPeakScope step(&most);
    Tensor x({25});  // 100 B
    {
      const TensorPeakExcluded timing;
      Tensor repeat({1000});  // 4,000 B a timer's repeat would allocate: left out
    }
    Tensor y({50});  // 200 B: x and y together are the scope's most, 300 B
  }
  EXPECT_EQ(most, 300);
  {
    const TensorPeakScope smaller(&most);
    Tensor z({10});
  }
  EXPECT_EQ(most, 300);  // the largest scope's
}

}  // namespace
}  // namespace dayzero::executor
