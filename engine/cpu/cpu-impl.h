// cpu-impl.h - private contract between the CPU compute loop (compute.c,
// pool.c), the elementwise/row kernels (ops-*.c) and the matrix kernels
// (matmul.c, vec-*.c).
#ifndef TG_CPU_IMPL_H
#define TG_CPU_IMPL_H

#include "tg/cpu.h"

// What a kernel is told: which thread it is, and a scratch area shared by the
// threads of this node (sized by the node's work-size function, 64-aligned).
struct tg_cpu_params {
    int    ith, nth;
    void * wdata;
    size_t wsize;
    struct tg_cpu_pool * pool;
};

// Waits until all nth threads of the current node reach it.
void tg_cpu_barrier(const struct tg_cpu_params * p);
// Dynamic split of a node's work: the first of the next `step` work units no
// thread has taken yet (at or past the total: none left). Every unit is
// taken by exactly one thread. Units are numbered from 0 at each meeting of
// all threads between nodes, so a node may run one such loop, and only when
// it runs on several threads (nth > 1).
int64_t tg_cpu_claim(const struct tg_cpu_params * p, int64_t step);

typedef void (*tg_cpu_kernel_fn)(const struct tg_cpu_params * p, struct tg_tensor * dst);

// Rows [*r0, *r1) of n for thread ith of nth: contiguous, deterministic chunks.
static inline void tg_cpu_range(int64_t n, int ith, int nth, int64_t * r0, int64_t * r1) {
    int64_t per = (n + nth - 1) / nth;
    int64_t a = per * ith;
    int64_t b = a + per;
    *r0 = a < n ? a : n;
    *r1 = b < n ? b : n;
}

// SIMD level chosen at start (features.c): 0 scalar, 1 avx(+fma,f16c), 2 avx2, 3 avx512.
enum { TG_SIMD_SCALAR = 0, TG_SIMD_AVX = 1, TG_SIMD_AVX2 = 2, TG_SIMD_AVX512 = 3,
       TG_SIMD_AVX512VNNI = 4 };
int tg_cpu_simd_level(void);

// ---- matrix kernels (matmul.c) ----
// Scratch bytes the node needs (e.g. src1 converted/quantized to the dot type).
size_t tg_cpu_mul_mat_work_size(const struct tg_tensor * dst, int nth);
bool   tg_cpu_mul_mat_supported(const struct tg_tensor * dst);
void   tg_cpu_mul_mat(const struct tg_cpu_params * p, struct tg_tensor * dst);
bool   tg_cpu_mul_mat_groupable(const struct tg_tensor * d0, const struct tg_tensor * d1);
void   tg_cpu_mul_mat_group(const struct tg_cpu_params * p, struct tg_tensor * const * dsts, int n);
enum { TG_CPU_MM_GROUP_MAX = 4 };
// After a write to t's bytes (t or the weight it views): makes the weight's
// packed copy again (pack.c), or drops it when the weight has moved.
void   tg_cpu_pack_refresh(struct tg_tensor * t);
size_t tg_cpu_out_prod_work_size(const struct tg_tensor * dst, int nth);
bool   tg_cpu_out_prod_supported(const struct tg_tensor * dst);
void   tg_cpu_out_prod(const struct tg_cpu_params * p, struct tg_tensor * dst);

// ---- vector primitives (vec-*.c), SIMD-dispatched, fixed reduction order ----
float tg_vec_dot_f32(int64_t n, const float * x, const float * y);
float tg_vec_dot_f16(int64_t n, const tg_fp16_t * x, const tg_fp16_t * y);
float tg_vec_dot_bf16(int64_t n, const tg_bf16_t * x, const tg_bf16_t * y);
// Quantized rows (n multiple of 32) against Q8_0-quantized activations.
float tg_vec_dot_q8_0_q8_0(int64_t n, const tg_block_q8_0 * x, const tg_block_q8_0 * y);
float tg_vec_dot_q4_0_q8_0(int64_t n, const tg_block_q4_0 * x, const tg_block_q8_0 * y);

// ======================================================================
// Below: compute loop internals and the row/elementwise kernels (cpuops).
// ======================================================================

// Caps the SIMD level (tests run the AVX path on AVX-512 machines): the level
// used is min(detected, cap); a negative cap restores detection.
void tg_cpu_set_simd_cap(int level);

// Elements of work per thread below which a node uses fewer threads (default
// 16384). Tests set 1 so that small tensors still exercise every split.
void tg_cpu_set_task_grain(int64_t elems);

// Whether consecutive generation products of the same activations (Q, K and
// V; gate and up) run as one node's work when no hook watches the nodes
// (default true; the same bits either way). Benchmarks compare both.
void tg_cpu_set_mm_grouping(bool on);
// Products planned inside such groups since the process started (tests).
uint64_t tg_cpu_mm_grouped_count(void);

// Records an error found by a kernel (bad row index...). The first error of a
// node wins; the compute loop stops after the node and returns it.
void tg_cpu_fail(const struct tg_cpu_params * p, enum tg_status st, const char * fmt, ...)
    __attribute__((format(printf, 3, 4)));

