#include "executor/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "executor/weights.h"

namespace dayzero::executor {

namespace {
constexpr uint8_t kFp8MaxFiniteCode = 0x7E;  // S.1111.110 = 448
constexpr uint8_t kFp8NanCode = 0x7F;
}  // namespace

uint16_t float_to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if (std::isnan(x)) return static_cast<uint16_t>((u >> 16) | 0x0040);  // keep the sign, set the quiet bit
  const uint32_t round = 0x7FFF + ((u >> 16) & 1);                      // ties to the even upper half
  return static_cast<uint16_t>((u + round) >> 16);
}

uint8_t float_to_fp8_e4m3(float x) {
  if (std::isnan(x)) return kFp8NanCode;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const float a = std::fabs(x);
  const auto& table = fp8_e4m3_table();  // codes 0..0x7E are the positive finite values, increasing
  if (a >= table[kFp8MaxFiniteCode]) return static_cast<uint8_t>(sign | kFp8MaxFiniteCode);
  // The first code whose value is >= a, and the one below it: the nearest wins, a tie goes
  // to the even code (mantissa's last bit 0).
  const auto* first = table.data();
  const auto* hi = std::lower_bound(first, first + kFp8MaxFiniteCode + 1, a);
  auto code = static_cast<uint8_t>(hi - first);
  if (code > 0 && *hi != a) {
    const float up = *hi - a, down = a - *(hi - 1);
    if (down < up || (down == up && (code & 1) != 0)) --code;
  }
  return static_cast<uint8_t>(sign | code);
}

void round_to_storage(std::span<float> values, plan::KvDtype s) {
  switch (s) {
    case plan::KvDtype::fp32: return;
    case plan::KvDtype::bf16:
      for (float& v : values) v = bf16_to_float(float_to_bf16(v));
      return;
    case plan::KvDtype::fp8: {
      const auto& table = fp8_e4m3_table();
      for (float& v : values) v = table[float_to_fp8_e4m3(v)];
      return;
    }
  }
}

}  // namespace dayzero::executor
