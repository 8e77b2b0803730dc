#pragma once
// A counter-based random stream: SplitMix64 (Steele, Lea, Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014). Any element's value is a pure
// function of (seed, index), so synthetic weights and routing permutations are
// reproducible however they are chunked or threaded.

#include <cstdint>

namespace dayzero::model {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace dayzero::model
