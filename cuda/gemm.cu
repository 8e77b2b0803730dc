#include "cuda/gemm.h"

#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "cuda/check.cuh"
#include "cuda/cublaslt.cuh"

namespace dayzero::cuda {

namespace {
const detail::CublasLt& lt() { return detail::cublaslt(); }

void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw CudaError(std::string(call) + ": " + lt().status_name(s) + " (" + lt().status_string(s) + ")");
}

void need(const DeviceBuffer& b, int64_t elems, size_t elem_bytes, const char* op, const char* what) {
  if (elems < 0 || b.bytes() < static_cast<size_t>(elems) * elem_bytes)
    throw CudaError(std::string(op) + ": " + what + " holds " + std::to_string(b.bytes()) + " bytes, fewer than " +
                    std::to_string(elems) + " elements of " + std::to_string(elem_bytes));
}

// The descriptors of one matmul, destroyed with it.
struct Matmul {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Matmul() {
    if (pref) lt().preference_destroy(pref);
    if (c) lt().layout_destroy(c);
    if (b) lt().layout_destroy(b);
    if (a) lt().layout_destroy(a);
    if (op) lt().desc_destroy(op);
  }
};
}  // namespace

struct Blas::Impl {
  cublasLtHandle_t handle = nullptr;
  DeviceBuffer workspace;
  // A shape's descriptors and the heuristic's algorithm, made once and kept: asking the
  // heuristic on every call cost each GEMM its host time again (the H200 run's decode
  // GEMMs of 8 MB took 22 us against 2 us of streaming). The heuristic assumes
  // cuBLASLt's default 256-byte alignment either way. Kept up to kMaxPlans shapes
  // (serving's steps vary m): past that the cache starts again.
  struct Plan {
    Matmul mm;
    cublasLtMatmulAlgo_t algo{};
  };
  static constexpr size_t kMaxPlans = 4096;
  // How A (W) and B (x) are scaled: not at all, one float32 each, or by blocks.
  enum class Scaling { none, tensor, blocks };
  std::map<std::tuple<int, int64_t, int64_t, int64_t, Scaling>, std::unique_ptr<Plan>> plans;

