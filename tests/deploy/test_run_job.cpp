// dayzero run of a plan as one MPI job (deploy/run_job.h).
#include <gtest/gtest.h>

#include "deploy/run_job.h"
#include "deploy_fixture.h"

namespace dayzero::deploy {
namespace {

TEST(RunJob, RanksFillNodesInPlanOrder) {
  const testing::World w = testing::world("DeepSeek-V3", "h200-4x8");
  plan::Plan p = testing::layout(1, 1, 32, {1, 32, 1}, 1024);
  p.model = "/somewhere/DeepSeek-V3/config.json";
  RunJobOptions o;
  o.weights = "/data/ds";
  const RunJob j = run_job(p, w.cluster, o);
  EXPECT_EQ(j.nodes, 4);
  EXPECT_EQ(j.ranks_per_node, 8);
  EXPECT_NE(j.slurm.find("#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8"),
            std::string::npos)
      << j.slurm;
  EXPECT_NE(j.slurm.find("dayzero run of DeepSeek-V3: 32 rank(s)"), std::string::npos) << j.slurm;
  EXPECT_NE(j.slurm.find("--gpu-bind=closest"), std::string::npos);
  EXPECT_NE(j.slurm.find("NCCL_IB_HCA"), std::string::npos);  // four nodes: the NICs matter
  EXPECT_NE(j.slurm.find("dayzero run plan.json --weights /data/ds"), std::string::npos);
  EXPECT_EQ(j.hostfile, "n0 slots=8\nn1 slots=8\nn2 slots=8\nn3 slots=8\n");
  EXPECT_EQ(j.mpirun.rfind("mpirun -np 32 --hostfile hostfile --map-by ppr:8:node", 0), 0u) << j.mpirun;
  // Four ranks: one node, part of it.
  const RunJob small = run_job(testing::layout(1, 4, 1, {4, 1, 1}, 64), w.cluster, o);
  EXPECT_EQ(small.nodes, 1);
  EXPECT_EQ(small.ranks_per_node, 4);
  EXPECT_EQ(small.slurm.find("NCCL_IB_HCA"), std::string::npos);
}

TEST(RunJob, WhatOneMpiJobCannotRun) {
  const testing::World w = testing::world("DeepSeek-V3", "h200-2x8");
  plan::Plan pools = testing::layout(1, 8, 1, {8, 1, 1}, 64);
  pools.disaggregated = {1, 1, {1, {8, 1}, {8, 1, 1}, 8}};
  EXPECT_THROW(run_job(pools, w.cluster, {}), std::invalid_argument);
  EXPECT_THROW(run_job(testing::layout(1, 4, 3, {1, 12, 1}, 96), w.cluster, {}), std::invalid_argument);  // 12 on 8s
  EXPECT_THROW(run_job(testing::layout(1, 8, 4, {1, 32, 1}, 96), w.cluster, {}), std::invalid_argument);  // 32 > 16
  plan::Plan mapped = testing::layout(1, 2, 1, {2, 1, 1}, 8);
  mapped.devices = {0, 9};
  EXPECT_THROW(run_job(mapped, w.cluster, {}), std::invalid_argument);
}

}  // namespace
}  // namespace dayzero::deploy
