// ops-back.c - the backward ops automatic differentiation adds (SILU_BACK,
// RMS_NORM_BACK, GET_ROWS_BACK) and the optimizer steps (OPT_STEP_SGD,
// OPT_STEP_ADAMW, elementwise in fixed chunks). Rows are split over threads like the
// forward row kernels; every output element has one fixed order of
// operations, so results do not depend on the thread count.
#include "cpu-impl.h"

#include <math.h>
#include <string.h>

// dx = g * s(x) * (1 + x * (1 - s(x))), s the logistic function.
void tg_cpu_op_silu_back(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * x = dst->src[0], * g = dst->src[1];
    const int64_t n = dst->ne[0], stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        const float * xr = tg_cpu_load_row(x, it.i1, it.i2, it.i3, tmp);
        const float * gr = tg_cpu_load_row(g, it.i1, it.i2, it.i3, tmp + stride);
        float * y = tg_cpu_dst_row(dst, it.i1, it.i2, it.i3, tmp + 2 * stride);
        for (int64_t i = 0; i < n; i++) {
            const float s = 1.0f / (1.0f + expf(-xr[i]));
            y[i] = gr[i] * s * (1.0f + xr[i] * (1.0f - s));
        }
        tg_cpu_store_row(dst, it.i1, it.i2, it.i3, y);
    }
}

// y = x * r, r = 1 / sqrt(mean(x^2) + eps):
// dx = r * g - x * r^3 * sum(g * x) / n   (sums in double, in order)
void tg_cpu_op_rms_norm_back(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * x = dst->src[0], * g = dst->src[1];
    const float eps = tg_get_op_param_f32(dst, 0);
    const int64_t n = dst->ne[0], stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        const float * xr = tg_cpu_load_row(x, it.i1, it.i2, it.i3, tmp);
        const float * gr = tg_cpu_load_row(g, it.i1, it.i2, it.i3, tmp + stride);
        float * y = tg_cpu_dst_row(dst, it.i1, it.i2, it.i3, tmp + 2 * stride);
        double ss = 0, gx = 0;
        for (int64_t i = 0; i < n; i++) { ss += (double) xr[i] * xr[i]; gx += (double) gr[i] * xr[i]; }
        const double r = 1.0 / sqrt(ss / (double) n + (double) eps);
        const double c = r * r * r * gx / (double) n;
        for (int64_t i = 0; i < n; i++) y[i] = (float) (r * gr[i] - c * xr[i]);
        tg_cpu_store_row(dst, it.i1, it.i2, it.i3, y);
    }
}

// Each thread owns a range of output rows and adds, in id order, every row
// of g whose id falls in it (so a row's sum has one order).
void tg_cpu_op_get_rows_back(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * g = dst->src[0], * ids = dst->src[1];
    const int64_t n = dst->ne[0], rows = dst->ne[1], m = g->ne[1];
    int64_t r0, r1;
    tg_cpu_range(rows, p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) memset((char *) dst->data + r * dst->nb[1], 0, (size_t) n * sizeof(float));
    for (int64_t j = 0; j < m; j++) {
        const int32_t id = *(const int32_t *) ((const char *) ids->data + j * ids->nb[0]);
        if (id < r0 || id >= r1) continue;
        float * out = (float *) ((char *) dst->data + id * dst->nb[1]);
        for (int64_t i = 0; i < n; i++) out[i] += tg_cpu_get_elem(g, i, j, 0, 0);
    }
}

void tg_cpu_op_opt_step(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const bool adam = dst->op == TG_OP_OPT_STEP_ADAMW;
    float * w = (float *) dst->src[0]->data;
    const float * g = (const float *) dst->src[1]->data;
    float * m = adam ? (float *) dst->src[2]->data : NULL, * v = adam ? (float *) dst->src[3]->data : NULL;
    const float * hp = (const float *) dst->src[adam ? 4 : 2]->data;
    const float lr = hp[0];
    for (struct tg_cpu_chunk_it it = tg_cpu_chunks_of(p, tg_nelements(dst), TG_CPU_CHUNK); tg_cpu_chunk_next(&it);) {
        if (!adam) {
            const float wd = hp[1];
            for (int64_t i = it.off; i < it.off + it.len; i++) w[i] -= lr * (g[i] + wd * w[i]);
            continue;
        }
        const float b1 = hp[1], b2 = hp[2], eps = hp[3], wd = hp[4], c1 = hp[5], c2 = hp[6];
        for (int64_t i = it.off; i < it.off + it.len; i++) {
            m[i] = b1 * m[i] + (1.0f - b1) * g[i];
            v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
            const float mh = m[i] * c1, vh = v[i] * c2;
            w[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * w[i]);
        }
    }
}

// g * f'(x) (RELU: x > 0; GELU: d/dx of x * s(u), u = 2k (x + c x^3)), or g
// masked like DIAG_MASK_INF with zeros.
void tg_cpu_op_unary_back(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * x = dst->src[0], * g = dst->src[1];
    const int kind = dst->op_params[0];
    const int64_t n_past = dst->op_params[1];
    const int64_t n = dst->ne[0], stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    const float k = 0.7978845608028654f, c = 0.044715f;
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        const float * xr = tg_cpu_load_row(x, it.i1, it.i2, it.i3, tmp);
        const float * gr = tg_cpu_load_row(g, it.i1, it.i2, it.i3, tmp + stride);
        float * y = tg_cpu_dst_row(dst, it.i1, it.i2, it.i3, tmp + 2 * stride);
        for (int64_t i = 0; i < n; i++) {
            if (kind == TG_UNARY_BACK_RELU) y[i] = xr[i] > 0.0f ? gr[i] : 0.0f;
            else if (kind == TG_UNARY_BACK_DIAG_MASK) y[i] = i > n_past + it.i1 ? 0.0f : gr[i];
            else {
                const float v = xr[i], u = 2.0f * k * (v + c * v * v * v);
                const float s = 1.0f / (1.0f + expf(-u));
                y[i] = gr[i] * (s + v * s * (1.0f - s) * 2.0f * k * (1.0f + 3.0f * c * v * v));
            }
        }
        tg_cpu_store_row(dst, it.i1, it.i2, it.i3, y);
    }
}

// y = (x - mean) * r, r = 1 / sqrt(var + eps): dx = r * (g - mean(g) - y * mean(g * y)) (sums in double).
void tg_cpu_op_norm_back(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * x = dst->src[0], * g = dst->src[1];
    const double eps = tg_get_op_param_f32(dst, 0);
    const int64_t n = dst->ne[0], stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        const float * xr = tg_cpu_load_row(x, it.i1, it.i2, it.i3, tmp);
        const float * gr = tg_cpu_load_row(g, it.i1, it.i2, it.i3, tmp + stride);
        float * out = tg_cpu_dst_row(dst, it.i1, it.i2, it.i3, tmp + 2 * stride);
        double mean = 0, var = 0, gm = 0, gy = 0;
        for (int64_t i = 0; i < n; i++) mean += xr[i];
        mean /= (double) n;
        for (int64_t i = 0; i < n; i++) var += ((double) xr[i] - mean) * ((double) xr[i] - mean);
        const double r = 1.0 / sqrt(var / (double) n + eps);
        for (int64_t i = 0; i < n; i++) { gm += gr[i]; gy += gr[i] * ((double) xr[i] - mean) * r; }
        gm /= (double) n;
        gy /= (double) n;
        for (int64_t i = 0; i < n; i++) out[i] = (float) (r * (gr[i] - gm - ((double) xr[i] - mean) * r * gy));
        tg_cpu_store_row(dst, it.i1, it.i2, it.i3, out);
    }
}