  // Column-major C [n, m] = A^T B with A = W [k, n] (ld k), B = x [k, m] (ld k), C = y
  // (ld n): the row-major y = x W^T. Scaled (FP8): A's and B's scales are device
  // pointers set per call.
  Plan& plan(cudaDataType_t in, int64_t m, int64_t n, int64_t k, Scaling scaling) {
    const auto key = std::make_tuple(static_cast<int>(in), m, n, k, scaling);
    if (const auto it = plans.find(key); it != plans.end()) return *it->second;
    if (plans.size() >= kMaxPlans) plans.clear();
    auto p = std::make_unique<Plan>();
    Matmul& mm = p->mm;
    check(lt().desc_create(&mm.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    check(lt().desc_set_attribute(mm.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "set TRANSA");
    check(lt().desc_set_attribute(mm.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "set TRANSB");
    const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
    check(lt().layout_create(&mm.a, in, u(k), u(n), k), "cublasLtMatrixLayoutCreate (W)");
    check(lt().layout_create(&mm.b, in, u(k), u(m), k), "cublasLtMatrixLayoutCreate (x)");
    check(lt().layout_create(&mm.c, CUDA_R_32F, u(n), u(m), n), "cublasLtMatrixLayoutCreate (y)");
    check(lt().preference_create(&mm.pref), "cublasLtMatmulPreferenceCreate");
    const size_t ws = workspace.bytes();
    check(lt().preference_set_attribute(mm.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
          "set MAX_WORKSPACE_BYTES");
    if (scaling == Scaling::blocks) set_block_modes(mm.op);
    if (scaling != Scaling::none) {  // the heuristic sees a scaled matmul (any pointers: set again per call)
      const void* none = workspace.data();
      check(lt().desc_set_attribute(mm.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &none, sizeof none),
            "set A_SCALE_POINTER");
      check(lt().desc_set_attribute(mm.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &none, sizeof none),
            "set B_SCALE_POINTER");
    }
    cublasLtMatmulHeuristicResult_t best{};
    int found = 0;
    check(lt().algo_get_heuristic(handle, mm.op, mm.a, mm.b, mm.c, mm.c, mm.pref, 1, &best, &found),
          "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0)
      throw CudaError("cuBLASLt has no algorithm for " + std::to_string(m) + " x " + std::to_string(n) + " x " +
                      std::to_string(k));
    p->algo = best.algo;
    return *plans.emplace(key, std::move(p)).first->second;
  }

  // W's scales per 128 x 128 block, x's per 128 entries along k (cublasLtMatmulMatrixScale_t).
  static void set_block_modes(cublasLtMatmulDesc_t op) {
#if CUBLAS_VER_MAJOR > 12 || (CUBLAS_VER_MAJOR == 12 && CUBLAS_VER_MINOR >= 9)
    const int32_t a = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    check(lt().desc_set_attribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &a, sizeof a), "set A_SCALE_MODE");
    check(lt().desc_set_attribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &b, sizeof b), "set B_SCALE_MODE");
#else
    (void)op;
    throw CudaError("gemm_fp8_blocks: cuBLASLt scales by 128-blocks from cuBLAS 12.9; this build's headers are older");
#endif
  }

  void run(cudaDataType_t in, const void* w, const void* x, void* y, int64_t m, int64_t n, int64_t k,
           const void* w_scale, const void* x_scale, Scaling scaling = Scaling::none) {
    if (scaling == Scaling::none && w_scale) scaling = Scaling::tensor;
    Plan& p = plan(in, m, n, k, scaling);
    if (w_scale) {
      check(lt().desc_set_attribute(p.mm.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale, sizeof w_scale),
            "set A_SCALE_POINTER");
      check(lt().desc_set_attribute(p.mm.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scale, sizeof x_scale),
            "set B_SCALE_POINTER");
    }
    const float alpha = 1, beta = 0;
    const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
    check(lt().matmul(handle, p.mm.op, &alpha, w, p.mm.a, x, p.mm.b, &beta, y, p.mm.c, y, p.mm.c, &p.algo,
                      workspace.data(), workspace.bytes(), nullptr),
          "cublasLtMatmul");
  }
};

Blas::Blas(DevicePool& pool, size_t workspace_bytes) : impl_(std::make_unique<Impl>()) {
  check(lt().create(&impl_->handle), "cublasLtCreate");
  impl_->workspace = DeviceBuffer(pool, workspace_bytes);
}

Blas::~Blas() {
  if (impl_ && impl_->handle) lt().destroy(impl_->handle);
}

void Blas::gemm_f32(const DeviceBuffer& x, const DeviceBuffer& w, DeviceBuffer& y, int64_t m, int64_t n, int64_t k) {
  need(x, m * k, 4, "gemm_f32", "x");
  need(w, n * k, 4, "gemm_f32", "W");
  need(y, m * n, 4, "gemm_f32", "y");
  if (m == 0 || n == 0) return;
  impl_->run(CUDA_R_32F, w.data(), x.data(), y.data(), m, n, k, nullptr, nullptr);
}

void Blas::gemm_bf16(const DeviceBuffer& x, const DeviceBuffer& w, DeviceBuffer& y, int64_t m, int64_t n, int64_t k) {
  need(x, m * k, 2, "gemm_bf16", "x");
  need(w, n * k, 2, "gemm_bf16", "W");
  need(y, m * n, 4, "gemm_bf16", "y");
  if (m == 0 || n == 0) return;
  impl_->run(CUDA_R_16BF, w.data(), x.data(), y.data(), m, n, k, nullptr, nullptr);
}

void Blas::gemm_fp8(const DeviceBuffer& x, const DeviceBuffer& x_scale, const DeviceBuffer& w,
                    const DeviceBuffer& w_scale, DeviceBuffer& y, int64_t m, int64_t n, int64_t k) {
  need(x, m * k, 1, "gemm_fp8", "x");
  need(w, n * k, 1, "gemm_fp8", "W");
  need(y, m * n, 4, "gemm_fp8", "y");
  need(x_scale, 1, 4, "gemm_fp8", "x's scale");
  need(w_scale, 1, 4, "gemm_fp8", "W's scale");
  if (k % 16 != 0 || n % 16 != 0)
    throw CudaError("gemm_fp8: k = " + std::to_string(k) + " and n = " + std::to_string(n) +
                    " must be multiples of 16 (cuBLASLt's FP8 alignment)");
  if (m == 0) return;
  impl_->run(CUDA_R_8F_E4M3, w.data(), x.data(), y.data(), m, n, k, w_scale.data(), x_scale.data());
}

void Blas::gemm_fp8_blocks(const DeviceBuffer& x, const DeviceBuffer& x_scales, const DeviceBuffer& w,
                           const DeviceBuffer& w_scales, DeviceBuffer& y, int64_t m, int64_t n, int64_t k) {
  if (m % 4 != 0 || k % 128 != 0 || n % 16 != 0 || k <= 0 || n <= 0 || m < 0)
    throw CudaError("gemm_fp8_blocks: m = " + std::to_string(m) + ", n = " + std::to_string(n) +
                    ", k = " + std::to_string(k) + ": m must be a multiple of 4, k of 128, n of 16");
  const int64_t groups = k / 128, w_blocks = (n + 127) / 128, padded = (groups + 3) / 4 * 4;
  need(x, m * k, 1, "gemm_fp8_blocks", "x");
  need(w, n * k, 1, "gemm_fp8_blocks", "W");
  need(y, m * n, 4, "gemm_fp8_blocks", "y");
  need(x_scales, groups * m, 4, "gemm_fp8_blocks", "x's scales");
  need(w_scales, w_blocks * padded, 4, "gemm_fp8_blocks", "W's scales");
  if (m == 0) return;
  impl_->run(CUDA_R_8F_E4M3, w.data(), x.data(), y.data(), m, n, k, w_scales.data(), x_scales.data(),
             Impl::Scaling::blocks);
}

}  // namespace dayzero::cuda
