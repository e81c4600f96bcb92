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
enum { TG_SIMD_SCALAR = 0, TG_SIMD_AVX = 1, TG_SIMD_AVX2 = 2, TG_SIMD_AVX512 = 3 };
int tg_cpu_simd_level(void);

// ---- matrix kernels (matmul.c) ----
// Scratch bytes the node needs (e.g. src1 converted/quantized to the dot type).
size_t tg_cpu_mul_mat_work_size(const struct tg_tensor * dst, int nth);
bool   tg_cpu_mul_mat_supported(const struct tg_tensor * dst);
void   tg_cpu_mul_mat(const struct tg_cpu_params * p, struct tg_tensor * dst);
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

#endif
