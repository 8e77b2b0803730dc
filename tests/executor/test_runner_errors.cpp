// The runner's refusals, each naming the plan file, the field and the value: plans for
// more ranks than run, shards that do not split evenly, another model's plan, missing
// weights, bad prompts; and a registered backend checked against the model and begun
// before any weight is read.
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

#include "core/error.h"
#include "executor/registry.h"
#include "executor/runner.h"
#include "golden.h"

namespace dayzero::executor {
namespace {

using testing::fixture_plan;
using testing::tiny_dir;

// A communicator that claims 2 ranks (for the plan checks only: nothing is sent).
class TwoRanks final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void all_reduce_sum(std::span<float>) override { fail(); }
  void all_gather(std::span<const float>, std::span<float>) override { fail(); }
  void reduce_scatter_sum(std::span<const float>, std::span<float>) override { fail(); }
  void all_to_all_v(std::span<const float>, std::span<const int64_t>, std::span<float>,
                    std::span<const int64_t>) override {
    fail();
  }
  void send(std::span<const float>, int) override { fail(); }
  void recv(std::span<float>, int) override { fail(); }
  void barrier() override { fail(); }
  std::unique_ptr<Communicator> split(int, int) override { return std::make_unique<SelfCommunicator>(); }
  std::vector<std::vector<std::byte>> all_gather_bytes(std::span<const std::byte> d) override {
    return {std::vector<std::byte>(d.begin(), d.end()), {}};
  }

 private:
  [[noreturn]] static void fail() { throw std::logic_error("TwoRanks: no collectives in this test"); }
};

std::string error_of(const model::Model& m, const plan::Plan& p, Communicator& comm, const std::string& weights) {
  try {
    Runner r(m, p, comm, weights, {0, "my_plan.json"});
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// A backend from a library above the executor (cuda/) registers itself; the runner
// checks its table against the model, then calls its begin_run hook before reading
// weights, so a backend that cannot run here (no device) stops the run up front.
int g_begun = 0;
void begin_without_device() {
  ++g_begun;
  throw std::runtime_error("backend 'hooked': no device here");
}
const KernelEntry kNormOnly[] = {{model::OpKind::norm, "rms", &rms_norm, &op_cost}};

TEST(RunnerErrors, RegisteredBackendsAreCheckedThenBegun) {
  register_backend({"norm-only", kNormOnly, &begin_without_device});
  register_backend({"norm-only", cpu_kernel_table(), nullptr});  // a name registers once: the first stays
  register_backend({"hooked", cpu_kernel_table(), &begin_without_device});
  EXPECT_EQ(find_backend("norm-only").kernels.size(), 1u);
  bool listed = false;
  for (const auto& b : backend_registry())
    if (b.name == "norm-only") listed = b.available && b.ops == std::vector<OpVariant>{{model::OpKind::norm, "rms"}};
  EXPECT_TRUE(listed);
  const model::Model m = model::load_model(tiny_dir("llama"));
  SelfCommunicator one;
  RunnerOptions o;
  o.backend = "norm-only";
  try {
    Runner r(m, fixture_plan(m), one, tiny_dir("llama"), o);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("backend 'norm-only' has no kernel for"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g_begun, 0);  // the table's gap first, before the hook
  o.backend = "hooked";
  try {
    Runner r(m, fixture_plan(m), one, tiny_dir("llama"), o);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("backend 'hooked': no device here"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g_begun, 1);
}

TEST(RunnerErrors, PlanForMoreRanksThanRun) {
  const model::Model m = model::load_model(tiny_dir("llama"));
  plan::Plan p = fixture_plan(m);
  p.attention.tp = 2;
  SelfCommunicator one;
  const std::string e = error_of(m, p, one, tiny_dir("llama"));
  EXPECT_NE(e.find("my_plan.json"), std::string::npos) << e;
  EXPECT_NE(e.find("attention.tp"), std::string::npos) << e;
  EXPECT_NE(e.find("needs 2 ranks but 1 rank"), std::string::npos) << e;
}

// What the shards need beyond validate_plan: even splits, experts not fused.
TEST(RunnerErrors, ShardsThatDoNotSplitEvenly) {
  const model::Model llama = model::load_model(tiny_dir("llama"));
  TwoRanks two;
  plan::Plan tp = fixture_plan(llama);
  tp.attention.tp = 2;
  model::Model odd = llama;  // 5 heads do not split over 2 ranks
  odd.config.num_heads = 5;
  const std::string e = error_of(odd, tp, two, tiny_dir("llama"));
  EXPECT_NE(e.find("'attention.tp' = 2"), std::string::npos) << e;
  EXPECT_NE(e.find("5 attention heads"), std::string::npos) << e;
  const model::Model oss = model::load_model(tiny_dir("gpt_oss"));
  plan::Plan mtp = fixture_plan(oss);
  mtp.attention.tp = 2;
  mtp.moe.tp = 2;
  const std::string e2 = error_of(oss, mtp, two, tiny_dir("gpt_oss"));
  EXPECT_NE(e2.find("'moe.tp' = 2"), std::string::npos) << e2;
  EXPECT_NE(e2.find("fused"), std::string::npos) << e2;
}

// A dense TP = 2 plan is accepted on two ranks (weights sharded at load; collectives only when it runs).
TEST(Runner, AcceptsDenseTensorParallelPlan) {
  const model::Model m = model::load_model(tiny_dir("qwen3"));
  plan::Plan p = fixture_plan(m);
  p.attention.tp = 2;
  TwoRanks two;
  EXPECT_EQ(error_of(m, p, two, tiny_dir("qwen3")), "");
}

TEST(RunnerErrors, PlanForAnotherModel) {
  const model::Model llama = model::load_model(tiny_dir("llama"));
  const model::Model qwen3 = model::load_model(tiny_dir("qwen3"));
  SelfCommunicator one;
  const std::string e = error_of(llama, fixture_plan(qwen3), one, tiny_dir("llama"));
  EXPECT_NE(e.find("'model'"), std::string::npos) << e;
  EXPECT_NE(e.find("another model"), std::string::npos) << e;
  plan::Plan experts = fixture_plan(llama);  // fits the rank count, not the (dense) model
  experts.moe.ep = 2;
  const std::string e2 = error_of(llama, experts, one, tiny_dir("llama"));
  EXPECT_NE(e2.find("moe"), std::string::npos) << e2;
}

TEST(RunnerErrors, MissingWeights) {
  const model::Model m = model::load_model(tiny_dir("llama"));
  SelfCommunicator one;
  const std::string e = error_of(m, fixture_plan(m), one, "/nonexistent/weights");
  EXPECT_NE(e.find("weights directory '/nonexistent/weights' does not exist"), std::string::npos) << e;
  const auto empty = std::filesystem::temp_directory_path() / "dayzero_runner_empty_weights";
  std::filesystem::create_directories(empty);
  EXPECT_NE(error_of(m, fixture_plan(m), one, empty.string()).find("no model.safetensors"), std::string::npos);
}

TEST(Runner, RejectsBadPrompts) {
  const model::Model m = model::load_model(tiny_dir("llama"));
  SelfCommunicator one;
  Runner r(m, fixture_plan(m), one, tiny_dir("llama"));
  const std::vector<int64_t> bad{1, 100000};
  EXPECT_THROW(r.run(bad, 1), std::runtime_error);
}

}  // namespace
}  // namespace dayzero::executor
