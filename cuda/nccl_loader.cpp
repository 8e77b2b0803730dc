#include <dlfcn.h>

#include <mutex>
#include <string>

#include "cuda/device.h"
#include "cuda/nccl.cuh"

namespace dayzero::cuda::detail {

namespace {
template <class Fn>
void resolve(void* lib, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn) throw CudaError(std::string("NCCL has no ") + name + ": " + dlerror());
}

Nccl load() {
  void* lib = dlopen(DAYZERO_NCCL_SONAME, RTLD_NOW | RTLD_LOCAL);
  std::string why;
  if (!lib) {
    why = dlerror();
    lib = dlopen(DAYZERO_NCCL_PATH, RTLD_NOW | RTLD_LOCAL);
  }
  if (!lib)
    throw CudaError(std::string("cannot load NCCL (") + DAYZERO_NCCL_SONAME + ": " + why + "; " + DAYZERO_NCCL_PATH +
                    ": " + dlerror() + ")");
  Nccl f{};
  resolve(lib, f.get_unique_id, "ncclGetUniqueId");
  resolve(lib, f.init_rank_config, "ncclCommInitRankConfig");
  resolve(lib, f.split, "ncclCommSplit");
  resolve(lib, f.get_async_error, "ncclCommGetAsyncError");
  resolve(lib, f.abort, "ncclCommAbort");
  resolve(lib, f.finalize, "ncclCommFinalize");
  resolve(lib, f.destroy, "ncclCommDestroy");
  resolve(lib, f.count, "ncclCommCount");
  resolve(lib, f.user_rank, "ncclCommUserRank");
  resolve(lib, f.all_reduce, "ncclAllReduce");
  resolve(lib, f.all_gather, "ncclAllGather");
  resolve(lib, f.reduce_scatter, "ncclReduceScatter");
  resolve(lib, f.send, "ncclSend");
  resolve(lib, f.recv, "ncclRecv");
  resolve(lib, f.group_start, "ncclGroupStart");
  resolve(lib, f.group_end, "ncclGroupEnd");
  resolve(lib, f.error_string, "ncclGetErrorString");
  resolve(lib, f.last_error, "ncclGetLastError");
  return f;  // the library stays loaded for the process
}
}  // namespace

const Nccl& nccl() {
  static std::once_flag once;
  static Nccl fns{};
  std::call_once(once, [] { fns = load(); });  // a throw leaves it to be tried again
  return fns;
}

}  // namespace dayzero::cuda::detail
