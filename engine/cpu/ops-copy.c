// ops-copy.c - DUP/CPY/CONT (converting between F32, F16, BF16, Q8_0, Q4_0,
// any layout), GET_ROWS and SET_ROWS.
#include "cpu/cpu-impl.h"

#include <string.h>

static bool is_quant_type(enum tg_type t) {
    const struct tg_type_traits * tr = tg_type_traits(t);
    return tr && tr->is_quantized;
}

// Linear element index -> byte offset of a plain-typed tensor.
static size_t elem_offset(const struct tg_tensor * t, int64_t idx) {
    int64_t i0 = idx % t->ne[0]; idx /= t->ne[0];
    int64_t i1 = idx % t->ne[1]; idx /= t->ne[1];
    int64_t i2 = idx % t->ne[2]; int64_t i3 = idx / t->ne[2];
    return (size_t) (i0 * (int64_t) t->nb[0] + i1 * (int64_t) t->nb[1] + i2 * (int64_t) t->nb[2] + i3 * (int64_t) t->nb[3]);
}

// n elements of s from linear index idx, as f32 (s plain, or quantized and contiguous).
static void read_flat(const struct tg_tensor * s, int64_t idx, int64_t n, float * out) {
    const struct tg_type_traits * tr = tg_type_traits(s->type);
    if (tr->is_quantized) {
        float blk[64];
        const int64_t bs = tr->blck_size;
        while (n > 0) {
            int64_t b = idx / bs, off = idx % bs, m = bs - off < n ? bs - off : n;
            tr->to_float((const char *) s->data + b * (int64_t) tr->type_size, blk, bs);
            memcpy(out, blk + off, (size_t) m * sizeof(float));
            out += m; idx += m; n -= m;
        }
        return;
    }
    for (int64_t k = 0; k < n; k++) {
        int64_t j = idx + k;
        int64_t i0 = j % s->ne[0]; j /= s->ne[0];
        int64_t i1 = j % s->ne[1]; j /= s->ne[1];
        int64_t i2 = j % s->ne[2]; int64_t i3 = j / s->ne[2];
        out[k] = tg_cpu_get_elem(s, i0, i1, i2, i3);
    }
}

// Same type, not quantized, any layouts: element bytes copied in logical order.
static void copy_same_type(const struct tg_cpu_params * p, struct tg_tensor * d, const struct tg_tensor * s) {
    const size_t es = tg_type_size(d->type);
    if (tg_is_contiguous(d)) {   // (a cont of a permuted view) the source's rows, each to its place in d
        const int64_t ns0 = s->ne[0];
        for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, s); tg_cpu_row_next(&it);) {
            const char * sr = tg_cpu_row_ptr(s, it.i1, it.i2, it.i3);
            char * dr = (char *) d->data + (size_t) (it.r * ns0) * es;
            if (s->nb[0] == es) {
                memcpy(dr, sr, (size_t) ns0 * es);
                continue;
            }
            for (int64_t k = 0; k < ns0; k++) memcpy(dr + (size_t) k * es, sr + k * (int64_t) s->nb[0], es);
        }
        return;
    }
    const int64_t ne0 = d->ne[0];
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, d); tg_cpu_row_next(&it);) {
        char * dr = tg_cpu_row_ptr(d, it.i1, it.i2, it.i3);
        const int64_t base = it.r * ne0;
        for (int64_t k = 0; k < ne0; k++) {
            memcpy(dr + k * (int64_t) d->nb[0], (const char *) s->data + elem_offset(s, base + k), es);
        }
    }
}

// nr rows of ne0 floats (v, row after row) converted to f16 together and
// stored at drow[r] + k * nb0 (h: scratch for nr * ne0 halves).
static void store_f16_rows(const float * v, tg_fp16_t * h, char * const * drow, int nr, int64_t ne0, size_t nb0) {
    tg_fp32_to_fp16_row(v, h, nr * ne0);
    for (int r = 0; r < nr; r++)
        for (int64_t k = 0; k < ne0; k++) memcpy(drow[r] + k * (int64_t) nb0, &h[r * ne0 + k], sizeof(tg_fp16_t));
}

