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
enum tg_type {
    TG_TYPE_F32  = 0,
    TG_TYPE_F16  = 1,
    TG_TYPE_Q4_0 = 2,
    TG_TYPE_Q8_0 = 8,
    TG_TYPE_I8   = 24,
    TG_TYPE_I16  = 25,
    TG_TYPE_I32  = 26,
    TG_TYPE_I64  = 27,
    TG_TYPE_F64  = 28,
    TG_TYPE_BF16 = 30,
    TG_TYPE_COUNT = 31  // one past the largest id (ids in between are unsupported)
};

#define TG_QK8_0 32
#define TG_QK4_0 32

typedef uint16_t tg_fp16_t;  // IEEE 754 binary16 bits
typedef uint16_t tg_bf16_t;  // bfloat16 bits (upper half of an f32)

// Q8_0: 32 weights = one f16 scale + 32 signed bytes; x[i] = d * qs[i]. 34 bytes.
typedef struct { tg_fp16_t d; int8_t qs[TG_QK8_0]; } tg_block_q8_0;
// Q4_0: 32 weights = one f16 scale + 16 bytes of nibbles;
// x[j] = d * ((qs[j] & 0xF) - 8), x[j+16] = d * ((qs[j] >> 4) - 8), j < 16. 18 bytes.
typedef struct { tg_fp16_t d; uint8_t qs[TG_QK4_0 / 2]; } tg_block_q4_0;

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

#ifdef __cplusplus
}
#endif
#endif // TG_TYPES_H
