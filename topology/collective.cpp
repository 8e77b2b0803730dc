#include "topology/collective.h"

namespace dayzero::topology {

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_to_all: return "alltoall";
    case Collective::broadcast: return "broadcast";
    case Collective::send_recv: return "sendrecv";
  }
  return "?";
}

std::optional<Collective> parse_collective(std::string_view name) {
  for (Collective c : kAllCollectives)
    if (collective_name(c) == name) return c;
  return std::nullopt;
}

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::automatic: return "auto";
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::direct: return "direct";
  }
  return "?";
}

std::string_view protocol_name(Protocol p) { return p == Protocol::ll ? "LL" : "Simple"; }

double bus_factor(Collective c, uint32_t ranks) {
  const double n = ranks;
  switch (c) {
    case Collective::all_reduce: return ranks == 0 ? 0.0 : 2.0 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return ranks == 0 ? 0.0 : (n - 1) / n;
    case Collective::broadcast:
    case Collective::send_recv: return 1.0;
  }
  return 1.0;
}

}  // namespace dayzero::topology
