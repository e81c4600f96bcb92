// tensor.c - tensor creation, names, flags, predicates, element access.
#include "core-impl.h"
#include "text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum tg_status tg__check_shape(enum tg_type type, int n_dims, const int64_t * ne, size_t * nbytes, const char * what) {
    const struct tg_type_traits * tt = tg_type_traits(type);
    if (!tt) return tg_error(TG_ERR_TYPE, "%s: unsupported type id %d", what, (int) type);
    if (n_dims < 1 || n_dims > TG_MAX_DIMS) return tg_error(TG_ERR_INVALID_ARG, "%s: n_dims %d not in 1..%d", what, n_dims, TG_MAX_DIMS);
    if (!ne) return tg_error(TG_ERR_INVALID_ARG, "%s: ne is NULL", what);
    for (int i = 0; i < n_dims; i++) {
        if (ne[i] < 1) return tg_error(TG_ERR_SHAPE, "%s: ne%d = %lld (must be >= 1)", what, i, (long long) ne[i]);
    }
    if (ne[0] % tt->blck_size != 0) {
        return tg_error(TG_ERR_SHAPE, "%s: ne0 = %lld is not a multiple of the %s block size %lld",
                        what, (long long) ne[0], tt->name, (long long) tt->blck_size);
    }
    size_t total = tt->type_size * (size_t) (ne[0] / tt->blck_size);
    bool overflow = (uint64_t) (ne[0] / tt->blck_size) > SIZE_MAX / tt->type_size;
    for (int i = 1; i < n_dims && !overflow; i++) overflow = __builtin_mul_overflow(total, (size_t) ne[i], &total);
    if (overflow || total > (SIZE_MAX >> 2)) {
        return tg_error(TG_ERR_SHAPE, "%s: byte size of [%lld,%lld,%lld,%lld] %s overflows", what,
                        (long long) ne[0], (long long) (n_dims > 1 ? ne[1] : 1), (long long) (n_dims > 2 ? ne[2] : 1),
                        (long long) (n_dims > 3 ? ne[3] : 1), tt->name);
    }
    if (nbytes) *nbytes = total;
    return TG_OK;
}

struct tg_tensor * tg__new_tensor(struct tg_context * ctx, enum tg_type type, int n_dims,
                                  const int64_t * ne, struct tg_tensor * view_src, size_t view_offs,
                                  const char * what) {
    if (!ctx) { tg_error(TG_ERR_INVALID_ARG, "%s: context is NULL", what); return NULL; }
    size_t nbytes = 0;
    if (tg__check_shape(type, n_dims, ne, &nbytes, what) != TG_OK) return NULL;
    if (view_src && view_src->view_src) {
        view_offs += view_src->view_offs;
        view_src = view_src->view_src;
    }
    bool with_data = !view_src && !ctx->no_alloc;
    size_t hdr = TG_PAD(sizeof(struct tg_tensor), TG_MEM_ALIGN);
    size_t payload = hdr + (with_data ? nbytes : 0);
    // the tensor's description, for the error only (formatting it for every
    // tensor of every graph build was a measurable part of generation)
    char desc[160] = "tensor";
    if (payload < hdr || !tg__arena_fits(ctx, payload))
        snprintf(desc, sizeof(desc), "tensor [%lld,%lld,%lld,%lld] %s (%s)", (long long) ne[0],
                 (long long) (n_dims > 1 ? ne[1] : 1), (long long) (n_dims > 2 ? ne[2] : 1),
                 (long long) (n_dims > 3 ? ne[3] : 1), tg_type_name(type), what);
    if (payload < hdr) { tg_error(TG_ERR_NOMEM, "%s: size overflows", desc); return NULL; }
    char * mem = tg__arena_alloc(ctx, payload, TG_OBJ_TENSOR, desc);
    if (!mem) return NULL;
    struct tg_tensor * t = (struct tg_tensor *) mem;
    const struct tg_type_traits * tt = tg_type_traits(type);
    t->type = type;
    for (int i = 0; i < TG_MAX_DIMS; i++) t->ne[i] = i < n_dims ? ne[i] : 1;
    t->nb[0] = tt->type_size;
    t->nb[1] = tt->type_size * (size_t) (t->ne[0] / tt->blck_size);
    for (int i = 2; i < TG_MAX_DIMS; i++) t->nb[i] = t->nb[i - 1] * (size_t) t->ne[i - 1];
    t->view_src = view_src;
    t->view_offs = view_src ? view_offs : 0;
    if (with_data) t->data = mem + hdr;
    else if (view_src && view_src->data) t->data = (char *) view_src->data + view_offs;
    t->ctx = ctx;
    t->id = ctx->n_tensors++;
    return t;
}

