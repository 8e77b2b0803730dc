#pragma once
// The one way a closed vocabulary crosses the text boundary: each enum has a
// `*_name(E)` switch (no default:, so a new enumerator is flagged where it needs a
// name) and a `kAll*` array; parsing and listing the names go through these.

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace dayzero::core {

// The enumerator of `all` whose name is `s`, if any.
template <class E, size_t N, class NameFn>
std::optional<E> parse_enum(std::string_view s, const E (&all)[N], NameFn name) {
  for (E e : all)
    if (name(e) == s) return e;
  return std::nullopt;
}

// The names of `all`, sorted and comma-separated ("bf16, checkpoint, fp8, int4"), for messages.
template <class E, size_t N, class NameFn>
std::string enum_names(const E (&all)[N], NameFn name) {
  std::set<std::string> names;
  for (E e : all) names.insert(std::string(name(e)));
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace dayzero::core