// A tensor's name for messages ("(unnamed)" when empty).
static inline const char * tg_cpu_tname(const struct tg_tensor * t) { return t->name[0] ? t->name : "(unnamed)"; }

// Per-thread scratch inside wdata: `bytes` rounded up to 64 per thread.
static inline size_t tg_cpu_pad64(size_t bytes) { return (bytes + 63) & ~(size_t) 63; }
static inline size_t tg_cpu_scratch_size(size_t bytes, int nth) { return tg_cpu_pad64(bytes) * (size_t) nth; }
static inline void * tg_cpu_scratch(const struct tg_cpu_params * p, size_t bytes) {
    return (char *) p->wdata + tg_cpu_pad64(bytes) * (size_t) p->ith;
}

// Fixed chunk (elements) for splitting flat elementwise work: a multiple of
// every SIMD width, independent of the thread count (determinism).
#define TG_CPU_CHUNK 4096

// Per-node scratch for the row kernels (compute.c): every thread owns 4 f32
// rows of tg_cpu_row_stride(dst) floats (the widest ne0 of dst and its
// sources + slack); reductions also get one double per row of src0.
int64_t  tg_cpu_row_stride(const struct tg_tensor * dst);
size_t   tg_cpu_row_scratch(const struct tg_tensor * dst);
float *  tg_cpu_rows(const struct tg_cpu_params * p, const struct tg_tensor * dst);
double * tg_cpu_partials(const struct tg_cpu_params * p, const struct tg_tensor * dst);

// ---- row helpers (ops-common.c) ----
static inline char * tg_cpu_row_ptr(const struct tg_tensor * t, int64_t i1, int64_t i2, int64_t i3) {
    return (char *) t->data + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}
// Row index r (over ne1*ne2*ne3 of t) -> (i1, i2, i3).
static inline void tg_cpu_unravel(const struct tg_tensor * t, int64_t r, int64_t * i1, int64_t * i2, int64_t * i3) {
    *i1 = r % t->ne[1]; r /= t->ne[1];
    *i2 = r % t->ne[2]; *i3 = r / t->ne[2];
}
// The rows of a tensor that thread p->ith owns, in order: the one row loop of
// the kernels. Rows are split as tg_cpu_range does (contiguous, deterministic
// chunks); r is the flat row index over ne1*ne2*ne3 of t, (i1,i2,i3) its
// coordinates. Use:
//   for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, t); tg_cpu_row_next(&it);) { ... it.i1 ... }
struct tg_cpu_row_it {
    int64_t r, i1, i2, i3;
    int64_t r0, r1;     // this thread's rows [r0, r1)
    int64_t ne1, ne2;
};
static inline struct tg_cpu_row_it tg_cpu_rows_of(const struct tg_cpu_params * p, const struct tg_tensor * t) {
    struct tg_cpu_row_it it = { .ne1 = t->ne[1], .ne2 = t->ne[2] };
    tg_cpu_range(tg_nrows(t), p->ith, p->nth, &it.r0, &it.r1);
    it.r = it.r0 - 1;
    if (it.r0 < it.r1) tg_cpu_unravel(t, it.r0, &it.i1, &it.i2, &it.i3);
    return it;
}
// Moves to the next row; false when this thread's rows are done.
static inline bool tg_cpu_row_next(struct tg_cpu_row_it * it) {
    if (++it->r >= it->r1) return false;
    if (it->r > it->r0 && ++it->i1 == it->ne1) {
        it->i1 = 0;
        if (++it->i2 == it->ne2) { it->i2 = 0; it->i3++; }
    }
    return true;
}

// Flat elementwise work of n elements cut in fixed chunks (TG_CPU_CHUNK, or
// bytes for byte copies): the chunks thread p->ith owns, [off, off+len) each.
// The chunking does not depend on the thread count, so results do not either.
struct tg_cpu_chunk_it {
    int64_t c, c1, n, chunk;
    int64_t off, len;
};
static inline struct tg_cpu_chunk_it tg_cpu_chunks_of(const struct tg_cpu_params * p, int64_t n, int64_t chunk) {
    struct tg_cpu_chunk_it it = { .n = n, .chunk = chunk };
    tg_cpu_range((n + chunk - 1) / chunk, p->ith, p->nth, &it.c, &it.c1);
    it.c--;
    return it;
}
static inline bool tg_cpu_chunk_next(struct tg_cpu_chunk_it * it) {
    if (++it->c >= it->c1) return false;
    it->off = it->c * it->chunk;
    it->len = it->n - it->off < it->chunk ? it->n - it->off : it->chunk;
    return true;
}

// True for F32/F16/BF16 (types the elementwise kernels convert through f32).
bool tg_cpu_is_float(enum tg_type type);
// Row (i1,i2,i3) of t as f32: a pointer into t when it is F32 with dense rows,
// else converted into tmp (ne0 floats). Any supported non-integer type.
const float * tg_cpu_load_row(const struct tg_tensor * t, int64_t i1, int64_t i2, int64_t i3, float * tmp);
// Where to write row (i1,i2,i3) of t as f32: into t when F32 with dense rows,
// else tmp; tg_cpu_store_row then converts tmp into t (no-op when in place).
float * tg_cpu_dst_row(struct tg_tensor * t, int64_t i1, int64_t i2, int64_t i3, float * tmp);
void    tg_cpu_store_row(struct tg_tensor * t, int64_t i1, int64_t i2, int64_t i3, const float * row);
// Element (logical index) of a plain-typed tensor as f32 / from f32.
float tg_cpu_get_elem(const struct tg_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3);

