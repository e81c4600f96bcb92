// ops-unary.c - elementwise unary ops (SQR, SQRT, LOG, NEG, ABS, SILU, GELU,
// RELU) and the gated linear units (GLU: swiglu, geglu, reglu).
//
// Contiguous F32 tensors are processed as one flat array in fixed chunks of
// TG_CPU_CHUNK elements, so each element meets the same code (SIMD lane or
// scalar tail) whatever the number of threads.
#include "cpu/cpu-impl.h"

#include <math.h>

typedef void (*vun_fn)(int64_t n, float * y, const float * x);

static void v_sqr(int64_t n, float * y, const float * x) { tg_cpu_vmul(n, y, x, x); }
static void v_sqrt(int64_t n, float * y, const float * x) { for (int64_t i = 0; i < n; i++) y[i] = sqrtf(x[i]); }
static void v_log(int64_t n, float * y, const float * x) { for (int64_t i = 0; i < n; i++) y[i] = logf(x[i]); }
static void v_neg(int64_t n, float * y, const float * x) { for (int64_t i = 0; i < n; i++) y[i] = -x[i]; }
static void v_abs(int64_t n, float * y, const float * x) { for (int64_t i = 0; i < n; i++) y[i] = fabsf(x[i]); }
static void v_relu(int64_t n, float * y, const float * x) { for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f; }

static vun_fn unary_fn(enum tg_op op) {
    switch (op) {
        case TG_OP_SQR:  return v_sqr;
        case TG_OP_SQRT: return v_sqrt;
        case TG_OP_LOG:  return v_log;
        case TG_OP_NEG:  return v_neg;
        case TG_OP_ABS:  return v_abs;
        case TG_OP_SILU: return tg_cpu_vsilu;
        case TG_OP_GELU: return tg_cpu_vgelu;
        default:         return v_relu;
    }
}

// dst [n0,n1,n2,n3] = f(src0), same shape.
void tg_cpu_op_unary(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    vun_fn fn = unary_fn(dst->op);
    if (dst->type == TG_TYPE_F32 && a->type == TG_TYPE_F32 && tg_is_contiguous(dst) && tg_is_contiguous(a)) {
        for (struct tg_cpu_chunk_it c = tg_cpu_chunks_of(p, tg_nelements(dst), TG_CPU_CHUNK); tg_cpu_chunk_next(&c);) {
            fn(c.len, (float *) dst->data + c.off, (const float *) a->data + c.off);
        }
        return;
    }
    const int64_t stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        const float * x = tg_cpu_load_row(a, it.i1, it.i2, it.i3, tmp);
        float * y = tg_cpu_dst_row(dst, it.i1, it.i2, it.i3, tmp + stride);
        fn(dst->ne[0], y, x);
        tg_cpu_store_row(dst, it.i1, it.i2, it.i3, y);
    }
}

// GLU: dst [n,...] = act(x) * g. One source: a [2n,...] split in halves
// (x first unless swapped); two sources: x = a, g = b (exchanged if swapped).
void tg_cpu_op_glu(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const struct tg_tensor * b = dst->src[1];
    const int op = tg_get_op_param_i32(dst, 0);
    const bool swapped = tg_get_op_param_i32(dst, 1) != 0;
    const int64_t n = dst->ne[0], stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        const float * x, * g;
        if (b) {
            x = tg_cpu_load_row(a, it.i1, it.i2, it.i3, tmp);
            g = tg_cpu_load_row(b, it.i1, it.i2, it.i3, tmp + stride);
            if (swapped) { const float * t = x; x = g; g = t; }
        } else {
            const float * row = tg_cpu_load_row(a, it.i1, it.i2, it.i3, tmp);
            x = swapped ? row + n : row;
            g = swapped ? row : row + n;
        }
        float * y = tg_cpu_dst_row(dst, it.i1, it.i2, it.i3, tmp + 2 * stride);
        tg_cpu_vglu(n, op, y, x, g);
        tg_cpu_store_row(dst, it.i1, it.i2, it.i3, y);
    }
}
