// ops-misc.c - REPEAT, CONCAT (byte copies, any non-quantized type) and
// SET/ACC (write or add b into a strided view of a copy of a).
#include "cpu/cpu-impl.h"

#include <string.h>

static void copy_elems(char * d, size_t dstride, const char * s, size_t sstride, int64_t n, size_t es) {
    if (dstride == es && sstride == es) { memcpy(d, s, (size_t) n * es); return; }
    for (int64_t k = 0; k < n; k++) memcpy(d + k * dstride, s + k * sstride, es);
}

// dst [n0,n1,n2,n3] = src0 [m0,m1,m2,m3] tiled (n_i % m_i == 0).
void tg_cpu_op_repeat(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const size_t es = tg_type_size(dst->type);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        const char * sr = tg_cpu_row_ptr(a, it.i1 % a->ne[1], it.i2 % a->ne[2], it.i3 % a->ne[3]);
        char * dr = tg_cpu_row_ptr(dst, it.i1, it.i2, it.i3);
        for (int64_t k = 0; k < dst->ne[0]; k += a->ne[0]) {
            copy_elems(dr + k * (int64_t) dst->nb[0], dst->nb[0], sr, a->nb[0], a->ne[0], es);
        }
    }
}

// dst = a and b concatenated along dim (op_params[0]); other dims equal.
void tg_cpu_op_concat(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const struct tg_tensor * b = dst->src[1];
    const int dim = tg_get_op_param_i32(dst, 0);
    const size_t es = tg_type_size(dst->type);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        int64_t i[4] = { 0, it.i1, it.i2, it.i3 };
        char * dr = tg_cpu_row_ptr(dst, i[1], i[2], i[3]);
        if (dim == 0) {
            copy_elems(dr, dst->nb[0], tg_cpu_row_ptr(a, i[1], i[2], i[3]), a->nb[0], a->ne[0], es);
            copy_elems(dr + a->ne[0] * (int64_t) dst->nb[0], dst->nb[0], tg_cpu_row_ptr(b, i[1], i[2], i[3]), b->nb[0], b->ne[0], es);
            continue;
        }
        const struct tg_tensor * s = a;
        if (i[dim] >= a->ne[dim]) { s = b; i[dim] -= a->ne[dim]; }
        copy_elems(dr, dst->nb[0], tg_cpu_row_ptr(s, i[1], i[2], i[3]), s->nb[0], s->ne[0], es);
    }
}

// SET / ACC: dst = copy of a (or a itself in place), then the view of dst at
// byte offset op_params[3] with strides op_params[0..2] and b's shape is set
// to b (SET) or has b added (ACC). Two phases separated by a barrier.
void tg_cpu_op_set_acc(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const struct tg_tensor * b = dst->src[1];
    const size_t nb1 = (size_t) tg_get_op_param_i32(dst, 0), nb2 = (size_t) tg_get_op_param_i32(dst, 1);
    const size_t nb3 = (size_t) tg_get_op_param_i32(dst, 2), offset = (size_t) tg_get_op_param_i32(dst, 3);
    const size_t last = offset + (size_t) (b->ne[0] - 1) * sizeof(float) + (size_t) (b->ne[1] - 1) * nb1 +
                        (size_t) (b->ne[2] - 1) * nb2 + (size_t) (b->ne[3] - 1) * nb3 + sizeof(float);
    if (last > tg_nbytes(dst) || !tg_is_contiguous(dst)) {
        tg_cpu_fail(p, TG_ERR_SHAPE, "%s '%s': view of b (ends at byte %zu) does not fit in the %zu-byte result%s",
                    tg_op_name(dst->op), tg_cpu_tname(dst), last, tg_nbytes(dst), tg_is_contiguous(dst) ? "" : " (not contiguous)");
        return;
    }
    const int64_t stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    if (dst->data != a->data) {
        for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
            tg_cpu_store_row(dst, it.i1, it.i2, it.i3, tg_cpu_load_row(a, it.i1, it.i2, it.i3, tmp));
        }
        tg_cpu_barrier(p);
    }
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, b); tg_cpu_row_next(&it);) {
        const float * x = tg_cpu_load_row(b, it.i1, it.i2, it.i3, tmp + stride);
        float * y = (float *) ((char *) dst->data + offset + it.i1 * nb1 + it.i2 * nb2 + it.i3 * nb3);
        if (dst->op == TG_OP_SET) memcpy(y, x, (size_t) b->ne[0] * sizeof(float));
        else tg_cpu_vadd(b->ne[0], y, y, x);
    }
}