struct tg_tensor * tg_new_tensor(struct tg_context * ctx, enum tg_type type, int n_dims, const int64_t * ne) {
    return tg__new_tensor(ctx, type, n_dims, ne, NULL, 0, "new_tensor");
}

struct tg_tensor * tg_new_tensor_1d(struct tg_context * ctx, enum tg_type type, int64_t ne0) {
    return tg_new_tensor(ctx, type, 1, &ne0);
}

struct tg_tensor * tg_new_tensor_2d(struct tg_context * ctx, enum tg_type type, int64_t ne0, int64_t ne1) {
    const int64_t ne[2] = { ne0, ne1 };
    return tg_new_tensor(ctx, type, 2, ne);
}

struct tg_tensor * tg_new_tensor_3d(struct tg_context * ctx, enum tg_type type, int64_t ne0, int64_t ne1, int64_t ne2) {
    const int64_t ne[3] = { ne0, ne1, ne2 };
    return tg_new_tensor(ctx, type, 3, ne);
}

struct tg_tensor * tg_new_tensor_4d(struct tg_context * ctx, enum tg_type type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    const int64_t ne[4] = { ne0, ne1, ne2, ne3 };
    return tg_new_tensor(ctx, type, 4, ne);
}

struct tg_tensor * tg_dup_tensor(struct tg_context * ctx, const struct tg_tensor * src) {
    if (!src) { tg_error(TG_ERR_INVALID_ARG, "dup_tensor: src is NULL"); return NULL; }
    return tg__new_tensor(ctx, src->type, TG_MAX_DIMS, src->ne, NULL, 0, "dup_tensor");
}

// ---- names and flags ------------------------------------------------------

struct tg_tensor * tg_set_name(struct tg_tensor * t, const char * name) {
    if (!t) return NULL;
    size_t n = name ? strnlen(name, sizeof(t->name) - 1) : 0;   // snprintf "%s", without its cost
    memcpy(t->name, name ? name : "", n);
    t->name[n] = 0;
    return t;
}

// The names the graph builders write ("%s-%d", "%s (view)") took most of a
// token's graph-building time through vsnprintf: formats made only of %s, %d
// and %% are written here (the same output, truncated the same way), the
// others go to vsnprintf.
bool tg_format_simple(char * out, size_t cap, const char * fmt, va_list ap) {
    for (const char * f = fmt; *f; f++)
        if (*f == '%' && f[1] != 's' && f[1] != 'd' && f[1] != '%') return false;
    size_t n = 0;
    for (const char * f = fmt; *f; f++) {
        char num[16];
        const char * piece;
        size_t len;
        if (*f != '%') { piece = f; len = 1; }
        else if (*++f == '%') { piece = f; len = 1; }
        else if (*f == 's') { piece = va_arg(ap, const char *); if (!piece) piece = "(null)"; len = strlen(piece); }
        else {
            int v = va_arg(ap, int);
            unsigned u = v < 0 ? 0u - (unsigned) v : (unsigned) v;
            char * e = num + sizeof(num), * q = e;
            do { *--q = (char) ('0' + u % 10); u /= 10; } while (u);
            if (v < 0) *--q = '-';
            piece = q;
            len = (size_t) (e - q);
        }
        if (n + 1 < cap) {
            size_t c = len < cap - 1 - n ? len : cap - 1 - n;
            memcpy(out + n, piece, c);
        }
        n += len;
    }
    if (cap) out[n < cap ? n : cap - 1] = 0;
    return true;
}

struct tg_tensor * tg_format_name(struct tg_tensor * t, const char * fmt, ...) {
    if (!t) return NULL;
    va_list ap;
    va_start(ap, fmt);
    bool done = tg_format_simple(t->name, sizeof(t->name), fmt, ap);
    va_end(ap);
    if (!done) {
        va_start(ap, fmt);
        vsnprintf(t->name, sizeof(t->name), fmt, ap);
        va_end(ap);
    }
    return t;
}

const char * tg_get_name(const struct tg_tensor * t) { return t ? t->name : ""; }
void tg_set_input(struct tg_tensor * t)  { if (t) t->flags |= TG_FLAG_INPUT; }
void tg_set_output(struct tg_tensor * t) { if (t) t->flags |= TG_FLAG_OUTPUT; }
void tg_set_param(struct tg_tensor * t)  { if (t) t->flags |= TG_FLAG_PARAM; }
void tg_set_loss(struct tg_tensor * t)   { if (t) t->flags |= TG_FLAG_LOSS; }

// ---- predicates -----------------------------------------------------------

