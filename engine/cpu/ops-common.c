// ops-common.c - row access helpers shared by the kernels: read a row of any
// layout/type as f32, write an f32 row back converting (and quantizing).
#include "cpu/cpu-impl.h"

#include <string.h>

bool tg_cpu_is_float(enum tg_type type) {
    return type == TG_TYPE_F32 || type == TG_TYPE_F16 || type == TG_TYPE_BF16;
}

static float elem_at(const char * p, enum tg_type type) {
    switch (type) {
        case TG_TYPE_F32:  return *(const float *) p;
        case TG_TYPE_F16:  return tg_fp16_to_fp32(*(const tg_fp16_t *) p);
        case TG_TYPE_BF16: return tg_bf16_to_fp32(*(const tg_bf16_t *) p);
        case TG_TYPE_F64:  return (float) *(const double *) p;
        case TG_TYPE_I8:   return (float) *(const int8_t *) p;
        case TG_TYPE_I16:  return (float) *(const int16_t *) p;
        case TG_TYPE_I32:  return (float) *(const int32_t *) p;
        case TG_TYPE_I64:  return (float) *(const int64_t *) p;
        default:           return 0.0f;
    }
}

static void elem_put(char * p, enum tg_type type, float v) {
    switch (type) {
        case TG_TYPE_F32:  *(float *) p = v; break;
        case TG_TYPE_F16:  *(tg_fp16_t *) p = tg_fp32_to_fp16(v); break;
        case TG_TYPE_BF16: *(tg_bf16_t *) p = tg_fp32_to_bf16(v); break;
        case TG_TYPE_F64:  *(double *) p = v; break;
        case TG_TYPE_I8:   *(int8_t *) p = (int8_t) v; break;
        case TG_TYPE_I16:  *(int16_t *) p = (int16_t) v; break;
        case TG_TYPE_I32:  *(int32_t *) p = (int32_t) v; break;
        case TG_TYPE_I64:  *(int64_t *) p = (int64_t) v; break;
        default: break;
    }
}

float tg_cpu_get_elem(const struct tg_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return elem_at(tg_cpu_row_ptr(t, i1, i2, i3) + i0 * t->nb[0], t->type);
}

const float * tg_cpu_load_row(const struct tg_tensor * t, int64_t i1, int64_t i2, int64_t i3, float * tmp) {
    const char * row = tg_cpu_row_ptr(t, i1, i2, i3);
    const int64_t n = t->ne[0];
    const size_t es = tg_type_size(t->type);
    const struct tg_type_traits * tr = tg_type_traits(t->type);
    if (tr && tr->is_quantized) {
        tr->to_float(row, tmp, n);
        return tmp;
    }
    if (t->nb[0] == es) {
        switch (t->type) {
            case TG_TYPE_F32:  return (const float *) row;
            case TG_TYPE_F16:  tg_fp16_to_fp32_row((const tg_fp16_t *) row, tmp, n); return tmp;
            case TG_TYPE_BF16: tg_bf16_to_fp32_row((const tg_bf16_t *) row, tmp, n); return tmp;
            default: break;
        }
    }
    for (int64_t i = 0; i < n; i++) tmp[i] = elem_at(row + i * t->nb[0], t->type);
    return tmp;
}

float * tg_cpu_dst_row(struct tg_tensor * t, int64_t i1, int64_t i2, int64_t i3, float * tmp) {
    if (t->type == TG_TYPE_F32 && t->nb[0] == sizeof(float)) return (float *) tg_cpu_row_ptr(t, i1, i2, i3);
    return tmp;
}

void tg_cpu_store_row(struct tg_tensor * t, int64_t i1, int64_t i2, int64_t i3, const float * src) {
    char * row = tg_cpu_row_ptr(t, i1, i2, i3);
    const int64_t n = t->ne[0];
    const size_t es = tg_type_size(t->type);
    const struct tg_type_traits * tr = tg_type_traits(t->type);
    if (tr && tr->is_quantized) {
        tr->from_float(src, row, n);
        return;
    }
    if (t->nb[0] == es) {
        switch (t->type) {
            case TG_TYPE_F32:
                if ((const void *) src != (void *) row) memmove(row, src, (size_t) n * sizeof(float));
                return;
            case TG_TYPE_F16:  tg_fp32_to_fp16_row(src, (tg_fp16_t *) row, n); return;
            case TG_TYPE_BF16: tg_fp32_to_bf16_row(src, (tg_bf16_t *) row, n); return;
            default: break;
        }
    }
    for (int64_t i = 0; i < n; i++) elem_put(row + i * t->nb[0], t->type, src[i]);
}
