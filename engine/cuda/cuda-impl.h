// cuda-impl.h - the private contract between the CUDA backend's host code
// (cuda-backend.c, C) and its kernels (kernels*.cu, CUDA C++): a tensor
// described by value (device address, type, shape, byte strides) and one
// launcher per kernel family. Launchers enqueue on the given stream and never
// synchronise; errors surface through cudaGetLastError in the caller.
#ifndef TG_CUDA_IMPL_H
#define TG_CUDA_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// A tensor as the kernels see it: element (i0,i1,i2,i3) of a plain type at
// data + i0*nb[0] + i1*nb[1] + i2*nb[2] + i3*nb[3]; quantized rows are whole
// blocks along dim 0.
struct tg_cu_t {
    char *  data;
    int     type;      // enum tg_type
    int64_t ne[4];
    int64_t nb[4];
};

typedef struct CUstream_st * tg_cu_stream;   // cudaStream_t

// Element-wise maps of one source (same shape as dst).
enum tg_cu_unary {
    TG_CU_U_SCALE = 0, TG_CU_U_SQR, TG_CU_U_SQRT, TG_CU_U_LOG, TG_CU_U_NEG, TG_CU_U_ABS,
    TG_CU_U_SILU, TG_CU_U_GELU, TG_CU_U_RELU,
};
enum tg_cu_binary { TG_CU_B_ADD = 0, TG_CU_B_SUB, TG_CU_B_MUL, TG_CU_B_DIV };

// Types the kernels read as plain elements (F32, F16, BF16, I32) and those
// whose 32-element sub-blocks they decode (every quantized type but
// Q8_1, Q8_K). ne0 must be a multiple of 32 for the latter.
bool tg_cu_type_plain(int type);
bool tg_cu_type_decodable(int type);

void tg_cu_unary(tg_cu_stream s, int op, float param, struct tg_cu_t dst, struct tg_cu_t a);
void tg_cu_binary(tg_cu_stream s, int op, struct tg_cu_t dst, struct tg_cu_t a, struct tg_cu_t b);
// dst = a converted, element by element in logical (row-major) order; the
// shapes may differ when the element counts agree (CPY).
void tg_cu_copy(tg_cu_stream s, struct tg_cu_t dst, struct tg_cu_t a);
void tg_cu_repeat(tg_cu_stream s, struct tg_cu_t dst, struct tg_cu_t a);
void tg_cu_concat(tg_cu_stream s, struct tg_cu_t dst, struct tg_cu_t a, struct tg_cu_t b, int dim);
// SUM (mode 0: every element into dst[0]), SUM_ROWS (1), MEAN (2), ARGMAX (3).
void tg_cu_reduce(tg_cu_stream s, int mode, struct tg_cu_t dst, struct tg_cu_t a);
// Row ids out of range are skipped; the first writes `tag` into *err.
void tg_cu_get_rows(tg_cu_stream s, struct tg_cu_t dst, struct tg_cu_t a, struct tg_cu_t ids, int * err, int tag);
// RMS_NORM (rms true) or NORM over dim 0.
void tg_cu_norm(tg_cu_stream s, bool rms, float eps, struct tg_cu_t dst, struct tg_cu_t a);
void tg_cu_soft_max(tg_cu_stream s, float scale, float max_bias, struct tg_cu_t dst, struct tg_cu_t a,
                    const struct tg_cu_t * mask);
void tg_cu_rope(tg_cu_stream s, int n_dims, bool neox, float freq_base, float freq_scale, struct tg_cu_t dst,
                struct tg_cu_t a, struct tg_cu_t pos, const struct tg_cu_t * factors);
void tg_cu_glu(tg_cu_stream s, int op, bool swapped, struct tg_cu_t dst, struct tg_cu_t a, const struct tg_cu_t * b);
void tg_cu_diag_mask_inf(tg_cu_stream s, int n_past, struct tg_cu_t dst, struct tg_cu_t a);
// Up to TG_CU_FA_SPLIT_MAX_T query tokens take the split form, which needs
// tg_cu_flash_attn_scratch(q, k, v) bytes of device scratch (0: not that form).
#define TG_CU_FA_SPLIT_MAX_T 8
int64_t tg_cu_flash_attn_scratch(struct tg_cu_t q, struct tg_cu_t k, struct tg_cu_t v);
void tg_cu_flash_attn(tg_cu_stream s, float scale, struct tg_cu_t dst, struct tg_cu_t q, struct tg_cu_t k,
                      struct tg_cu_t v, const struct tg_cu_t * mask, float * scratch);
// Rows of a (any decodable or plain type, dim-0 contiguous) into dense F32
// rows at out (ne0 floats each, rows in (i1, i2, i3) order).
void tg_cu_to_f32(tg_cu_stream s, float * out, struct tg_cu_t a);
// y[r + c*ldy] = sum_k W[r,k] x[k + c*ldx] for rows r < nrows, columns
// c < ncols (at most TG_CU_MMV_MAX_COLS); W rows of ne0 elements of `type`
// every nb1 bytes (ne0 % 32 == 0 unless plain).
#define TG_CU_MMV_MAX_COLS 8

// Types a copy can quantize into (Q8_0, Q4_0), with the CPU's rounding.
bool tg_cu_type_quantizable(int type);
// dst quantized: a's elements quantized (a plain) or its blocks copied (same type).
void tg_cu_copy_quant(tg_cu_stream s, struct tg_cu_t dst, struct tg_cu_t a);
// a quantized (rows of whole blocks, ne0 % 32 == 0): decoded into dst's
// elements in logical order (quantized again for a Q8_0 / Q4_0 dst).
void tg_cu_copy_from_quant(tg_cu_stream s, struct tg_cu_t dst, struct tg_cu_t a);
void tg_cu_set_rows(tg_cu_stream s, struct tg_cu_t dst, struct tg_cu_t b, struct tg_cu_t ids, int * err, int tag);
void tg_cu_set_acc(tg_cu_stream s, bool add, int64_t offset, int64_t nb1, int64_t nb2, int64_t nb3, struct tg_cu_t dst,
                   struct tg_cu_t b);
void tg_cu_cross_entropy(tg_cu_stream s, struct tg_cu_t dst, struct tg_cu_t a, struct tg_cu_t b);
void tg_cu_mmv(tg_cu_stream s, const char * w, int type, int64_t ne0, int64_t nb1, int64_t nrows,
               const float * x, int64_t ldx, float * y, int64_t ldy, int ncols);

#ifdef __cplusplus
}
#endif

#endif
