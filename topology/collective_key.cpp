// The cache key of a collective over a group of devices (collective_key.h).
#include "topology/collective_key.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace dayzero::topology::detail {

namespace {

// A key's first word: the collective, marked when the group is evenly spaced.
constexpr uint32_t kSpacedKey = 1u << 16;

// Writes the key of a group of three or more devices in rising order, evenly spaced
// (every group a plan's rank arithmetic makes; make_key sorts any other listing): {collective | kSpacedKey, first
// device, spacing, size}, so that a hit hashes and compares four words, not the whole group. Returns false, writing
// nothing, for any other group.
bool spaced_key(Collective c, std::span<const DeviceId> group, const Cluster& cl, std::vector<uint32_t>& key) {
  const std::size_t n = group.size();
  if (c == Collective::send_recv || n < 3 || group[1] <= group[0]) return false;
  const DeviceId step = group[1] - group[0];
  for (std::size_t i = 2; i < n; ++i)
    if (group[i] <= group[i - 1] || group[i] - group[i - 1] != step) return false;
  if (group[n - 1] >= cl.num_devices()) return false;  // the general path names the device
  key.assign({static_cast<uint32_t>(c) | kSpacedKey, group[0], step, static_cast<uint32_t>(n)});
  return true;
}

}  // namespace

// Checks the group and writes the cache key: the collective, then the devices (sorted,
// except for send_recv whose order is the direction), or the spaced key.
void make_key(Collective c, std::span<const DeviceId> group, const Cluster& cl, std::vector<uint32_t>& key) {
  if (group.empty())
    throw core::InputError("", "group", "[]", std::string(collective_name(c)) + " needs at least one device");
  if (c == Collective::send_recv && group.size() != 2)
    throw core::InputError("", "group", std::to_string(group.size()) + " devices",
                           "sendrecv takes exactly two devices: {source, destination}");
  if (spaced_key(c, group, cl, key)) return;
  key.assign(1, static_cast<uint32_t>(c));
  for (DeviceId d : group) {
    if (d >= cl.num_devices())
      throw core::InputError(cl.config().source, "group", std::to_string(d),
                             "no such device (the cluster has " + std::to_string(cl.num_devices()) + ")");
    key.push_back(d);
  }
  if (c != Collective::send_recv && !std::is_sorted(key.begin() + 1, key.end())) std::sort(key.begin() + 1, key.end());
  auto dup = std::adjacent_find(key.begin() + 1, key.end());
  if (c == Collective::send_recv && key[1] == key[2]) dup = key.begin() + 1;
  if (dup != key.end())
    throw core::InputError(cl.config().source, "group", cl.device_name(*dup), "device listed twice in one group");
  // Listed out of order, a spaced group still gets its spaced key: one entry per group.
  if (c != Collective::send_recv) {
    const std::vector<uint32_t> sorted(key.begin() + 1, key.end());
    spaced_key(c, sorted, cl, key);
  }
}

// The collective and the devices (in the order the key keeps) of a key.
Collective key_devices(const std::vector<uint32_t>& key, std::vector<DeviceId>& devices) {
  if (key[0] & kSpacedKey) {
    devices.resize(key[3]);
    for (uint32_t i = 0; i < key[3]; ++i) devices[i] = key[1] + i * key[2];
  } else {
    devices.assign(key.begin() + 1, key.end());
  }
  return static_cast<Collective>(key[0] & ~kSpacedKey);
}

}  // namespace dayzero::topology::detail