// dst = src0 converted to dst's type, elements in logical order (same
// nelements; shapes may differ for CPY). For CPY, dst views src1.
void tg_cpu_op_dup(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * s = dst->src[0];
    if (s->type == dst->type && tg_is_contiguous(s) && tg_is_contiguous(dst)) {
        for (struct tg_cpu_chunk_it c = tg_cpu_chunks_of(p, (int64_t) tg_nbytes(dst), 1 << 16); tg_cpu_chunk_next(&c);) {
            if ((char *) dst->data + c.off != (const char *) s->data + c.off) {
                memcpy((char *) dst->data + c.off, (const char *) s->data + c.off, (size_t) c.len);
            }
        }
        return;
    }
    const bool same_shape = tg_are_same_shape(s, dst);
    if (s->type == dst->type && !is_quant_type(s->type) && !same_shape) {
        copy_same_type(p, dst, s);
        return;
    }
    if (same_shape && dst->ne[0] <= 4 && s->type == TG_TYPE_F32 && (dst->type == TG_TYPE_F16 || dst->type == TG_TYPE_F32)) {
        // rows of a few elements (a token's V column written into the
        // transposed V cache: one element per row): element by element, the
        // same conversion the row store makes, without its per-row set-up
        // (to f16: gathered CH rows at a time and converted by the row
        // converter, F16C where the CPU has it, then scattered)
        enum { CH = 64 };
        const bool f16 = dst->type == TG_TYPE_F16;
        const int64_t ne0 = dst->ne[0];
        float v[CH * 4];
        tg_fp16_t h[CH * 4];
        char * drow[CH];
        int nr = 0;
        for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
            const char * sr = tg_cpu_row_ptr(s, it.i1, it.i2, it.i3);
            char * dr = tg_cpu_row_ptr(dst, it.i1, it.i2, it.i3);
            if (!f16) {
                for (int64_t k = 0; k < ne0; k++) memcpy(dr + k * (int64_t) dst->nb[0], sr + k * (int64_t) s->nb[0], sizeof(float));
                continue;
            }
            for (int64_t k = 0; k < ne0; k++) memcpy(&v[nr * ne0 + k], sr + k * (int64_t) s->nb[0], sizeof(float));
            drow[nr++] = dr;
            if (nr == CH) { store_f16_rows(v, h, drow, nr, ne0, dst->nb[0]); nr = 0; }
        }
        if (nr > 0) store_f16_rows(v, h, drow, nr, ne0, dst->nb[0]);
        return;
    }
    const int64_t stride = tg_cpu_row_stride(dst);
    float * tmp = tg_cpu_rows(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        if (same_shape && s->type == dst->type && is_quant_type(s->type)) {
            memcpy(tg_cpu_row_ptr(dst, it.i1, it.i2, it.i3), tg_cpu_row_ptr(s, it.i1, it.i2, it.i3), tg_row_size(s->type, s->ne[0]));
            continue;
        }
        if (same_shape && s->type == dst->type) {   // plain, strided: exact element copy
            const size_t es = tg_type_size(s->type);
            const char * sr = tg_cpu_row_ptr(s, it.i1, it.i2, it.i3);
            char * dr = tg_cpu_row_ptr(dst, it.i1, it.i2, it.i3);
            for (int64_t k = 0; k < dst->ne[0]; k++) memcpy(dr + k * (int64_t) dst->nb[0], sr + k * (int64_t) s->nb[0], es);
            continue;
        }
        const float * x;
        if (same_shape) {
            x = tg_cpu_load_row(s, it.i1, it.i2, it.i3, tmp);
        } else {
            read_flat(s, it.r * dst->ne[0], dst->ne[0], tmp);
            x = tmp;
        }
        float * y = tg_cpu_dst_row(dst, it.i1, it.i2, it.i3, tmp + stride);
        if (y != x) memcpy(y, x, (size_t) dst->ne[0] * sizeof(float));
        tg_cpu_store_row(dst, it.i1, it.i2, it.i3, y);
    }
}

static int64_t read_index(const struct tg_tensor * t, int64_t i0, int64_t i1, int64_t i2) {
    const char * q = (const char *) t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2];
    return t->type == TG_TYPE_I64 ? *(const int64_t *) q : (int64_t) *(const int32_t *) q;
}

// dst F32 [n,m,x,y]: row (i1,i2,i3) = row ids[i1,i2,i3] of src0 [n,r,x,y], converted.
void tg_cpu_op_get_rows(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const struct tg_tensor * ids = dst->src[1];
    float * tmp = tg_cpu_rows(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, dst); tg_cpu_row_next(&it);) {
        int64_t id = read_index(ids, it.i1, it.i2 % ids->ne[1], it.i3 % ids->ne[2]);
        if (id < 0 || id >= a->ne[1]) {
            tg_cpu_fail(p, TG_ERR_INVALID_ARG, "GET_ROWS '%s': row id %lld at [%lld,%lld,%lld] of '%s' is out of range [0, %lld)",
                        tg_cpu_tname(dst), (long long) id, (long long) it.i1, (long long) it.i2, (long long) it.i3, tg_cpu_tname(ids), (long long) a->ne[1]);
            return;
        }
        float * y = tg_cpu_dst_row(dst, it.i1, it.i2, it.i3, tmp);
        const float * x = tg_cpu_load_row(a, id, it.i2 % a->ne[2], it.i3 % a->ne[3], y);
        if (x != y) memcpy(y, x, (size_t) dst->ne[0] * sizeof(float));
        tg_cpu_store_row(dst, it.i1, it.i2, it.i3, y);
    }
}

// dst (views src0 [n,r,x,y]): row ids[i1, i2 % x', i3 % y'] = row (i1,i2,i3)
// of src1 [n,m,x,y], converted (quantized) to dst's type.
void tg_cpu_op_set_rows(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * b = dst->src[1];
    const struct tg_tensor * ids = dst->src[2];
    float * tmp = tg_cpu_rows(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, b); tg_cpu_row_next(&it);) {
        int64_t id = read_index(ids, it.i1, it.i2 % ids->ne[1], it.i3 % ids->ne[2]);
        if (id < 0 || id >= dst->ne[1]) {
            tg_cpu_fail(p, TG_ERR_INVALID_ARG, "SET_ROWS '%s': row id %lld at [%lld,%lld,%lld] of '%s' is out of range [0, %lld)",
                        tg_cpu_tname(dst), (long long) id, (long long) it.i1, (long long) it.i2, (long long) it.i3, tg_cpu_tname(ids), (long long) dst->ne[1]);
            return;
        }
        const float * x = tg_cpu_load_row(b, it.i1, it.i2, it.i3, tmp);
        tg_cpu_store_row(dst, id, it.i2 % dst->ne[2], it.i3 % dst->ne[3], x);
    }
}
