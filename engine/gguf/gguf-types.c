// gguf-types.c - GGUF value types, the ggml tensor type table (block layouts
// of every id a GGUF file may carry) and the name index used for look-ups.
#include "gguf-impl.h"

#include <stdlib.h>
#include <string.h>

// Block layouts as documented for GGUF/ggml tensor types. Ids 4, 5, 31-33 and
// 36-38 were removed from the format and stay unknown here.
static const struct tg_gguf_type_layout layouts[TG_GGUF_N_TENSOR_TYPES] = {
    [0]  = {"f32",     1,   4},  [1]  = {"f16",     1,   2},
    [2]  = {"q4_0",    32,  18}, [3]  = {"q4_1",    32,  20},
    [6]  = {"q5_0",    32,  22}, [7]  = {"q5_1",    32,  24},
    [8]  = {"q8_0",    32,  34}, [9]  = {"q8_1",    32,  36},
    [10] = {"q2_K",    256, 84}, [11] = {"q3_K",    256, 110},
    [12] = {"q4_K",    256, 144},[13] = {"q5_K",    256, 176},
    [14] = {"q6_K",    256, 210},[15] = {"q8_K",    256, 292},
    [16] = {"iq2_xxs", 256, 66}, [17] = {"iq2_xs",  256, 74},
    [18] = {"iq3_xxs", 256, 98}, [19] = {"iq1_s",   256, 50},
    [20] = {"iq4_nl",  32,  18}, [21] = {"iq3_s",   256, 110},
    [22] = {"iq2_s",   256, 82}, [23] = {"iq4_xs",  256, 136},
    [24] = {"i8",      1,   1},  [25] = {"i16",     1,   2},
    [26] = {"i32",     1,   4},  [27] = {"i64",     1,   8},
    [28] = {"f64",     1,   8},  [29] = {"iq1_m",   256, 56},
    [30] = {"bf16",    1,   2},
    [34] = {"tq1_0",   256, 54}, [35] = {"tq2_0",   256, 66},
    [39] = {"mxfp4",   32,  17},
};

const struct tg_gguf_type_layout * tg_gguf_layout(uint32_t type) {
    if (type >= TG_GGUF_N_TENSOR_TYPES || layouts[type].blck_size == 0) return NULL;
    return &layouts[type];
}

const char * tg_gguf_tensor_type_name(int type) {
    const struct tg_gguf_type_layout * l = type < 0 ? NULL : tg_gguf_layout((uint32_t) type);
    return l ? l->name : "unknown";
}

bool tg_gguf_tensor_type_known(int type) {
    return type >= 0 && tg_gguf_layout((uint32_t) type) != NULL;
}

size_t tg_gguf_tensor_nbytes(int type, int n_dims, const int64_t * ne) {
    const struct tg_gguf_type_layout * l = type < 0 ? NULL : tg_gguf_layout((uint32_t) type);
    if (!l || n_dims < 1 || n_dims > TG_MAX_DIMS || !ne) return 0;
    if (ne[0] <= 0 || ne[0] % l->blck_size != 0) return 0;
    uint64_t bytes = (uint64_t) (ne[0] / l->blck_size) * l->type_size;
    for (int d = 1; d < n_dims; d++) {
        if (ne[d] <= 0 || __builtin_mul_overflow(bytes, (uint64_t) ne[d], &bytes)) return 0;
    }
    if (bytes > SIZE_MAX) return 0;
    return (size_t) bytes;
}

static const char * const value_type_names[TG_GGUF_TYPE_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
    "string", "array", "uint64", "int64", "float64",
};

const char * tg_gguf_type_name(enum tg_gguf_type t) {
    if ((int) t < 0 || t >= TG_GGUF_TYPE_COUNT) return "unknown";
    return value_type_names[t];
}

size_t tg_gguf_type_size(enum tg_gguf_type t) {
    switch (t) {
    case TG_GGUF_UINT8: case TG_GGUF_INT8: case TG_GGUF_BOOL: return 1;
    case TG_GGUF_UINT16: case TG_GGUF_INT16: return 2;
    case TG_GGUF_UINT32: case TG_GGUF_INT32: case TG_GGUF_FLOAT32: return 4;
    case TG_GGUF_UINT64: case TG_GGUF_INT64: case TG_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

uint64_t tg_gguf_hash(const char * s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) { h ^= (uint8_t) *s; h *= 1099511628211ull; }
    return h;
}

#define NAME_AT(names, stride, i) (*(const char * const *) ((const char *) (names) + (size_t) (i) * (stride)))

int64_t * tg_gguf_index(const char * const * names, size_t stride, int64_t n, size_t * cap_out, int64_t * dup) {
    size_t cap = 16;
    while (cap < (size_t) n * 2) cap *= 2;
    int64_t * t = malloc(cap * sizeof(*t));
    if (!t) return NULL;
    for (size_t i = 0; i < cap; i++) t[i] = -1;
    *dup = -1;
    for (int64_t i = 0; i < n; i++) {
        const char * name = NAME_AT(names, stride, i);
        size_t h = (size_t) tg_gguf_hash(name) & (cap - 1);
        while (t[h] >= 0) {
            if (strcmp(NAME_AT(names, stride, t[h]), name) == 0) {
                if (*dup < 0) *dup = i;
                goto next;
            }
            h = (h + 1) & (cap - 1);
        }
        t[h] = i;
    next:;
    }
    *cap_out = cap;
    return t;
}

int64_t tg_gguf_index_find(const int64_t * t, size_t cap, const char * const * names, size_t stride,
                           const char * name) {
    if (!t || !name) return -1;
    size_t h = (size_t) tg_gguf_hash(name) & (cap - 1);
    while (t[h] >= 0) {
        if (strcmp(NAME_AT(names, stride, t[h]), name) == 0) return t[h];
        h = (h + 1) & (cap - 1);
    }
    return -1;
}
