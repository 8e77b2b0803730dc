#include "core/arith.h"

#include <stdexcept>

namespace dayzero::core {

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw std::overflow_error("size product overflows 64 bits");
  return r;
}

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw std::overflow_error("size sum overflows 64 bits");
  return r;
}

int64_t checked_int64(double x) {
  // 2^63 is exactly representable; every double below it converts without overflow.
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (!(x < kTwoTo63 && x >= -kTwoTo63)) throw std::overflow_error("size overflows 64 bits");
  return static_cast<int64_t>(x);
}

}  // namespace dayzero::core
