// A plan's `dayzero run` as one MPI job (run_job.h).
#include "deploy/run_job.h"

#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace dayzero::deploy {

namespace {

std::string run_line(const RunJobOptions& o) {
  return o.dayzero + " run " + o.plan_file + " --weights " + o.weights + " --backend " + o.backend + " --prompt-len " +
         std::to_string(o.prompt_len) + " --decode-steps " + std::to_string(o.decode_steps) + " --out " + o.out;
}

// What every rank's environment needs, as comments where only the site knows the value.
void environment(std::ostream& s, const topology::Cluster& c, int nodes, bool accelerators, const std::string& indent,
                 bool slurm) {
  s << indent << "export OMP_NUM_THREADS=" << (slurm ? "${SLURM_CPUS_PER_TASK:-1}" : "1")
    << "  # one kernel thread pool per rank, sized to its cores\n";
  if (!accelerators) return;
  s << indent << "export NCCL_DEBUG=WARN                      # NCCL says why a communicator fails\n";
  const int nics = c.config().nics.per_node;
  if (nodes > 1 && nics > 0)
    s << indent << "# Between nodes the plan's collectives use the " << nics << " NIC(s) per node of cluster "
      << c.name() << ": name them for NCCL, e.g.\n"
      << indent << "# export NCCL_IB_HCA=mlx5_0,mlx5_1,...   export NCCL_SOCKET_IFNAME=<bootstrap interface>\n";
}

// The model's folder name ("DeepSeek-V3" of .../DeepSeek-V3/config.json).
std::string model_name(const plan::Plan& p) {
  if (p.model.empty()) return "the plan";
  std::filesystem::path m(p.model);
  if (m.filename() == "config.json") m = m.parent_path();
  return m.filename().string();
}

}  // namespace

RunJob run_job(const plan::Plan& p, const topology::Cluster& c, const RunJobOptions& o) {
  if (p.disaggregated.on())
    throw std::invalid_argument(
        "dayzero run executes one pool: run the prefill and the decode worker's plans as jobs of their own");
  if (!p.devices.empty())
    throw std::invalid_argument(
        "the job places rank r on its node's local device r mod devices-per-node; a plan with "
        "a \"devices\" map runs under a launcher that binds ranks by hand");
  const int world = p.world_size();
  const int g = static_cast<int>(c.devices_per_node());
  if (world > static_cast<int>(c.num_devices()))
    throw std::invalid_argument("the plan has " + std::to_string(world) + " ranks, the cluster " + c.name() + " " +
                                std::to_string(c.num_devices()) + " devices");
  RunJob j;
  j.ranks_per_node = world < g ? world : g;
  if (world % j.ranks_per_node != 0)
    throw std::invalid_argument(std::to_string(world) + " ranks do not fill nodes of " + std::to_string(g) +
                                " devices evenly");
  j.nodes = world / j.ranks_per_node;
  const bool accelerators = c.device_spec().name != "cpu-host";

  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# dayzero run of " << model_name(p) << ": " << world << " rank(s) (pp " << p.pp << ", attention tp "
    << p.attention.tp << " x dp " << p.attention.dp << ") on " << j.nodes << " node(s) of " << c.name()
    << ", one rank per " << c.device_spec().name << ". Written by `dayzero export --run-job`.\n"
    << "#SBATCH --job-name=dayzero-run\n"
    << "#SBATCH --nodes=" << j.nodes << "\n"
    << "#SBATCH --ntasks-per-node=" << j.ranks_per_node << "\n";
  if (accelerators) s << "#SBATCH --gpus-per-node=" << j.ranks_per_node << "\n";
  s << "#SBATCH --exclusive\n"
    << "#SBATCH --time=" << o.time_limit << "\n"
    << "set -euo pipefail\n";
  environment(s, c, j.nodes, accelerators, "", true);
  // srun starts the ranks in plan order, node by node; each rank binds the device of
  // its local rank (closest to its cores) and its cores.
  s << "srun --mpi=pmix --cpu-bind=cores" << (accelerators ? " --gpus-per-task=1 --gpu-bind=closest" : "") << " \\\n  "
    << run_line(o) << "\n";
  j.slurm = s.str();

  std::ostringstream h;
  const auto& names = c.config().node_names;
  for (int n = 0; n < j.nodes; ++n)
    h << (static_cast<size_t>(n) < names.size() ? names[n] : "n" + std::to_string(n)) << " slots=" << j.ranks_per_node
      << "\n";
  j.hostfile = h.str();
  j.mpirun = "mpirun -np " + std::to_string(world) +
             " --hostfile hostfile --map-by ppr:" + std::to_string(j.ranks_per_node) +
             ":node --bind-to core -x OMP_NUM_THREADS" + (accelerators ? " -x NCCL_DEBUG" : "") + " " + run_line(o);
  return j;
}

}  // namespace dayzero::deploy
