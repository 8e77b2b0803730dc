#include "topology/collective.h"

namespace dayzero::topology {

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

}  // namespace dayzero::topology