// ---- f32 vector helpers (ops-vec.c), SIMD-dispatched with scalar fallback ----
void   tg_cpu_vadd(int64_t n, float * z, const float * x, const float * y);
void   tg_cpu_vsub(int64_t n, float * z, const float * x, const float * y);
void   tg_cpu_vmul(int64_t n, float * z, const float * x, const float * y);
void   tg_cpu_vdiv(int64_t n, float * z, const float * x, const float * y);
void   tg_cpu_vscale(int64_t n, float * y, const float * x, float s);
void   tg_cpu_vsilu(int64_t n, float * y, const float * x);
void   tg_cpu_vgelu(int64_t n, float * y, const float * x);
// z = act(x) * g for the GLU variants (enum tg_glu_op).
void   tg_cpu_vglu(int64_t n, int glu_op, float * z, const float * x, const float * g);
float  tg_cpu_vmax(int64_t n, const float * x);
// y = exp(x - m); returns sum(y) accumulated in double.
double tg_cpu_vexp_sum(int64_t n, float * y, const float * x, float m);
double tg_cpu_vsum(int64_t n, const float * x);     // in double, fixed order
double tg_cpu_vsumsq(int64_t n, const float * x);   // sum x^2 in double
// y = (x + b) * s (b, s scalars; used by the norms).
void   tg_cpu_vaxpb(int64_t n, float * y, const float * x, float b, float s);
// Rope rotation of one row's first n_dims elements given per-pair cos/sin (n_dims/2 each).
void   tg_cpu_vrope(int64_t n_dims, int neox, float * y, const float * x, const float * cs, const float * sn);

// ---- kernels (ops-*.c): one per op ----
void tg_cpu_op_dup(const struct tg_cpu_params * p, struct tg_tensor * dst);        // DUP, CPY, CONT
void tg_cpu_op_binary(const struct tg_cpu_params * p, struct tg_tensor * dst);     // ADD, SUB, MUL, DIV
void tg_cpu_op_scale(const struct tg_cpu_params * p, struct tg_tensor * dst);
void tg_cpu_op_unary(const struct tg_cpu_params * p, struct tg_tensor * dst);      // SQR..ABS, SILU, GELU, RELU
void tg_cpu_op_glu(const struct tg_cpu_params * p, struct tg_tensor * dst);
void tg_cpu_op_sum(const struct tg_cpu_params * p, struct tg_tensor * dst);
void tg_cpu_op_sum_rows(const struct tg_cpu_params * p, struct tg_tensor * dst);   // SUM_ROWS, MEAN
void tg_cpu_op_argmax(const struct tg_cpu_params * p, struct tg_tensor * dst);
void tg_cpu_op_repeat(const struct tg_cpu_params * p, struct tg_tensor * dst);
void tg_cpu_op_concat(const struct tg_cpu_params * p, struct tg_tensor * dst);
void tg_cpu_op_get_rows(const struct tg_cpu_params * p, struct tg_tensor * dst);
void tg_cpu_op_set_rows(const struct tg_cpu_params * p, struct tg_tensor * dst);
void tg_cpu_op_norm(const struct tg_cpu_params * p, struct tg_tensor * dst);       // RMS_NORM, NORM
void tg_cpu_op_soft_max(const struct tg_cpu_params * p, struct tg_tensor * dst);
void tg_cpu_op_rope(const struct tg_cpu_params * p, struct tg_tensor * dst);
void tg_cpu_op_diag_mask_inf(const struct tg_cpu_params * p, struct tg_tensor * dst);
void tg_cpu_op_cross_entropy(const struct tg_cpu_params * p, struct tg_tensor * dst);
void tg_cpu_op_set_acc(const struct tg_cpu_params * p, struct tg_tensor * dst);    // SET, ACC
void tg_cpu_op_flash_attn(const struct tg_cpu_params * p, struct tg_tensor * dst);  // ops-attn.c
void tg_cpu_op_silu_back(const struct tg_cpu_params * p, struct tg_tensor * dst);      // ops-back.c
void tg_cpu_op_rms_norm_back(const struct tg_cpu_params * p, struct tg_tensor * dst);
void tg_cpu_op_get_rows_back(const struct tg_cpu_params * p, struct tg_tensor * dst);
void tg_cpu_op_opt_step(const struct tg_cpu_params * p, struct tg_tensor * dst);       // SGD, ADAMW
void tg_cpu_op_unary_back(const struct tg_cpu_params * p, struct tg_tensor * dst);
void tg_cpu_op_norm_back(const struct tg_cpu_params * p, struct tg_tensor * dst);
size_t tg_cpu_flash_attn_work_size(const struct tg_tensor * dst, int nth);

#endif
