#pragma once
// Internal to topology/: the Boost.Graph behind a Cluster. Only .cpp files of this
// library include it, so code that uses a Cluster does not compile Boost.Graph.

#include <cstdint>

#include <boost/graph/adjacency_list.hpp>

namespace dayzero::topology::detail {

struct EdgeProps {
  uint32_t link = 0;     // index into Cluster::links()
  double latency_s = 0;  // the weight of shortest-path routing
};

using BoostGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property, EdgeProps>;

struct Graph {
  BoostGraph g;
};

}  // namespace dayzero::topology::detail
