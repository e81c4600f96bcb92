// ops-rope.c - rotary position embedding (normal and neox pairings).
#include "cpu/cpu-impl.h"

#include <math.h>
#include <string.h>

// The frequencies and the last position's cos/sin, kept per thread between
// calls: a decode step's ropes (two a layer) share them, so they are
// computed once a step instead of once a node (pow, cos and sin were ~1% of
// a small model's generation). The same values either way.
#define ROPE_CACHE_HALF 512
struct rope_cache {
    bool    valid, has_ff, have_pos;
    double  base, fscale;
    int64_t n_dims;
    int32_t pos;
    float   ff[ROPE_CACHE_HALF];
    double  inv[ROPE_CACHE_HALF];   // freq_base^(-2i/n_dims) (/ ff[i])
    float   cs[ROPE_CACHE_HALF], sn[ROPE_CACHE_HALF];
};
static _Thread_local struct rope_cache g_rope;

// dst [d,h,n,x] = a rotated: for pair i < n_dims/2 of each row of token i2,
// theta = pos[i2] * freq_scale * freq_base^(-2i/n_dims); normal mode pairs
// (2i, 2i+1), neox mode (i, i + n_dims/2); elements >= n_dims are copied.
// With frequency factors (src[2], F32), theta of pair i is divided by ff[i].
// op_params: [0] n_dims, [1] mode, [2] n_ctx_orig, [3] freq_base, [4] freq_scale.
void tg_cpu_op_rope(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const struct tg_tensor * pos = dst->src[1];
    const int64_t n_dims = tg_get_op_param_i32(dst, 0);
    const int neox = (tg_get_op_param_i32(dst, 1) & TG_ROPE_NEOX) != 0;
    const double base = tg_get_op_param_f32(dst, 3);
    const double fscale = tg_get_op_param_f32(dst, 4);
    const int64_t n = dst->ne[0], half = n_dims / 2, stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    const float * ff = dst->src[2] ? (const float *) dst->src[2]->data : NULL;
    struct rope_cache * rc = &g_rope;
    const bool cacheable = half <= ROPE_CACHE_HALF;
    float * cs = cacheable ? rc->cs : tmp + 2 * stride;   // [half] cos, [half] sin
    float * sn = cacheable ? rc->sn : tmp + 2 * stride + half;
    double * inv = cacheable ? rc->inv : (double *) (tmp + 3 * stride);
    if (!cacheable || !rc->valid || rc->base != base || rc->fscale != fscale || rc->n_dims != n_dims ||
        rc->has_ff != (ff != NULL) || (ff && memcmp(rc->ff, ff, (size_t) half * sizeof(float)) != 0)) {
        for (int64_t i = 0; i < half; i++) {
            inv[i] = pow(base, -2.0 * (double) i / (double) n_dims);
            if (ff) inv[i] /= (double) ff[i];
        }
        if (cacheable) {
            rc->valid = true; rc->have_pos = false;
            rc->base = base; rc->fscale = fscale; rc->n_dims = n_dims; rc->has_ff = ff != NULL;
            if (ff) memcpy(rc->ff, ff, (size_t) half * sizeof(float));
        }
    }
    int64_t cached = -1;
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        if (it.i2 != cached) {
            const int32_t ps = *(const int32_t *) ((const char *) pos->data + it.i2 * pos->nb[0]);
            if (!cacheable || !rc->have_pos || rc->pos != ps) {
                for (int64_t i = 0; i < half; i++) {
                    double theta = (double) ps * fscale * inv[i];
                    cs[i] = (float) cos(theta);
                    sn[i] = (float) sin(theta);
                }
                if (cacheable) { rc->have_pos = true; rc->pos = ps; }
            }
            cached = it.i2;
        }
        const float * x = tg_cpu_load_row(a, it.i1, it.i2, it.i3, tmp);
        float * y = tg_cpu_dst_row(dst, it.i1, it.i2, it.i3, tmp + stride);
        tg_cpu_vrope(n_dims, neox, y, x, cs, sn);
        if (y != x && n > n_dims) memcpy(y + n_dims, x + n_dims, (size_t) (n - n_dims) * sizeof(float));
        tg_cpu_store_row(dst, it.i1, it.i2, it.i3, y);
    }
}
