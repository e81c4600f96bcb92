// quant-round.h - the element rounding of the Q8_0 and Q4_0 quantizers,
// shared by the CPU's (core/types.c) and the CUDA copies (cuda/kernels-common.cuh,
// host and device functions there), so both write the same bytes.
#ifndef TG_QUANT_ROUND_H
#define TG_QUANT_ROUND_H

#include <math.h>
#include <stdint.h>

#include "core/host-device.h"

// Rounds to the nearest integer, halfway cases to even (independent of the
// FPU rounding mode).
TG_HOST_DEVICE static inline float tg_round_half_even(float v) {
    float r = roundf(v);                       // halfway cases away from zero
    if (fabsf(r - v) == 0.5f) r = 2.0f * roundf(v * 0.5f);
    return r;
}

// The byte stored for a rounded value r: the low byte of its int32
// conversion, out of range (an infinity, when d is subnormal and 1/d
// overflows) INT32_MIN as x86's conversion gives (so 0), the same bytes the
// SIMD quantizers keep; a plain (int8_t) cast of such a float is undefined
// and compilers differ on it.
TG_HOST_DEVICE static inline int8_t tg_q8_low_byte(float r) {
    const int32_t i = r > -2147483648.0f && r < 2147483648.0f ? (int32_t) r : INT32_MIN;
    return (int8_t) (uint8_t) ((uint32_t) i & 0xFFu);
}

// Q4_0's nibble of v = x / d: min(15, trunc(v + 8.5)).
TG_HOST_DEVICE static inline uint8_t tg_q4_nibble(float v) {
    float t = v + 8.5f;
    if (!(t >= 0.0f)) t = 0.0f;      // NaN or negative (cannot happen for finite input)
    int q = (int) (int8_t) (t < 127.0f ? t : 127.0f);
    return (uint8_t) (q < 15 ? q : 15);
}

#endif
