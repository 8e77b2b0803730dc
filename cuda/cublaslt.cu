#include "cuda/cublaslt.cuh"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "cuda/device.h"

namespace dayzero::cuda::detail {

namespace {
template <class Fn>
void resolve(void* lib, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn) throw CudaError(std::string("cuBLASLt has no ") + name + ": " + dlerror());
}

CublasLt load() {
  // The soname of the toolkit built against (libcublasLt.so.<CUDA major>), then the file
  // CMake found; both from cuda/CMakeLists.txt.
  void* lib = dlopen(DAYZERO_CUBLASLT_SONAME, RTLD_NOW | RTLD_LOCAL);
  std::string why;
  if (!lib) {
    why = dlerror();
    lib = dlopen(DAYZERO_CUBLASLT_PATH, RTLD_NOW | RTLD_LOCAL);
  }
  if (!lib)
    throw CudaError(std::string("cannot load cuBLASLt (") + DAYZERO_CUBLASLT_SONAME + ": " + why + "; " +
                    DAYZERO_CUBLASLT_PATH + ": " + dlerror() + ")");
  CublasLt f{};
  resolve(lib, f.create, "cublasLtCreate");
  resolve(lib, f.destroy, "cublasLtDestroy");
  resolve(lib, f.status_name, "cublasLtGetStatusName");
  resolve(lib, f.status_string, "cublasLtGetStatusString");
  resolve(lib, f.matmul, "cublasLtMatmul");
  resolve(lib, f.algo_get_heuristic, "cublasLtMatmulAlgoGetHeuristic");
  resolve(lib, f.desc_create, "cublasLtMatmulDescCreate");
  resolve(lib, f.desc_destroy, "cublasLtMatmulDescDestroy");
  resolve(lib, f.desc_set_attribute, "cublasLtMatmulDescSetAttribute");
  resolve(lib, f.preference_create, "cublasLtMatmulPreferenceCreate");
  resolve(lib, f.preference_destroy, "cublasLtMatmulPreferenceDestroy");
  resolve(lib, f.preference_set_attribute, "cublasLtMatmulPreferenceSetAttribute");
  resolve(lib, f.layout_create, "cublasLtMatrixLayoutCreate");
  resolve(lib, f.layout_destroy, "cublasLtMatrixLayoutDestroy");
  return f;  // the library stays loaded for the process
}
}  // namespace

const CublasLt& cublaslt() {
  static std::once_flag once;
  static CublasLt fns{};
  std::call_once(once, [] { fns = load(); });  // a throw leaves it to be tried again
  return fns;
}

}  // namespace dayzero::cuda::detail
