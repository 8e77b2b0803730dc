#include "cli/backends.h"

#include <cstdlib>
#include <stdexcept>

#ifdef DAYZERO_CLI_CUDA
#include "cuda/backend.h"
#include "cuda/device.h"
#endif

namespace dayzero::cli {

void register_backends() {
#ifdef DAYZERO_CLI_CUDA
  cuda::register_cuda_backend();  // needs no GPU: a run without one fails naming the runtime's reason
#endif
}

namespace {
// This rank's vote for NCCL under "auto": a GPU per rank on this node.
bool gpu_per_rank() {
#if defined(DAYZERO_CLI_CUDA) && defined(DAYZERO_HAVE_NCCL)
  int local = 1;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    if (const char* v = std::getenv(name)) {
      local = std::atoi(v);
      break;
    }
  const int gpus = cuda::probe_cuda().count;
  return gpus > 0 && local >= 1 && local <= gpus;
#else
  return false;
#endif
}
}  // namespace

std::unique_ptr<executor::Communicator> collectives_for(const std::string& comm, const std::string& backend,
                                                        executor::Communicator& world, double timeout_s) {
  if (comm == "mpi") return nullptr;
  if (comm == "nccl" && backend != "cuda")
    throw std::runtime_error("--comm nccl carries GPU buffers: it needs --backend cuda, not '" + backend + "'");
  bool nccl = comm == "nccl";
  if (comm == "auto") {
    if (backend != "cuda") return nullptr;
    const std::byte vote{static_cast<unsigned char>(gpu_per_rank() ? 1 : 0)};
    nccl = true;
    for (const auto& v : world.all_gather_bytes(std::span<const std::byte>(&vote, 1)))
      nccl = nccl && !v.empty() && v[0] == std::byte{1};
    if (!nccl) return nullptr;
  }
#ifdef DAYZERO_CLI_CUDA
  return cuda::make_nccl_communicator(world, timeout_s);
#else
  (void)timeout_s;
  throw std::runtime_error("--comm nccl: this dayzero was built without CUDA");
#endif
}

}  // namespace dayzero::cli
