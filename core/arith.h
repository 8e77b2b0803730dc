#pragma once
// Integer arithmetic for sizes (bytes, elements, tokens): overflow-checked
// products and sums, and the rounding every memory formula uses.

#include <cstdint>

namespace dayzero::core {

// Throw std::overflow_error when the result does not fit in 64 bits.
int64_t checked_mul(int64_t a, int64_t b);
int64_t checked_add(int64_t a, int64_t b);
// A size computed in floating point (a product with a fractional share), truncated to
// int64; throws std::overflow_error when it is NaN or outside the 64-bit range, where
// a plain cast is undefined (and gives INT64_MIN on x86-64).
int64_t checked_int64(double x);

// Ceiling of a / b and a rounded up to a multiple of b, for a >= 0 and b > 0.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

}  // namespace dayzero::core
