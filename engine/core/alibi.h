// alibi.h - the ALiBi slope of SOFT_MAX's max_bias, shared by the CPU op and
// the CUDA kernel (a host and device function there).
#ifndef TG_ALIBI_H
#define TG_ALIBI_H

#include <math.h>
#include <stdint.h>

#include "core/host-device.h"

// Slope of head h of n_head for max_bias (1 when max_bias is 0): heads below
// the largest power of two n get m0^(h+1), the rest m1^(2(h-n)+1).
TG_HOST_DEVICE static inline float tg_alibi_slope(int64_t h, int64_t n_head, float max_bias) {
    if (max_bias <= 0.0f) return 1.0f;
    int64_t n_log2 = 1;
    while (n_log2 * 2 <= n_head) n_log2 *= 2;
    const float m0 = powf(2.0f, -max_bias / (float) n_log2);
    const float m1 = powf(2.0f, -(max_bias / 2.0f) / (float) n_log2);
    return h < n_log2 ? powf(m0, (float) (h + 1)) : powf(m1, (float) (2 * (h - n_log2) + 1));
}

#endif
