#pragma once
// A plan run for real by DayZero's own executor (`dayzero run`, one MPI rank per
// device) on a multi-node cluster: a Slurm batch script, and the plain-MPI
// alternative (a host file and its mpirun line). Ranks fill nodes in order, as the
// plan numbers them (TP innermost); each rank takes the device of its local rank.

#include <string>

#include "plan/plan.h"
#include "topology/cluster.h"

namespace dayzero::deploy {

struct RunJobOptions {
  std::string plan_file = "plan.json";          // the plan as the job reads it
  std::string weights = "/path/to/checkpoint";  // `dayzero run --weights`
  std::string backend = "cpu";                  // `dayzero run --backend`
  std::string out = "measurements.json";
  int64_t prompt_len = 128;
  int64_t decode_steps = 16;
  std::string dayzero = "dayzero";  // the binary as the nodes find it
  std::string time_limit = "00:30:00";
};

struct RunJob {
  int nodes = 1, ranks_per_node = 1;
  std::string slurm;     // sbatch script
  std::string hostfile;  // Open MPI host file
  std::string mpirun;    // the mpirun line over the host file
};

// Throws std::invalid_argument when the plan cannot run as one MPI job: a
// disaggregated plan (run each worker's plan), ranks that do not fill whole nodes, a
// custom rank-to-device map, more ranks than the cluster has devices.
RunJob run_job(const plan::Plan& p, const topology::Cluster& c, const RunJobOptions& o);

}  // namespace dayzero::deploy
