// ops-norm.c - RMS_NORM and NORM over ne0 of each row (F32), statistics
// accumulated in double.
#include "cpu/cpu-impl.h"

#include <math.h>

// dst [n,a,b,c]: RMS_NORM y = x / sqrt(mean(x^2) + eps);
// NORM y = (x - mean(x)) / sqrt(var(x) + eps). op_params[0] = eps (f32 bits).
void tg_cpu_op_norm(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const double eps = tg_get_op_param_f32(dst, 0);
    const int64_t n = dst->ne[0], stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        const float * x = tg_cpu_load_row(a, it.i1, it.i2, it.i3, tmp);
        float * y = tg_cpu_dst_row(dst, it.i1, it.i2, it.i3, tmp + stride);
        if (dst->op == TG_OP_RMS_NORM) {
            double ms = tg_cpu_vsumsq(n, x) / (double) n;
            tg_cpu_vaxpb(n, y, x, 0.0f, (float) (1.0 / sqrt(ms + eps)));
        } else {
            double mean = tg_cpu_vsum(n, x) / (double) n;
            tg_cpu_vaxpb(n, y, x, (float) -mean, 1.0f);
            double var = tg_cpu_vsumsq(n, y) / (double) n;
            tg_cpu_vscale(n, y, y, (float) (1.0 / sqrt(var + eps)));
        }
        tg_cpu_store_row(dst, it.i1, it.i2, it.i3, y);
    }
}
