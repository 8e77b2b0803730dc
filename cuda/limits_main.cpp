// cuda-limits: what this machine's GPU 0 reaches, measured (cuda/limits.h): HBM copy
// bandwidth at 256 MiB and 1 GiB, cuBLASLt's BF16 and FP8 GEMMs at 8192^3, and the
// backend's reference GEMM at 2048^3.
//
//   cuda-limits [--json FILE]
//
// Exit status: 0 when measured, 2 when there is no GPU (the runtime's reason is
// printed), 1 on a CUDA error.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>

#include "cuda/device.h"
#include "cuda/limits.h"

using namespace dayzero::cuda;

namespace {
constexpr int kWarmup = 5, kIterations = 20;  // nccl-tests' defaults are 5 and 20 as well

std::string json_line(const char* what, const Measured& m) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"what\": \"%s\", \"bytes\": %lld, \"flops\": %.6g, \"iterations\": %d, \"mean_s\": %.6g, "
                "\"bytes_per_s\": %.6g, \"flops_per_s\": %.6g}",
                what, static_cast<long long>(m.bytes), m.flops, m.iterations, m.mean_s, m.bytes_per_s(),
                m.flops_per_s());
  return buf;
}
}  // namespace

int main(int argc, char** argv) {
  std::string json_file;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json_file = argv[++i];
    } else {
      std::fprintf(stderr, "usage: cuda-limits [--json FILE]\n");
      return 1;
    }
  }
  const CudaDevices d = probe_cuda();
  if (d.count == 0) {
    std::printf("cuda-limits: no GPU (%s)\n", d.why_none.c_str());
    return 2;
  }
  try {
    DevicePool pool(0);
    std::printf("GPU 0: %s (sm_%d%d), %.1f GiB, runtime %d, driver %d\n", d.name.c_str(), d.compute_major,
                d.compute_minor, static_cast<double>(d.total_bytes) / (1u << 30), d.runtime_version, d.driver_version);
    std::string out = "[";
    for (const int64_t mib : {256, 1024}) {
      const Measured m = measure_copy(pool, mib << 20, kWarmup, kIterations);
      std::printf("  copy %5lld MiB device to device: %8.3f ms, %7.1f GB/s (read + written)\n",
                  static_cast<long long>(mib), m.mean_s * 1e3, m.bytes_per_s() / 1e9);
      out += json_line(("copy " + std::to_string(mib) + " MiB").c_str(), m) + ", ";
    }
    for (const auto& [in, name] : {std::pair{GemmInputs::bf16, "bf16"}, std::pair{GemmInputs::fp8, "fp8"}}) {
      const Measured b = measure_blas_gemm(pool, in, 8192, 8192, 8192, kWarmup, kIterations);
      std::printf("  cuBLASLt GEMM 8192^3 (%s in, float32 out): %8.3f ms, %7.1f TFLOP/s\n", name, b.mean_s * 1e3,
                  b.flops_per_s() / 1e12);
      out += json_line((std::string("cublaslt gemm 8192^3 ") + name).c_str(), b) + ", ";
    }
    const Measured g = measure_reference_gemm(pool, 2048, 2048, 2048, 2, 5);
    std::printf("  reference GEMM 2048^3 (float32, the backend's own kernel): %8.3f ms, %7.2f TFLOP/s\n",
                g.mean_s * 1e3, g.flops_per_s() / 1e12);
    out += json_line("reference gemm 2048^3 f32", g) + "]\n";
    if (!json_file.empty()) {
      std::ofstream f(json_file);
      f << out;
      if (!f) throw CudaError("cannot write " + json_file);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda-limits: %s\n", e.what());
    return 1;
  }
  return 0;
}
