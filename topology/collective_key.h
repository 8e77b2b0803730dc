#pragma once
// The cache key of a collective over a group of devices (collective_model.cpp): the
// collective and the group, checked once, in as few words as the group allows.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "topology/cluster.h"
#include "topology/collective.h"

namespace dayzero::topology::detail {

// Hash of a key's words.
struct KeyHash {
  std::size_t operator()(const std::vector<uint32_t>& k) const noexcept {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the 32-bit words
    for (uint32_t w : k) h = (h ^ w) * 1099511628211ull;
    return static_cast<std::size_t>(h);
  }
};

// Checks the group and writes the cache key: the collective, then the devices (sorted,
// except for send_recv whose order is the direction), or, for a group of three or more
// devices evenly spaced in rising order (every group a plan's rank arithmetic makes),
// {collective | spaced mark, first device, spacing, size}, so that a hit hashes and
// compares four words, not the whole group. Throws core::InputError naming the device
// for an empty group, a device listed twice or one the cluster lacks.
void make_key(Collective c, std::span<const DeviceId> group, const Cluster& cl, std::vector<uint32_t>& key);

// The collective and the devices (in the order the key keeps) of a key.
Collective key_devices(const std::vector<uint32_t>& key, std::vector<DeviceId>& devices);

}  // namespace dayzero::topology::detail
