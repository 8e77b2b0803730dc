// A cluster file (topology::parse_cluster_config), then, for clusters of at most 64
// devices (bigger ones take too long per input), the Cluster built against the
// shipped device catalog as `topo` does.
#include "fuzz/fuzz_common.h"
#include "topology/cluster.h"
#include "topology/cluster_config.h"
#include "topology/device.h"

namespace {

constexpr int64_t kMaxBuiltDevices = 64;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dayzero::topology;
  static const DeviceCatalog catalog = DeviceCatalog::load_builtin(dayzero::fuzz::source_dir() / "scenarios");
  dayzero::fuzz::expect_documented_errors([&] {
    ClusterConfig config = parse_cluster_config(dayzero::fuzz::text_of(data, size), "cluster.json");
    if (int64_t{config.nodes} * config.devices_per_node > kMaxBuiltDevices) return;
    const Cluster cluster(std::move(config), catalog);
    if (cluster.num_devices() == 0) std::abort();
  });
  return 0;
}
