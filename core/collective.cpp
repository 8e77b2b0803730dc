#include "core/collective.h"

#include "core/enum_names.h"

namespace dayzero::core {

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
  return parse_enum(name, kAllCollectives, collective_name);
}

double bus_factor(Collective c, int64_t ranks) {
  if (ranks < 1) return 0.0;
  const auto n = static_cast<double>(ranks);
  switch (c) {
    case Collective::all_reduce: return 2.0 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return (n - 1) / n;
    case Collective::broadcast:
    case Collective::send_recv: return 1.0;
  }
  return 1.0;
}

}  // namespace dayzero::core
