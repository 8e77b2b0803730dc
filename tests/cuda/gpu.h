#pragma once
// Skips a CUDA test where there is no GPU (CI), or fails it when DAYZERO_REQUIRE_GPU=1
// (tests/gpu/run.sh: a GPU machine that sees none is a broken check, not a skip).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cuda/device.h"

#define DAYZERO_NEED_GPU()                                                                             \
  do {                                                                                                 \
    const auto devices_ = ::dayzero::cuda::probe_cuda();                                               \
    if (devices_.count == 0) {                                                                         \
      const char* require_ = std::getenv("DAYZERO_REQUIRE_GPU");                                       \
      if (require_ && std::string(require_) == "1") FAIL() << "no GPU: " << devices_.why_none;         \
      GTEST_SKIP() << "no GPU (" << devices_.why_none << "): the CUDA checks run in tests/gpu/run.sh"; \
    }                                                                                                  \
  } while (0)
