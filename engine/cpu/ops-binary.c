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
        for (struct tg_cpu_chunk_it c = tg_cpu_chunks_of(p, tg_nelements(dst), TG_CPU_CHUNK); tg_cpu_chunk_next(&c);) {
            fn(c.len, (float *) dst->data + c.off, (const float *) a->data + c.off, (const float *) b->data + c.off);
        }
        return;
    }
    const int64_t ne0 = dst->ne[0], nb0 = b->ne[0], stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        const float * x = tg_cpu_load_row(a, it.i1, it.i2, it.i3, tmp);
        const float * y = tg_cpu_load_row(b, it.i1 % b->ne[1], it.i2 % b->ne[2], it.i3 % b->ne[3], tmp + stride);
        float * z = tg_cpu_dst_row(dst, it.i1, it.i2, it.i3, tmp + 2 * stride);
        for (int64_t k = 0; k < ne0; k += nb0) fn(nb0, z + k, x + k, y);
        tg_cpu_store_row(dst, it.i1, it.i2, it.i3, z);
    }
}

// dst = src0 * s, op_params[0] = s (f32 bits).
void tg_cpu_op_scale(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const float s = tg_get_op_param_f32(dst, 0);
    if (flat_f32(dst, a)) {
        for (struct tg_cpu_chunk_it c = tg_cpu_chunks_of(p, tg_nelements(dst), TG_CPU_CHUNK); tg_cpu_chunk_next(&c);) {
            tg_cpu_vscale(c.len, (float *) dst->data + c.off, (const float *) a->data + c.off, s);
        }
        return;
    }
    const int64_t stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        const float * x = tg_cpu_load_row(a, it.i1, it.i2, it.i3, tmp);
        float * z = tg_cpu_dst_row(dst, it.i1, it.i2, it.i3, tmp + stride);
        tg_cpu_vscale(dst->ne[0], z, x, s);
        tg_cpu_store_row(dst, it.i1, it.i2, it.i3, z);
    }
}
