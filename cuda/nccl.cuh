#pragma once
// NCCL, loaded when the first NCCL communicator is made (dlopen), not when a binary
// starts: the library is ~220 MB and most commands never touch it (cublaslt.cuh's
// reason). For cuda/nccl*.cpp only: it includes NCCL's header. The function types
// are the header's own.

#include <nccl.h>

namespace dayzero::cuda::detail {

struct Nccl {
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRankConfig) init_rank_config;
  decltype(&ncclCommSplit) split;
  decltype(&ncclCommGetAsyncError) get_async_error;
  decltype(&ncclCommAbort) abort;
  decltype(&ncclCommFinalize) finalize;
  decltype(&ncclCommDestroy) destroy;
  decltype(&ncclCommCount) count;
  decltype(&ncclCommUserRank) user_rank;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclAllGather) all_gather;
  decltype(&ncclReduceScatter) reduce_scatter;
  decltype(&ncclSend) send;
  decltype(&ncclRecv) recv;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
  decltype(&ncclGetErrorString) error_string;
  decltype(&ncclGetLastError) last_error;
};

// The library's entry points, loaded once (by its soname, then by the path the build
// found); throws CudaError naming both and the loader's message when neither loads.
const Nccl& nccl();

}  // namespace dayzero::cuda::detail
