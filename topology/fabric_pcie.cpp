// Hosts and the PCIe tree: device -> PCIe switch -> host root complex, or device -> host
// directly when there are no switches (also how NVLink-C2C superchips attach). With
// intra_node.fabric = "pcie" this tree is also the device-to-device path (P2P through
// the switch, or through the host between switches).
#include "topology/fabric.h"

namespace dayzero::topology::detail {

void build_host_links(Builder& b) {
  const auto& cfg = b.cfg;
  const LinkKind device_link = b.spec.host_link.kind == "nvlink-c2c"    ? LinkKind::c2c
                               : b.spec.host_link.kind == "host-memory" ? LinkKind::memory
                                                                        : LinkKind::pcie;
  const double uplink_bw_Bps = cfg.host.switch_uplink_bw_Bps.value_or(b.host_link_bw_Bps);
  const int switches = cfg.host.pcie_switches;
  for (int n = 0; n < cfg.nodes; ++n) {
    const uint32_t host = b.add_vertex(VertexKind::host, b.node_name(n) + ".host", n);
    b.host_vertices.push_back(host);
    if (switches == 0) {
      for (int d = 0; d < cfg.devices_per_node; ++d)
        b.add_link(b.device_vertex(n, d), host, device_link, b.host_link_bw_Bps, cfg.host.latency_s);
      continue;
    }
    std::vector<uint32_t> sw;
    for (int s = 0; s < switches; ++s) {
      sw.push_back(b.add_vertex(VertexKind::pcie_switch, b.node_name(n) + ".pcie" + std::to_string(s), n, s));
      b.add_link(sw.back(), host, LinkKind::pcie, uplink_bw_Bps, cfg.host.latency_s);
    }
    // Devices fill the switches in contiguous blocks (devices 0-1 on switch 0 for 8 over 4).
    for (int d = 0; d < cfg.devices_per_node; ++d) {
      const auto s = static_cast<std::size_t>(d * switches / cfg.devices_per_node);
      b.add_link(b.device_vertex(n, d), sw[s], device_link, b.host_link_bw_Bps, cfg.host.latency_s);
    }
  }
}

}  // namespace dayzero::topology::detail
