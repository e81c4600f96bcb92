// tg/types.h - element types, block formats and row conversions.
//
// Type ids and block layouts are byte-exact with GGUF/ggml so that tensors
// from real GGUF files are used in place. Only the types listed with traits
// are supported by the engine; other ids are valid GGUF ids we reject cleanly.
#ifndef TG_TYPES_H
#define TG_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Values equal GGUF's ggml_type ids (append-only; never renumber).
enum tg_type {  // the list: tg/types.def (one line per type)
#define TG_TYPE_DEF(e, id, ...) TG_TYPE_##e = id,
#include "tg/types.def"
#undef TG_TYPE_DEF
    TG_TYPE_COUNT = 31  // one past the largest id (ids in between are unsupported)
};

#define TG_QK8_0 32
#define TG_QK4_0 32
#define TG_QK_K  256   // super-block of the K-quants and IQ4_XS

typedef uint16_t tg_fp16_t;  // IEEE 754 binary16 bits
typedef uint16_t tg_bf16_t;  // bfloat16 bits (upper half of an f32)

// Q8_0: 32 weights = one f16 scale + 32 signed bytes; x[i] = d * qs[i]. 34 bytes.
typedef struct { tg_fp16_t d; int8_t qs[TG_QK8_0]; } tg_block_q8_0;
// Q4_0: 32 weights = one f16 scale + 16 bytes of nibbles;
// x[j] = d * ((qs[j] & 0xF) - 8), x[j+16] = d * ((qs[j] >> 4) - 8), j < 16. 18 bytes.
typedef struct { tg_fp16_t d; uint8_t qs[TG_QK4_0 / 2]; } tg_block_q4_0;

// Q4_1: x = d * q + m, q = nibbles (elements j and j+16 share byte j). 20 bytes.
typedef struct { tg_fp16_t d, m; uint8_t qs[16]; } tg_block_q4_1;
// Q5_0: x = d * (q - 16), q = nibble | bit j of qh (little-endian u32) << 4. 22 bytes.
typedef struct { tg_fp16_t d; uint8_t qh[4]; uint8_t qs[16]; } tg_block_q5_0;
// Q5_1: x = d * q + m, q as Q5_0 (0..31). 24 bytes.
typedef struct { tg_fp16_t d, m; uint8_t qh[4]; uint8_t qs[16]; } tg_block_q5_1;
// Q8_1 (activations of the Q4_1/Q5_1 dot products): x = d * q, s = d * sum(q). 36 bytes.
typedef struct { tg_fp16_t d, s; int8_t qs[32]; } tg_block_q8_1;
// Q2_K: 16 sub-blocks of 16; scales[i] = 4-bit scale | 4-bit min << 4;
// x = d * sc * q - dmin * m, q 2 bits (0..3). 84 bytes.
typedef struct { uint8_t scales[16]; uint8_t qs[64]; tg_fp16_t d, dmin; } tg_block_q2_K;
// Q3_K: 16 sub-blocks of 16; 6-bit signed scales (minus 32) packed in 12
// bytes; q = 2 low bits + 1 high bit (hmask), x = d * sc * (q - 4). 110 bytes.
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; tg_fp16_t d; } tg_block_q3_K;
// Q4_K: 8 sub-blocks of 32; 6-bit scales and mins packed in 12 bytes;
// x = d * sc * q - dmin * m, q 4 bits. 144 bytes.
typedef struct { tg_fp16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } tg_block_q4_K;
// Q5_K: as Q4_K with a fifth bit per weight in qh. 176 bytes.
typedef struct { tg_fp16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; } tg_block_q5_K;
// Q6_K: 16 sub-blocks of 16, int8 scales; q = 4 low bits (ql) + 2 high
// bits (qh), x = d * sc * (q - 32). 210 bytes.
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; tg_fp16_t d; } tg_block_q6_K;
// Q8_K (activations of the K-quant dot products): f32 d, 256 int8, sums of
// each 16. 292 bytes.
typedef struct { float d; int8_t qs[256]; int16_t bsums[16]; } tg_block_q8_K;
// IQ4_NL: 32 weights, x = d * tg_iq4nl_values[nibble]. 18 bytes.
typedef struct { tg_fp16_t d; uint8_t qs[16]; } tg_block_iq4_nl;
// IQ4_XS: 8 sub-blocks of 32 with 6-bit scales (minus 32; low 4 bits in
// scales_l, high 2 in scales_h), x = d * sc * tg_iq4nl_values[nibble]. 136 bytes.
typedef struct { tg_fp16_t d; uint16_t scales_h; uint8_t scales_l[4]; uint8_t qs[128]; } tg_block_iq4_xs;
// The 16 non-linear levels of IQ4_NL / IQ4_XS.
extern const int8_t tg_iq4nl_values[16];

// Converts n values of a row of this type to/from f32. `from_float` quantizes
// (n must be a multiple of the block size).
typedef void (*tg_to_float_fn)(const void * src, float * dst, int64_t n);
typedef void (*tg_from_float_fn)(const float * src, void * dst, int64_t n);