int64_t tg_nelements(const struct tg_tensor * t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }
int64_t tg_nrows(const struct tg_tensor * t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

size_t tg_nbytes(const struct tg_tensor * t) {
    for (int i = 0; i < TG_MAX_DIMS; i++) if (t->ne[i] <= 0) return 0;
    int64_t blck = tg_blck_size(t->type);
    if (blck <= 0) return 0;
    if (blck == 1) {   // last byte reachable + 1: one element plus every stride step
        size_t n = tg_type_size(t->type);
        for (int i = 0; i < TG_MAX_DIMS; i++) n += (size_t) (t->ne[i] - 1) * t->nb[i];
        return n;
    }
    size_t n = (size_t) (t->ne[0] / blck) * t->nb[0];
    for (int i = 1; i < TG_MAX_DIMS; i++) n += (size_t) (t->ne[i] - 1) * t->nb[i];
    return n;
}

int tg_n_dims(const struct tg_tensor * t) {
    for (int i = TG_MAX_DIMS - 1; i >= 1; i--) if (t->ne[i] > 1) return i + 1;
    return 1;
}

bool tg_is_contiguous(const struct tg_tensor * t) {
    int64_t blck = tg_blck_size(t->type);
    if (blck <= 0) return false;
    size_t next = tg_type_size(t->type);
    // dims of size 1 may have any stride (ggml's rule)
    if (t->ne[0] != blck && t->nb[0] != next) return false;
    next *= (size_t) (t->ne[0] / blck);
    for (int i = 1; i < TG_MAX_DIMS; i++) {
        if (t->ne[i] != 1 && t->nb[i] != next) return false;
        next *= (size_t) t->ne[i];
    }
    return true;
}

bool tg_is_contiguous_rows(const struct tg_tensor * t) { return t->nb[0] == tg_type_size(t->type); }
bool tg_is_transposed(const struct tg_tensor * t) { return t->nb[0] > t->nb[1]; }
bool tg_is_permuted(const struct tg_tensor * t) { return t->nb[0] > t->nb[1] || t->nb[1] > t->nb[2] || t->nb[2] > t->nb[3]; }
bool tg_is_view(const struct tg_tensor * t) { return t->view_src != NULL; }

bool tg_are_same_shape(const struct tg_tensor * a, const struct tg_tensor * b) {
    for (int i = 0; i < TG_MAX_DIMS; i++) if (a->ne[i] != b->ne[i]) return false;
    return true;
}

bool tg_can_repeat(const struct tg_tensor * a, const struct tg_tensor * b) {
    for (int i = 0; i < TG_MAX_DIMS; i++) {
        if (a->ne[i] <= 0 || b->ne[i] % a->ne[i] != 0) return false;
    }
    return true;
}

char * tg_shape_str(const struct tg_tensor * t, char * buf, size_t n) {
    if (!buf || n == 0) return buf;
    if (!t) { snprintf(buf, n, "(null)"); return buf; }
    snprintf(buf, n, "[%lld,%lld,%lld,%lld] %s", (long long) t->ne[0], (long long) t->ne[1],
             (long long) t->ne[2], (long long) t->ne[3], tg_type_name(t->type));
    return buf;
}

// Built from the same list as the enum: a name cannot go missing or shift.
static const char * const op_names[] = {
#define TG_OP_DEF(e, name) [TG_OP_##e] = name,
#include "tg/ops.def"
#undef TG_OP_DEF
};
_Static_assert(sizeof(op_names) / sizeof(op_names[0]) == TG_OP_COUNT, "one name per op");

const char * tg_op_name(enum tg_op op) {
    if ((int) op < 0 || op >= TG_OP_COUNT) return "UNKNOWN";
    return op_names[op];
}

bool tg_op_is_view(enum tg_op op) {
    return op == TG_OP_VIEW || op == TG_OP_RESHAPE || op == TG_OP_PERMUTE || op == TG_OP_TRANSPOSE;
}

int32_t tg_get_op_param_i32(const struct tg_tensor * t, int i) {
    if (!t || i < 0 || i >= TG_MAX_OP_PARAMS) return 0;
    return t->op_params[i];
}

float tg_get_op_param_f32(const struct tg_tensor * t, int i) {
    if (!t || i < 0 || i >= TG_MAX_OP_PARAMS) return 0.0f;
    float f;
    memcpy(&f, &t->op_params[i], sizeof(f));
    return f;
}

// ---- element access -------------------------------------------------------

// Address of the block holding element (i0..i3), and the index inside it.
// NULL (with last error) when the tensor has no data or the index is out of range.
static char * element_ptr(const struct tg_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3,
                          int64_t * in_block, const char * what) {
    if (!t) { tg_error(TG_ERR_INVALID_ARG, "%s: tensor is NULL", what); return NULL; }
    if (!t->data) {
        tg_error(TG_ERR_NO_BUFFER, "%s: tensor '%s' has no host data", what, t->name);
        return NULL;
    }
    const int64_t idx[4] = { i0, i1, i2, i3 };
    for (int i = 0; i < TG_MAX_DIMS; i++) {
        if (idx[i] < 0 || idx[i] >= t->ne[i]) {
            tg_error(TG_ERR_INVALID_ARG, "%s: index %lld out of range for dim %d of '%s' (ne = %lld)",
                     what, (long long) idx[i], i, t->name, (long long) t->ne[i]);
            return NULL;
        }
    }
    int64_t blck = tg_blck_size(t->type);
    if (blck <= 0) { tg_error(TG_ERR_TYPE, "%s: unsupported type of '%s'", what, t->name); return NULL; }
    *in_block = i0 % blck;
    return (char *) t->data + (size_t) (i0 / blck) * t->nb[0] + (size_t) i1 * t->nb[1] +
           (size_t) i2 * t->nb[2] + (size_t) i3 * t->nb[3];
}

float tg_get_f32_nd(const struct tg_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    int64_t k = 0;
    const char * p = element_ptr(t, i0, i1, i2, i3, &k, "get_f32_nd");
    if (!p) return NAN;
    switch (t->type) {
        case TG_TYPE_F32:  { float v; memcpy(&v, p, 4); return v; }
        case TG_TYPE_F16:  { tg_fp16_t h; memcpy(&h, p, 2); return tg_fp16_to_fp32(h); }
        case TG_TYPE_BF16: { tg_bf16_t h; memcpy(&h, p, 2); return tg_bf16_to_fp32(h); }
        case TG_TYPE_F64:  { double v; memcpy(&v, p, 8); return (float) v; }
        case TG_TYPE_I8:   return (float) *(const int8_t *) p;
        case TG_TYPE_I16:  { int16_t v; memcpy(&v, p, 2); return (float) v; }
        case TG_TYPE_I32:  { int32_t v; memcpy(&v, p, 4); return (float) v; }
        case TG_TYPE_I64:  { int64_t v; memcpy(&v, p, 8); return (float) v; }
        case TG_TYPE_Q8_0:
        case TG_TYPE_Q4_0: {
            float blk[64];
            tg_type_traits(t->type)->to_float(p, blk, tg_blck_size(t->type));
            return blk[k];
        }
        default: break;
    }
    tg_error(TG_ERR_TYPE, "get_f32_nd: unsupported type %s", tg_type_name(t->type));
    return NAN;
}

static int64_t clamp_i64(float v, double lo, double hi) {
    if (v != v) return 0;
    double d = v;
    if (d < lo) d = lo;
    if (d > hi) d = hi;
    return (int64_t) d;
}

// Quantized types are not written (a single element cannot be set without
// re-quantizing its whole block): the call sets TG_ERR_UNSUPPORTED and returns.
void tg_set_f32_nd(struct tg_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, float v) {
    int64_t k = 0;
    char * p = element_ptr(t, i0, i1, i2, i3, &k, "set_f32_nd");
    if (!p) return;
    switch (t->type) {
        case TG_TYPE_F32:  memcpy(p, &v, 4); return;
        case TG_TYPE_F16:  { tg_fp16_t h = tg_fp32_to_fp16(v); memcpy(p, &h, 2); return; }
        case TG_TYPE_BF16: { tg_bf16_t h = tg_fp32_to_bf16(v); memcpy(p, &h, 2); return; }
        case TG_TYPE_F64:  { double d = v; memcpy(p, &d, 8); return; }
        case TG_TYPE_I8:   *(int8_t *) p = (int8_t) clamp_i64(v, INT8_MIN, INT8_MAX); return;
        case TG_TYPE_I16:  { int16_t x = (int16_t) clamp_i64(v, INT16_MIN, INT16_MAX); memcpy(p, &x, 2); return; }
        case TG_TYPE_I32:  { int32_t x = (int32_t) clamp_i64(v, INT32_MIN, INT32_MAX); memcpy(p, &x, 4); return; }
        case TG_TYPE_I64:  { int64_t x = clamp_i64(v, -9.2e18, 9.2e18); memcpy(p, &x, 8); return; }
        default: break;
    }
    tg_error(TG_ERR_UNSUPPORTED, "set_f32_nd: cannot set one element of a %s tensor ('%s')",
             tg_type_name(t->type), t->name);
}
