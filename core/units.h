#pragma once
// Byte and rate units. Everything inside DayZero is SI: bytes, seconds, bytes per
// second, FLOP per second; names carry the unit (weights_bytes, link_bw_Bps,
// step_time_s). GB = 1e9 bytes and GiB = 2^30 bytes; printed figures say which
// one they use. Network rates quoted in bits (400 Gb/s) are bytes/s x 8 (50e9 B/s).

namespace dayzero::core {

inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * kKiB;
inline constexpr double kGiB = 1024.0 * kMiB;
inline constexpr double kGB = 1e9;
inline constexpr double kTB = 1e12;

}  // namespace dayzero::core
