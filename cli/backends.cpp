#include "cli/backends.h"

#ifdef DAYZERO_CLI_CUDA
#include "cuda/backend.h"
#endif

namespace dayzero::cli {

void register_backends() {
#ifdef DAYZERO_CLI_CUDA
  cuda::register_cuda_backend();  // needs no GPU: a run without one fails naming the runtime's reason
#endif
}

}  // namespace dayzero::cli
