#pragma once
// The collectives every part of DayZero speaks of — the topology costs them, the
// executor times them, Measurements record them — with nccl-tests' names and bus
// bandwidth factors, defined once.

#include <cstdint>
#include <optional>
#include <string_view>

namespace dayzero::core {

enum class Collective : uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv };
inline constexpr Collective kAllCollectives[] = {Collective::all_reduce,     Collective::all_gather,
                                                 Collective::reduce_scatter, Collective::all_to_all,
                                                 Collective::broadcast,      Collective::send_recv};

// nccl-tests names: all_reduce, all_gather, reduce_scatter, alltoall, broadcast, sendrecv.
std::string_view collective_name(Collective c);
std::optional<Collective> parse_collective(std::string_view name);

// nccl-tests' bus bandwidth factors (doc/PERFORMANCE.md in NVIDIA/nccl-tests):
// busbw = algbw x factor, with n ranks: all_reduce 2(n-1)/n; all_gather,
// reduce_scatter and alltoall (n-1)/n; broadcast and sendrecv 1. Fewer than one
// rank gives 0, as does n = 1 for the collectives that then move nothing.
double bus_factor(Collective c, int64_t ranks);

}  // namespace dayzero::core
