#pragma once
// FP8 E4M3 and BF16 as the device kernels decode and round them, callable from host
// code too (the host tests check them against executor/weights.h and
// executor/quantize.h, the CPU's rules, value for value). No CUDA header needed on
// the host side.

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define DAYZERO_HOST_DEVICE __host__ __device__
#else
#define DAYZERO_HOST_DEVICE
#endif

namespace dayzero::cuda::fp8 {

DAYZERO_HOST_DEVICE inline float from_bits(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}
DAYZERO_HOST_DEVICE inline uint32_t to_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

// OCP FP8 E4M3 (bias 7, no infinities, S.1111.111 NaN) as float32, exactly: built from
// its bits (every E4M3 value is a float32 with the same sign, exponent + 120 and the
// mantissa's 3 bits on top; subnormals m x 2^-9 are normal in float32).
DAYZERO_HOST_DEVICE inline float e4m3_value(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80) << 24;
  const uint32_t exponent = (code >> 3) & 0xF, mantissa = code & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return from_bits(sign | 0x7FC00000u);  // NaN
  if (exponent == 0) {
    if (mantissa == 0) return from_bits(sign);  // +-0
    // m x 2^-9, m in 1..7: normalize the mantissa's leading one.
    int shift = 0;
    uint32_t m = mantissa;
    while ((m & 0x4) == 0) {
      m <<= 1;
      ++shift;
    }
    return from_bits(sign | ((127 - 7 - shift) << 23) | ((m & 0x3) << 21));
  }
  return from_bits(sign | ((exponent + 120) << 23) | (mantissa << 20));
}

// float32 to BF16 bits, to nearest even; NaN stays a quiet NaN (executor/quantize.cpp).
DAYZERO_HOST_DEVICE inline uint16_t bf16_bits(float x) {
  const uint32_t u = to_bits(x);
  if (x != x) return static_cast<uint16_t>((u >> 16) | 0x0040);
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}
DAYZERO_HOST_DEVICE inline float bf16_value(uint16_t bits) { return from_bits(static_cast<uint32_t>(bits) << 16); }

// float32 to the nearest FP8 E4M3 code, ties to the even code, saturated at +-448, NaN
// to 0x7F (executor/quantize.cpp float_to_fp8_e4m3: the same search over the codes'
// increasing values, so the device stores the host's bits).
DAYZERO_HOST_DEVICE inline uint8_t e4m3_code(float x) {
  if (x != x) return 0x7F;
  const auto sign = static_cast<uint8_t>((to_bits(x) >> 24) & 0x80);
  const float a = from_bits(to_bits(x) & 0x7FFFFFFFu);
  constexpr int kMaxFinite = 0x7E;  // S.1111.110 = 448
  if (a >= e4m3_value(kMaxFinite)) return static_cast<uint8_t>(sign | kMaxFinite);
  int lo = 0, hi = kMaxFinite;  // the first code whose value is >= a
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (e4m3_value(static_cast<uint8_t>(mid)) < a) lo = mid + 1;
    else hi = mid;
  }
  int code = lo;
  const float at = e4m3_value(static_cast<uint8_t>(code));
  if (code > 0 && at != a) {
    const float up = at - a, down = a - e4m3_value(static_cast<uint8_t>(code - 1));
    if (down < up || (down == up && (code & 1) != 0)) --code;
  }
  return static_cast<uint8_t>(sign | code);
}

}  // namespace dayzero::cuda::fp8
