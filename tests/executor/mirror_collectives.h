#pragma once
// Collectives over "cpu-mirror"'s device copies (mirror_backend.h): a Communicator
// decorator that does for the mirror what NcclCommunicator does for the CUDA backend's
// device values (cuda/nccl_communicator.h). A tensor's values that a kernel left on the
// mirror are the collective's buffers where they lie, and its result goes back there,
// so the forward's collectives bring nothing to the host; the inner communicator
// carries the values. CI checks with it that the forward hands its collectives the
// tensors (not host copies) and that the sharded results stay those of one rank.
#include <cstdint>
#include <memory>

#include "executor/communicator.h"

namespace dayzero::executor::testing {

// Collectives the decorators of this process carried on mirror values (not through the
// host) since the process began.
int64_t mirror_collectives_on_device();

// `inner` (which must outlive the result) with the tensors' collectives on the mirror;
// its splits are decorated alike.
std::unique_ptr<Communicator> mirror_collectives(Communicator& inner);

}  // namespace dayzero::executor::testing