struct tg_type_traits {
    const char *     name;        // "f32", "q8_0" ... (GGUF/ggml spelling)
    int64_t          blck_size;   // elements per block (1 for plain types)
    size_t           type_size;   // bytes per block
    bool             is_quantized;
    tg_to_float_fn   to_float;    // NULL for integer types
    tg_from_float_fn from_float;  // NULL for integer types
};

// Returns the traits of a supported type, or NULL for an unsupported or
// out-of-range id (never aborts: ids come from files).
const struct tg_type_traits * tg_type_traits(enum tg_type type);
// True when `type` is a value the engine can hold and compute with.
bool        tg_type_supported(int type);
// Name of the type, or "unknown" for an unsupported id.
const char * tg_type_name(enum tg_type type);
// Bytes of a row of ne0 elements (ne0 must be a multiple of the block size).
size_t      tg_row_size(enum tg_type type, int64_t ne0);
int64_t     tg_blck_size(enum tg_type type);
size_t      tg_type_size(enum tg_type type);

// Scalar conversions (round to nearest even; NaN/Inf preserved).
float      tg_fp16_to_fp32(tg_fp16_t h);
tg_fp16_t  tg_fp32_to_fp16(float f);
float      tg_bf16_to_fp32(tg_bf16_t h);
tg_bf16_t  tg_fp32_to_bf16(float f);

// Row conversions, also reachable through the traits table.
void tg_fp16_to_fp32_row(const tg_fp16_t * x, float * y, int64_t n);
void tg_fp32_to_fp16_row(const float * x, tg_fp16_t * y, int64_t n);
void tg_bf16_to_fp32_row(const tg_bf16_t * x, float * y, int64_t n);
void tg_fp32_to_bf16_row(const float * x, tg_bf16_t * y, int64_t n);
void tg_quantize_row_q8_0(const float * x, tg_block_q8_0 * y, int64_t n);
void tg_dequantize_row_q8_0(const tg_block_q8_0 * x, float * y, int64_t n);
void tg_quantize_row_q4_0(const float * x, tg_block_q4_0 * y, int64_t n);
void tg_dequantize_row_q4_0(const tg_block_q4_0 * x, float * y, int64_t n);
void tg_quantize_row_q4_1(const float * x, tg_block_q4_1 * y, int64_t n);
void tg_dequantize_row_q4_1(const tg_block_q4_1 * x, float * y, int64_t n);
void tg_quantize_row_q5_0(const float * x, tg_block_q5_0 * y, int64_t n);
void tg_dequantize_row_q5_0(const tg_block_q5_0 * x, float * y, int64_t n);
void tg_quantize_row_q5_1(const float * x, tg_block_q5_1 * y, int64_t n);
void tg_dequantize_row_q5_1(const tg_block_q5_1 * x, float * y, int64_t n);
void tg_dequantize_row_q8_1(const tg_block_q8_1 * x, float * y, int64_t n);
void tg_quantize_row_q2_K(const float * x, tg_block_q2_K * y, int64_t n);
void tg_dequantize_row_q2_K(const tg_block_q2_K * x, float * y, int64_t n);
void tg_quantize_row_q3_K(const float * x, tg_block_q3_K * y, int64_t n);
void tg_dequantize_row_q3_K(const tg_block_q3_K * x, float * y, int64_t n);
void tg_quantize_row_q4_K(const float * x, tg_block_q4_K * y, int64_t n);
void tg_dequantize_row_q4_K(const tg_block_q4_K * x, float * y, int64_t n);
void tg_quantize_row_q5_K(const float * x, tg_block_q5_K * y, int64_t n);
void tg_dequantize_row_q5_K(const tg_block_q5_K * x, float * y, int64_t n);
void tg_quantize_row_q6_K(const float * x, tg_block_q6_K * y, int64_t n);
void tg_dequantize_row_q6_K(const tg_block_q6_K * x, float * y, int64_t n);
void tg_dequantize_row_q8_K(const tg_block_q8_K * x, float * y, int64_t n);
void tg_quantize_row_iq4_nl(const float * x, tg_block_iq4_nl * y, int64_t n);
void tg_dequantize_row_iq4_nl(const tg_block_iq4_nl * x, float * y, int64_t n);
void tg_quantize_row_iq4_xs(const float * x, tg_block_iq4_xs * y, int64_t n);
void tg_dequantize_row_iq4_xs(const tg_block_iq4_xs * x, float * y, int64_t n);
// Activation rows for the dot products (n a multiple of the block size).
void tg_quantize_row_q8_1(const float * x, tg_block_q8_1 * y, int64_t n);
void tg_quantize_row_q8_K(const float * x, tg_block_q8_K * y, int64_t n);
// The type whose rows a weight type's dot product reads as activations
// (Q8_0, Q8_1 or Q8_K; F32 for float types).
enum tg_type tg_type_vec_dot_type(enum tg_type type);

#ifdef __cplusplus
}
#endif
#endif // TG_TYPES_H
