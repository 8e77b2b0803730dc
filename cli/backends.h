#pragma once
// The executor backends this dayzero was built with, beyond "cpu": registered once
// at startup (executor/registry.h register_backend) so that `run --backend` and
// `check`'s operator coverage see them. The CUDA backend where the toolkit was found.

#include <memory>
#include <string>

#include "executor/communicator.h"

namespace dayzero::cli {

void register_backends();

// What carries a run's collectives under mpirun (`run --comm`): null for the MPI world
// itself, or an NCCL communicator over it. "nccl" needs --backend cuda and NCCL;
// "auto" takes NCCL when the backend is cuda, NCCL is built and every rank has a GPU
// of its own (the ranks on a node no more than its GPUs; decided by all ranks
// together), else MPI. Collective over `world`.
std::unique_ptr<executor::Communicator> collectives_for(const std::string& comm, const std::string& backend,
                                                        executor::Communicator& world, double timeout_s);

}  // namespace dayzero::cli
