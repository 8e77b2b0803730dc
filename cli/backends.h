#pragma once
// The executor backends this dayzero was built with, beyond "cpu": registered once
// at startup (executor/registry.h register_backend) so that `run --backend` and
// `check`'s operator coverage see them. The CUDA backend where the toolkit was found.

namespace dayzero::cli {

void register_backends();

}  // namespace dayzero::cli
