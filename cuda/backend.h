#pragma once
// The CUDA backend behind the executor's kernel table (executor/registry.h): the
// same kernel signatures as the CPU backend's, run on the GPU, so `dayzero run
// --backend cuda` runs a Plan unchanged and `dayzero check` lists what it covers
// from the table that dispatches.
//
// Stage 2 (this file's state, executor/tensor_values.h): a kernel reads its tensor
// inputs where they lie (on the device after an earlier kernel; a host tensor is
// uploaded once and keeps its device copy) and leaves its result on the device; the
// KV cache lives on the device (cuda/kv_store.h), as do the residual adds
// (Backend::add). Weights go to the device once per run and stay there: BF16 ones as BF16 and
// 128 x 128 block-scaled FP8 ones as FP8 (codes and scales), multiplied with the
// activations rounded to BF16 (FP8: up to 8 rows by fp8_block_gemv reading the codes
// where they lie, more on the tensor cores after making the matrix BF16 for the call,
// cuda/dequant.h); any other storage as float32
// (dequantized on the host as the CPU backend dequantizes it), multiplied in
// float32. RoPE rotates on the device too (executor::Backend::rope); the MoE exchange's
// packing is the forward's host glue, as on CPU (what it reads
// comes back). Results match the CPU kernels within their summation order (BF16 GEMMs:
// the CPU's product of the BF16-rounded activations). Op times come from CUDA events
// around the kernels (take_kernel_seconds) during the op timer's repeats; otherwise
// kernels run asynchronously (set_kernel_clock). Step times include the transfers.
//
// The device: the rank's local rank (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,
// SLURM_LOCALID; 0 without one) modulo the GPUs the runtime sees, one per thread
// that runs kernels. Without a GPU the first run fails naming the runtime's reason.

#include <memory>
#include <span>

#include "executor/communicator.h"
#include "executor/registry.h"

namespace dayzero::cuda {

std::span<const executor::KernelEntry> cuda_kernel_table();
// Adds "cuda" to executor::find_backend and backend_registry (idempotent). A
// binary's main calls it before any run; it needs no GPU.
void register_cuda_backend();

// An NCCL communicator over `bootstrap`'s ranks (the MPI world), on this thread's
// device (the backend's pool): `run --backend cuda` under mpirun. Collective; a rank
// without a GPU, or a build without NCCL, fails on every rank alike (CudaError or
// executor::AllRanksError); cuda/nccl_communicator.h has the rest.
std::unique_ptr<executor::Communicator> make_nccl_communicator(executor::Communicator& bootstrap, double timeout_s);

}  // namespace dayzero::cuda
