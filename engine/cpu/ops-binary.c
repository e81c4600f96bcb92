// ops-binary.c - ADD, SUB, MUL, DIV with broadcasting of src1, and SCALE.
// F32 fast paths work on rows in place; other float types (F16, BF16) and
// strided rows go through f32 row buffers. Elementwise IEEE operations give
// the same bits whatever the split, SIMD or scalar.
#include "cpu/cpu-impl.h"

typedef void (*vbin_fn)(int64_t n, float * z, const float * x, const float * y);

static vbin_fn bin_fn(enum tg_op op) {
    switch (op) {
        case TG_OP_ADD: return tg_cpu_vadd;
        case TG_OP_SUB: return tg_cpu_vsub;
        case TG_OP_MUL: return tg_cpu_vmul;
        default:        return tg_cpu_vdiv;
    }
}

static bool flat_f32(const struct tg_tensor * a, const struct tg_tensor * b) {
    return a->type == TG_TYPE_F32 && b->type == TG_TYPE_F32 && tg_is_contiguous(a) && tg_is_contiguous(b) &&
           tg_are_same_shape(a, b);
}

// dst [n0,n1,n2,n3] = src0 (same shape) op src1 [m0,m1,m2,m3], n_i % m_i == 0.
void tg_cpu_op_binary(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const struct tg_tensor * b = dst->src[1];
    vbin_fn fn = bin_fn(dst->op);
    if (flat_f32(dst, a) && flat_f32(dst, b)) {
        const int64_t n = tg_nelements(dst);
        int64_t c0, c1;
        tg_cpu_range((n + TG_CPU_CHUNK - 1) / TG_CPU_CHUNK, p->ith, p->nth, &c0, &c1);
        for (int64_t c = c0; c < c1; c++) {
            int64_t i = c * TG_CPU_CHUNK, m = n - i < TG_CPU_CHUNK ? n - i : TG_CPU_CHUNK;
            fn(m, (float *) dst->data + i, (const float *) a->data + i, (const float *) b->data + i);
        }
        return;
    }
    const int64_t ne0 = dst->ne[0], nb0 = b->ne[0], stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    int64_t r0, r1;
    tg_cpu_range(tg_nrows(dst), p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        tg_cpu_unravel(dst, r, &i1, &i2, &i3);
        const float * x = tg_cpu_load_row(a, i1, i2, i3, tmp);
        const float * y = tg_cpu_load_row(b, i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3], tmp + stride);
        float * z = tg_cpu_dst_row(dst, i1, i2, i3, tmp + 2 * stride);
        for (int64_t k = 0; k < ne0; k += nb0) fn(nb0, z + k, x + k, y);
        tg_cpu_store_row(dst, i1, i2, i3, z);
    }
}

// dst = src0 * s, op_params[0] = s (f32 bits).
void tg_cpu_op_scale(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const float s = tg_get_op_param_f32(dst, 0);
    if (flat_f32(dst, a)) {
        const int64_t n = tg_nelements(dst);
        int64_t c0, c1;
        tg_cpu_range((n + TG_CPU_CHUNK - 1) / TG_CPU_CHUNK, p->ith, p->nth, &c0, &c1);
        for (int64_t c = c0; c < c1; c++) {
            int64_t i = c * TG_CPU_CHUNK, m = n - i < TG_CPU_CHUNK ? n - i : TG_CPU_CHUNK;
            tg_cpu_vscale(m, (float *) dst->data + i, (const float *) a->data + i, s);
        }
        return;
    }
    const int64_t stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    int64_t r0, r1;
    tg_cpu_range(tg_nrows(dst), p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        tg_cpu_unravel(dst, r, &i1, &i2, &i3);
        const float * x = tg_cpu_load_row(a, i1, i2, i3, tmp);
        float * z = tg_cpu_dst_row(dst, i1, i2, i3, tmp + stride);
        tg_cpu_vscale(dst->ne[0], z, x, s);
        tg_cpu_store_row(dst, i1, i2, i3, z);
    }
}
