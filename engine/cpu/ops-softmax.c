// ops-softmax.c - SOFT_MAX (scale, mask, ALiBi), DIAG_MASK_INF and
// CROSS_ENTROPY_LOSS.
#include "core/alibi.h"
#include "cpu/cpu-impl.h"

#include <math.h>
#include <string.h>

// dst [n,m,x,y] = softmax over ne0 of (a * scale + slope * mask); mask
// [n,m',x',y'] (m' >= m) row (i1, i2 % x', i3 % y'). A row that is -inf
// everywhere gives zeros. op_params: [0] scale, [1] max_bias (f32 bits).
void tg_cpu_op_soft_max(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const struct tg_tensor * mask = dst->src[1];
    const float scale = tg_get_op_param_f32(dst, 0);
    const float max_bias = tg_get_op_param_f32(dst, 1);
    const int64_t n = dst->ne[0], stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    float * w = tmp + 3 * stride;
    // the mask row of the previous row when it is the same one (generation:
    // one query row, every head reads it): not converted again
    const float * mr = NULL;
    int64_t m1 = -1, m2 = -1, m3 = -1;
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        const float * x = tg_cpu_load_row(a, it.i1, it.i2, it.i3, tmp);
        tg_cpu_vscale(n, w, x, scale);
        if (mask) {
            const int64_t j2 = it.i2 % mask->ne[2], j3 = it.i3 % mask->ne[3];
            if (!mr || it.i1 != m1 || j2 != m2 || j3 != m3) {
                mr = tg_cpu_load_row(mask, it.i1, j2, j3, tmp + stride);
                m1 = it.i1;
                m2 = j2;
                m3 = j3;
            }
            const float slope = tg_alibi_slope(it.i2, a->ne[2], max_bias);
            if (slope == 1.0f) {
                tg_cpu_vadd(n, w, w, mr);
            } else {
                for (int64_t i = 0; i < n; i++) w[i] += slope * mr[i];
            }
        }
        float * y = tg_cpu_dst_row(dst, it.i1, it.i2, it.i3, tmp + 2 * stride);
        const float mx = tg_cpu_vmax(n, w);
        if (mx == -INFINITY) {  // every value -inf (zeros) or NaN (NaN must propagate: a debugger looks for it)
            bool nan = false;
            for (int64_t i = 0; i < n && !nan; i++) nan = isnan(w[i]);
            if (nan) for (int64_t i = 0; i < n; i++) y[i] = NAN;
            else memset(y, 0, (size_t) n * sizeof(float));
        } else {
            double sum = tg_cpu_vexp_sum(n, y, w, mx);
            tg_cpu_vscale(n, y, y, (float) (1.0 / sum));
        }
        tg_cpu_store_row(dst, it.i1, it.i2, it.i3, y);
    }
}

// dst[i0,i1,...] = -inf where i0 > n_past + i1, else a. op_params[0] = n_past.
void tg_cpu_op_diag_mask_inf(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const int64_t n_past = tg_get_op_param_i32(dst, 0);
    const int64_t n = dst->ne[0], stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        const float * x = tg_cpu_load_row(a, it.i1, it.i2, it.i3, tmp);
        float * y = tg_cpu_dst_row(dst, it.i1, it.i2, it.i3, tmp + stride);
        if (y != x) memcpy(y, x, (size_t) n * sizeof(float));
        for (int64_t i = n_past + it.i1 + 1; i < n; i++) y[i] = -INFINITY;
        tg_cpu_store_row(dst, it.i1, it.i2, it.i3, y);
    }
}

// dst [1] = mean over rows of -sum_i b_i * log_softmax(a)_i. Per-row losses
// go to the partials (one per row, whatever the split) and thread 0 adds them
// in row order after a barrier.
void tg_cpu_op_cross_entropy(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const struct tg_tensor * b = dst->src[1];
    const int64_t n = a->ne[0], nr = tg_nrows(a), stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    double * part = tg_cpu_partials(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, a); tg_cpu_row_next(&it);) {
        const float * x = tg_cpu_load_row(a, it.i1, it.i2, it.i3, tmp);
        const float * t = tg_cpu_load_row(b, it.i1, it.i2, it.i3, tmp + stride);
        const float mx = tg_cpu_vmax(n, x);
        const double lse = log(tg_cpu_vexp_sum(n, tmp + 2 * stride, x, mx)) + mx;
        double loss = 0.0;
        for (int64_t i = 0; i < n; i++) {
            if (t[i] != 0.0f) loss -= (double) t[i] * ((double) x[i] - lse);
        }
        part[it.r] = loss;
    }
    tg_cpu_barrier(p);
    if (p->ith == 0) {
        double total = 0.0;
        for (int64_t r = 0; r < nr; r++) total += part[r];
        *(float *) dst->data = (float) (total / (double) nr);
    }
}
