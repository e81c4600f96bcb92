// vec-generic.c - dot products of every other quantized weight type (Q4_1,
// Q5_0, Q5_1, the K-quants, IQ4_NL, IQ4_XS) against its activation blocks
// (Q8_0, Q8_1 or Q8_K, tg_type_vec_dot_type): each activation block's
// weights are dequantized (bit-exact with the format) and multiplied with the
// block's integer values in 8 lanes, the block's sum then scaled by its d and
// added to the row sum. One fixed order of operations for any tiling, thread
// count or SIMD level. Portable C the compiler vectorizes; no hand-written
// SIMD kernels for these types yet. A weight row is dequantized once per
// block of columns (tg_mm_block_generic), not once per dot product.
#include "vec-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// Activation block: its size in elements and bytes, its scale and values.
static inline int64_t act_block(enum tg_type vt) { return vt == TG_TYPE_Q8_K ? TG_QK_K : 32; }

static inline float act_d(enum tg_type vt, const char * blk) {
    switch (vt) {
    case TG_TYPE_Q8_K: return ((const tg_block_q8_K *) blk)->d;
    case TG_TYPE_Q8_1: return tg_fp16_to_fp32(((const tg_block_q8_1 *) blk)->d);
    default:           return tg_fp16_to_fp32(((const tg_block_q8_0 *) blk)->d);
    }
}

static inline const int8_t * act_qs(enum tg_type vt, const char * blk) {
    switch (vt) {
    case TG_TYPE_Q8_K: return ((const tg_block_q8_K *) blk)->qs;
    case TG_TYPE_Q8_1: return ((const tg_block_q8_1 *) blk)->qs;
    default:           return ((const tg_block_q8_0 *) blk)->qs;
    }
}

// Sum of w[0..nb) * q[0..nb) in 8 lanes (lane u takes elements u, u+8, ...),
// summed by a fixed tree: one order of operations, vectorizable.
static inline float dot_f32_i8(const float * w, const int8_t * q, int64_t nb) {
    float l[8] = {0};
    for (int64_t i = 0; i < nb; i += 8) {
        for (int u = 0; u < 8; u++) l[u] += w[i + u] * (float) q[i + u];
    }
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

// Dot of a dequantized weight row w (n floats) with an activation row.
static float dot_row(enum tg_type vt, const float * w, int64_t n, const char * y) {
    const int64_t nb = act_block(vt);
    const size_t ybytes = tg_type_size(vt);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / nb; b++) {
        const char * yb = y + (size_t) b * ybytes;
        sum += dot_f32_i8(w + b * nb, act_qs(vt, yb), nb) * act_d(vt, yb);
    }
    return sum;
}

float tg_vec_dot_generic(enum tg_type type, int64_t n, const void * x, const void * y) {
    const struct tg_type_traits * tw = tg_type_traits(type);
    const enum tg_type vt = tg_type_vec_dot_type(type);
    const int64_t nb = act_block(vt);
    const size_t xbytes = tg_row_size(type, nb), ybytes = tg_type_size(vt);
    float w[TG_QK_K];
    float sum = 0.0f;
    for (int64_t b = 0; b < n / nb; b++) {   // the same operations as dot_row, a block at a time
        const char * yb = (const char *) y + (size_t) b * ybytes;
        tw->to_float((const char *) x + (size_t) b * xbytes, w, nb);
        sum += dot_f32_i8(w, act_qs(vt, yb), nb) * act_d(vt, yb);
    }
    return sum;
}

bool tg_vec_dot_generic_supported(enum tg_type type) {
    const struct tg_type_traits * tw = tg_type_traits(type);
    const enum tg_type vt = tg_type_vec_dot_type(type);
    return tw && tw->is_quantized && tw->to_float && vt != TG_TYPE_F32 &&
           act_block(vt) % tw->blck_size == 0;
}

// Each weight row is dequantized once per block of columns and used for all
// of them (a row on the stack when it fits, else on the heap for this call).
void tg_mm_block_generic(const struct tg_mm_args * g) {
    const enum tg_type vt = tg_type_vec_dot_type(g->type);
    float small[4096];
    float * w = g->k <= 4096 ? small : malloc((size_t) g->k * sizeof(float));
    for (int64_t i = 0; i < g->ni; i++) {
        if (w) tg_type_traits(g->type)->to_float(g->a + (size_t) i * g->lda, w, g->k);
        for (int64_t j = 0; j < g->nj; j++) {
            g->c[(size_t) j * g->ldc + (size_t) i] =
                w ? dot_row(vt, w, g->k, g->b + (size_t) j * g->ldb)
                  : tg_vec_dot_generic(g->type, g->k, g->a + (size_t) i * g->lda, g->b + (size_t) j * g->ldb);
        }
    }
    if (w != small) free(w);
}
