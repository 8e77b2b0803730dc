#pragma once
// "cpu-mirror": the CPU's kernels behind a device backend's contract (executor/
// tensor_values.h), so that CI checks the forward against tensors that live on a
// device between kernels. Each kernel reads its tensor inputs from their device copy
// (HostMirror: values in a separate host buffer, as a GPU's memory would be), copying
// an input that has none up once and keeping it with the tensor; its results and the
// tensors it writes in place are left on the "device" only (the host copy freed). The
// forward's host glue then brings values back through TensorValues, as it does from a
// GPU; its KV cache is a store of its own that the attention kernels read through
// their pages (executor/kv_store.h). A forward that held a host pointer across a kernel, or wrote a tensor's host
// values without dropping its device copy, gives wrong logits here (and a use after
// free under ASan).
#include <cstdint>
#include <memory>
#include <vector>

#include "executor/registry.h"
#include "executor/tensor.h"

namespace dayzero::executor::testing {

// A device copy held in host memory, counted.
class HostMirror final : public DeviceValues {
 public:
  explicit HostMirror(std::vector<float> v) : values(std::move(v)) {}
  void download(float* host, size_t count) const override;
  std::vector<float> values;
};

struct MirrorCounts {
  int64_t uploads = 0;  // inputs copied to the mirror (they had no device copy)
  int64_t results = 0;  // kernel results and in-place writes left on the mirror
};
MirrorCounts mirror_counts();  // since the process began

// Registers "cpu-mirror" (once) and returns it.
const Backend& mirror_backend();

}  // namespace dayzero::executor::testing
