// ops.c - op constructors: elementwise, reductions, matrix products, norms,
// soft_max, rope, glu, masks, losses. Views, copies and set/acc live in
// ops-view.c. Every constructor checks its inputs and returns NULL with a
// message naming the op and the shapes; nothing is computed here.
#include "core-impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

// ---- helpers --------------------------------------------------------------

static struct tg_tensor * vfail(enum tg_status st, const char * op, const struct tg_tensor * a,
                                const struct tg_tensor * b, const char * fmt, va_list ap) {
    char detail[512], sa[96], sb[96];
    vsnprintf(detail, sizeof(detail), fmt, ap);
    if (b) tg_error(st, "%s: a %s and b %s: %s", op, tg_shape_str(a, sa, sizeof(sa)), tg_shape_str(b, sb, sizeof(sb)), detail);
    else   tg_error(st, "%s: a %s: %s", op, tg_shape_str(a, sa, sizeof(sa)), detail);
    return NULL;
}

struct tg_tensor * tg__fail1(enum tg_status st, const char * op, const struct tg_tensor * a, const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(st, op, a, NULL, fmt, ap);
    va_end(ap);
    return NULL;
}

struct tg_tensor * tg__fail2(enum tg_status st, const char * op, const struct tg_tensor * a,
                             const struct tg_tensor * b, const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(st, op, a, b, fmt, ap);
    va_end(ap);
    return NULL;
}

struct tg_tensor * tg__null_arg(const char * op, const char * what) {
    if (tg_last_status() != TG_OK && tg_last_error()[0]) {
        char prev[600];
        snprintf(prev, sizeof(prev), "%s", tg_last_error());
        tg_error(TG_ERR_INVALID_ARG, "%s: %s is NULL (previous error: %s)", op, what, prev);
    } else {
        tg_error(TG_ERR_INVALID_ARG, "%s: %s is NULL", op, what);
    }
    return NULL;
}

struct tg_tensor * tg__op_new(struct tg_context * ctx, enum tg_op op, enum tg_type type, const int64_t * ne,
                              struct tg_tensor * src0, struct tg_tensor * src1, const char * opname) {
    struct tg_tensor * t = tg__new_tensor(ctx, type, TG_MAX_DIMS, ne, NULL, 0, opname);
    if (!t) return NULL;
    t->op = op;
    t->src[0] = src0;
    t->src[1] = src1;
    return t;
}

struct tg_tensor * tg__view_of(struct tg_context * ctx, struct tg_tensor * a, const char * opname) {
    struct tg_tensor * t = tg__new_tensor(ctx, a->type, TG_MAX_DIMS, a->ne, a, 0, opname);
    if (!t) return NULL;
    memcpy(t->nb, a->nb, sizeof(t->nb));
    if (a->name[0]) tg_format_name(t, "%s (view)", a->name);
    return t;
}

void tg__set_param_f32(struct tg_tensor * t, int i, float v) { memcpy(&t->op_params[i], &v, sizeof(v)); }

static bool is_float(enum tg_type t) { return t == TG_TYPE_F32 || t == TG_TYPE_F16 || t == TG_TYPE_BF16; }
static bool has_to_float(enum tg_type t) {
    const struct tg_type_traits * tt = tg_type_traits(t);
    return tt && tt->to_float;
}

#define NEED_CTX(opname) do { if (!ctx) return tg__null_arg(opname, "context"); } while (0)
#define NEED(x, opname) do { \
        if (!(x)) return tg__null_arg(opname, #x); \
        if (!tg_type_supported((x)->type)) return tg__fail1(TG_ERR_TYPE, opname, x, #x " has unsupported type id %d", (int) (x)->type); \
    } while (0)

// Result of an op: a new tensor of (type, ne), or, in place, a view of a.
static struct tg_tensor * result(struct tg_context * ctx, enum tg_op op, enum tg_type type, const int64_t * ne,
                                 struct tg_tensor * a, struct tg_tensor * b, bool inplace, const char * opname) {
    struct tg_tensor * t = inplace ? tg__view_of(ctx, a, opname) : tg__op_new(ctx, op, type, ne, a, b, opname);
    if (!t) return NULL;
    t->op = op;
    t->src[0] = a;
    t->src[1] = b;
    return t;
}

// ---- binary ---------------------------------------------------------------

static struct tg_tensor * binary(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b,
                                 enum tg_op op, bool inplace, const char * name) {
    NEED_CTX(name); NEED(a, name); NEED(b, name);
    if (!is_float(a->type)) return tg__fail2(TG_ERR_TYPE, name, a, b, "a must be f32, f16 or bf16");
    if (b->type != TG_TYPE_F32 && b->type != a->type) return tg__fail2(TG_ERR_TYPE, name, a, b, "b must be f32 or a's type");
    for (int i = 0; i < TG_MAX_DIMS; i++) {
        if (a->ne[i] % b->ne[i] != 0) {
            return tg__fail2(TG_ERR_SHAPE, name, a, b, "b cannot be broadcast to a: a.ne%d (%lld) is not a multiple of b.ne%d (%lld)",
                             i, (long long) a->ne[i], i, (long long) b->ne[i]);
        }
    }
    return result(ctx, op, a->type, a->ne, a, b, inplace, name);
}

struct tg_tensor * tg_add(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) { return binary(ctx, a, b, TG_OP_ADD, false, "add"); }
struct tg_tensor * tg_sub(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) { return binary(ctx, a, b, TG_OP_SUB, false, "sub"); }
struct tg_tensor * tg_mul(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) { return binary(ctx, a, b, TG_OP_MUL, false, "mul"); }
struct tg_tensor * tg_div(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) { return binary(ctx, a, b, TG_OP_DIV, false, "div"); }
struct tg_tensor * tg_add_inplace(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) { return binary(ctx, a, b, TG_OP_ADD, true, "add_inplace"); }
struct tg_tensor * tg_sub_inplace(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) { return binary(ctx, a, b, TG_OP_SUB, true, "sub_inplace"); }
struct tg_tensor * tg_mul_inplace(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) { return binary(ctx, a, b, TG_OP_MUL, true, "mul_inplace"); }
struct tg_tensor * tg_div_inplace(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) { return binary(ctx, a, b, TG_OP_DIV, true, "div_inplace"); }

// ---- unary ----------------------------------------------------------------

static struct tg_tensor * unary(struct tg_context * ctx, struct tg_tensor * a, enum tg_op op, bool inplace, const char * name) {
    NEED_CTX(name); NEED(a, name);
    if (a->type != TG_TYPE_F32) return tg__fail1(TG_ERR_TYPE, name, a, "a must be f32");
    return result(ctx, op, a->type, a->ne, a, NULL, inplace, name);
}

static struct tg_tensor * scale_impl(struct tg_context * ctx, struct tg_tensor * a, float s, bool inplace, const char * name) {
    struct tg_tensor * t = unary(ctx, a, TG_OP_SCALE, inplace, name);
    if (t) tg__set_param_f32(t, 0, s);
    return t;
}

struct tg_tensor * tg_scale(struct tg_context * ctx, struct tg_tensor * a, float s) { return scale_impl(ctx, a, s, false, "scale"); }
struct tg_tensor * tg_scale_inplace(struct tg_context * ctx, struct tg_tensor * a, float s) { return scale_impl(ctx, a, s, true, "scale_inplace"); }

struct tg_tensor * tg_sqr (struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_SQR,  false, "sqr"); }
struct tg_tensor * tg_sqrt(struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_SQRT, false, "sqrt"); }
struct tg_tensor * tg_log (struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_LOG,  false, "log"); }
struct tg_tensor * tg_neg (struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_NEG,  false, "neg"); }
struct tg_tensor * tg_abs (struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_ABS,  false, "abs"); }
struct tg_tensor * tg_silu(struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_SILU, false, "silu"); }
struct tg_tensor * tg_gelu(struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_GELU, false, "gelu"); }
struct tg_tensor * tg_relu(struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_RELU, false, "relu"); }
struct tg_tensor * tg_sqr_inplace (struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_SQR,  true, "sqr_inplace"); }
struct tg_tensor * tg_sqrt_inplace(struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_SQRT, true, "sqrt_inplace"); }
struct tg_tensor * tg_log_inplace (struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_LOG,  true, "log_inplace"); }
struct tg_tensor * tg_neg_inplace (struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_NEG,  true, "neg_inplace"); }
struct tg_tensor * tg_abs_inplace (struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_ABS,  true, "abs_inplace"); }
struct tg_tensor * tg_silu_inplace(struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_SILU, true, "silu_inplace"); }
struct tg_tensor * tg_gelu_inplace(struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_GELU, true, "gelu_inplace"); }
struct tg_tensor * tg_relu_inplace(struct tg_context * ctx, struct tg_tensor * a) { return unary(ctx, a, TG_OP_RELU, true, "relu_inplace"); }

// ---- reductions -----------------------------------------------------------

struct tg_tensor * tg_sum(struct tg_context * ctx, struct tg_tensor * a) {
    NEED_CTX("sum"); NEED(a, "sum");
    if (a->type != TG_TYPE_F32) return tg__fail1(TG_ERR_TYPE, "sum", a, "a must be f32");
    const int64_t ne[4] = { 1, 1, 1, 1 };
    return tg__op_new(ctx, TG_OP_SUM, TG_TYPE_F32, ne, a, NULL, "sum");
}

static struct tg_tensor * row_reduce(struct tg_context * ctx, struct tg_tensor * a, enum tg_op op, const char * name) {
    NEED_CTX(name); NEED(a, name);
    if (a->type != TG_TYPE_F32) return tg__fail1(TG_ERR_TYPE, name, a, "a must be f32");
    const int64_t ne[4] = { 1, a->ne[1], a->ne[2], a->ne[3] };
    return tg__op_new(ctx, op, TG_TYPE_F32, ne, a, NULL, name);
}

struct tg_tensor * tg_sum_rows(struct tg_context * ctx, struct tg_tensor * a) { return row_reduce(ctx, a, TG_OP_SUM_ROWS, "sum_rows"); }
struct tg_tensor * tg_mean(struct tg_context * ctx, struct tg_tensor * a) { return row_reduce(ctx, a, TG_OP_MEAN, "mean"); }

struct tg_tensor * tg_argmax(struct tg_context * ctx, struct tg_tensor * a) {
    NEED_CTX("argmax"); NEED(a, "argmax");
    if (a->type != TG_TYPE_F32) return tg__fail1(TG_ERR_TYPE, "argmax", a, "a must be f32");
    if (a->ne[2] != 1 || a->ne[3] != 1) return tg__fail1(TG_ERR_SHAPE, "argmax", a, "a must be 2-D (ne2 = ne3 = 1)");
    const int64_t ne[4] = { a->ne[1], 1, 1, 1 };
    return tg__op_new(ctx, TG_OP_ARGMAX, TG_TYPE_I32, ne, a, NULL, "argmax");
}

// ---- repeat, concat, rows -------------------------------------------------

struct tg_tensor * tg_repeat(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) {
    NEED_CTX("repeat"); NEED(a, "repeat"); NEED(b, "repeat");
    if (tg_type_traits(a->type)->is_quantized) return tg__fail2(TG_ERR_TYPE, "repeat", a, b, "a must not be quantized");
    for (int i = 0; i < TG_MAX_DIMS; i++) {
        if (b->ne[i] % a->ne[i] != 0) {
            return tg__fail2(TG_ERR_SHAPE, "repeat", a, b, "b.ne%d (%lld) is not a multiple of a.ne%d (%lld)",
                             i, (long long) b->ne[i], i, (long long) a->ne[i]);
        }
    }
    return tg__op_new(ctx, TG_OP_REPEAT, a->type, b->ne, a, NULL, "repeat");
}

struct tg_tensor * tg_concat(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b, int dim) {
    NEED_CTX("concat"); NEED(a, "concat"); NEED(b, "concat");
    if (dim < 0 || dim >= TG_MAX_DIMS) return tg__fail2(TG_ERR_INVALID_ARG, "concat", a, b, "dim %d not in 0..3", dim);
    if (a->type != b->type) return tg__fail2(TG_ERR_TYPE, "concat", a, b, "a and b must have the same type");
    if (tg_type_traits(a->type)->is_quantized) return tg__fail2(TG_ERR_TYPE, "concat", a, b, "quantized types cannot be concatenated");
    int64_t ne[4];
    for (int i = 0; i < TG_MAX_DIMS; i++) {
        if (i != dim && a->ne[i] != b->ne[i]) {
            return tg__fail2(TG_ERR_SHAPE, "concat", a, b, "along dim %d: a.ne%d (%lld) != b.ne%d (%lld)",
                             dim, i, (long long) a->ne[i], i, (long long) b->ne[i]);
        }
        ne[i] = i == dim ? a->ne[i] + b->ne[i] : a->ne[i];
    }
    struct tg_tensor * t = tg__op_new(ctx, TG_OP_CONCAT, a->type, ne, a, b, "concat");
    if (t) t->op_params[0] = dim;
    return t;
}

struct tg_tensor * tg_get_rows(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) {
    NEED_CTX("get_rows"); NEED(a, "get_rows"); NEED(b, "get_rows");
    if (!has_to_float(a->type)) return tg__fail2(TG_ERR_TYPE, "get_rows", a, b, "a's type cannot be converted to f32");
    if (b->type != TG_TYPE_I32) return tg__fail2(TG_ERR_TYPE, "get_rows", a, b, "row ids b must be i32");
    if (b->ne[1] != a->ne[2] || b->ne[2] != a->ne[3] || b->ne[3] != 1) {
        return tg__fail2(TG_ERR_SHAPE, "get_rows", a, b, "b must be [m,a.ne2,a.ne3,1]: b.ne1 (%lld) vs a.ne2 (%lld), b.ne2 (%lld) vs a.ne3 (%lld), b.ne3 = %lld",
                         (long long) b->ne[1], (long long) a->ne[2], (long long) b->ne[2], (long long) a->ne[3], (long long) b->ne[3]);
    }
    const int64_t ne[4] = { a->ne[0], b->ne[0], b->ne[1], b->ne[2] };
    return tg__op_new(ctx, TG_OP_GET_ROWS, TG_TYPE_F32, ne, a, b, "get_rows");
}

struct tg_tensor * tg_set_rows(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b, struct tg_tensor * c) {
    NEED_CTX("set_rows"); NEED(a, "set_rows"); NEED(b, "set_rows"); NEED(c, "set_rows");
    const struct tg_type_traits * ta = tg_type_traits(a->type);
    if (!ta->from_float && a->type != TG_TYPE_F32) return tg__fail2(TG_ERR_TYPE, "set_rows", a, b, "a's type cannot be written from f32");
    if (b->type != TG_TYPE_F32) return tg__fail2(TG_ERR_TYPE, "set_rows", a, b, "b must be f32");
    if (c->type != TG_TYPE_I32 && c->type != TG_TYPE_I64) return tg__fail2(TG_ERR_TYPE, "set_rows", a, b, "row ids c must be i32 or i64 (c is %s)", tg_type_name(c->type));
    char sc[96];
    tg_shape_str(c, sc, sizeof(sc));
    if (a->ne[0] != b->ne[0]) return tg__fail2(TG_ERR_SHAPE, "set_rows", a, b, "a.ne0 (%lld) != b.ne0 (%lld)", (long long) a->ne[0], (long long) b->ne[0]);
    if (a->ne[2] != b->ne[2] || a->ne[3] != b->ne[3]) return tg__fail2(TG_ERR_SHAPE, "set_rows", a, b, "a and b differ in dims 2,3");
    if (c->ne[0] != b->ne[1] || b->ne[2] % c->ne[1] != 0 || b->ne[3] % c->ne[2] != 0 || c->ne[3] != 1) {
        return tg__fail2(TG_ERR_SHAPE, "set_rows", a, b, "ids c %s must be [b.ne1,x,y,1] with b.ne2 %% x == 0 and b.ne3 %% y == 0", sc);
    }
    struct tg_tensor * t = tg__view_of(ctx, a, "set_rows");
    if (!t) return NULL;
    t->op = TG_OP_SET_ROWS;
    t->src[0] = a;
    t->src[1] = b;
    t->src[2] = c;
    return t;
}

// ---- matrix products ------------------------------------------------------

struct tg_tensor * tg_mul_mat(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) {
    NEED_CTX("mul_mat"); NEED(a, "mul_mat"); NEED(b, "mul_mat");
    if (!has_to_float(a->type)) return tg__fail2(TG_ERR_TYPE, "mul_mat", a, b, "a's type %s is not supported", tg_type_name(a->type));
    if (!is_float(b->type)) return tg__fail2(TG_ERR_TYPE, "mul_mat", a, b, "b must be f32, f16 or bf16");
    if (a->ne[0] != b->ne[0]) return tg__fail2(TG_ERR_SHAPE, "mul_mat", a, b, "a.ne0 (%lld) != b.ne0 (%lld)", (long long) a->ne[0], (long long) b->ne[0]);
    for (int i = 2; i < TG_MAX_DIMS; i++) {
        if (b->ne[i] % a->ne[i] != 0) {
            return tg__fail2(TG_ERR_SHAPE, "mul_mat", a, b, "b.ne%d (%lld) is not a multiple of a.ne%d (%lld)",
                             i, (long long) b->ne[i], i, (long long) a->ne[i]);
        }
    }
    if (tg_is_transposed(a)) return tg__fail2(TG_ERR_SHAPE, "mul_mat", a, b, "a must not be transposed (nb0 %zu > nb1 %zu)", a->nb[0], a->nb[1]);
    const int64_t ne[4] = { a->ne[1], b->ne[1], b->ne[2], b->ne[3] };
    return tg__op_new(ctx, TG_OP_MUL_MAT, TG_TYPE_F32, ne, a, b, "mul_mat");
}

struct tg_tensor * tg_out_prod(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) {
    NEED_CTX("out_prod"); NEED(a, "out_prod"); NEED(b, "out_prod");
    if (!has_to_float(a->type)) return tg__fail2(TG_ERR_TYPE, "out_prod", a, b, "a's type %s is not supported", tg_type_name(a->type));
    if (b->type != TG_TYPE_F32) return tg__fail2(TG_ERR_TYPE, "out_prod", a, b, "b must be f32");
    if (a->ne[1] != b->ne[1]) return tg__fail2(TG_ERR_SHAPE, "out_prod", a, b, "a.ne1 (%lld) != b.ne1 (%lld)", (long long) a->ne[1], (long long) b->ne[1]);
    for (int i = 2; i < TG_MAX_DIMS; i++) {
        if (b->ne[i] % a->ne[i] != 0) {
            return tg__fail2(TG_ERR_SHAPE, "out_prod", a, b, "b.ne%d (%lld) is not a multiple of a.ne%d (%lld)",
                             i, (long long) b->ne[i], i, (long long) a->ne[i]);
        }
    }
    const int64_t ne[4] = { a->ne[0], b->ne[0], b->ne[2], b->ne[3] };
    return tg__op_new(ctx, TG_OP_OUT_PROD, TG_TYPE_F32, ne, a, b, "out_prod");
}

// ---- norms, soft_max, rope ------------------------------------------------

static struct tg_tensor * norm_impl(struct tg_context * ctx, struct tg_tensor * a, float eps, enum tg_op op,
                                    bool inplace, const char * name) {
    NEED_CTX(name); NEED(a, name);
    if (a->type != TG_TYPE_F32) return tg__fail1(TG_ERR_TYPE, name, a, "a must be f32");
    if (!(eps >= 0.0f) || isinf(eps)) return tg__fail1(TG_ERR_INVALID_ARG, name, a, "eps %g must be finite and >= 0", (double) eps);
    struct tg_tensor * t = result(ctx, op, a->type, a->ne, a, NULL, inplace, name);
    if (t) tg__set_param_f32(t, 0, eps);
    return t;
}

struct tg_tensor * tg_rms_norm(struct tg_context * ctx, struct tg_tensor * a, float eps) { return norm_impl(ctx, a, eps, TG_OP_RMS_NORM, false, "rms_norm"); }
struct tg_tensor * tg_norm(struct tg_context * ctx, struct tg_tensor * a, float eps) { return norm_impl(ctx, a, eps, TG_OP_NORM, false, "norm"); }
struct tg_tensor * tg_rms_norm_inplace(struct tg_context * ctx, struct tg_tensor * a, float eps) { return norm_impl(ctx, a, eps, TG_OP_RMS_NORM, true, "rms_norm_inplace"); }
struct tg_tensor * tg_norm_inplace(struct tg_context * ctx, struct tg_tensor * a, float eps) { return norm_impl(ctx, a, eps, TG_OP_NORM, true, "norm_inplace"); }

static struct tg_tensor * soft_max_impl(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * mask,
                                        float scale, float max_bias, bool inplace, const char * name) {
    NEED_CTX(name); NEED(a, name);
    if (a->type != TG_TYPE_F32) return tg__fail1(TG_ERR_TYPE, name, a, "a must be f32");
    if (!isfinite(scale)) return tg__fail1(TG_ERR_INVALID_ARG, name, a, "scale %g must be finite", (double) scale);
    if (!(max_bias >= 0.0f) || isinf(max_bias)) return tg__fail1(TG_ERR_INVALID_ARG, name, a, "max_bias %g must be finite and >= 0", (double) max_bias);
    if (mask) {
        if (mask->type != TG_TYPE_F32 && mask->type != TG_TYPE_F16) return tg__fail2(TG_ERR_TYPE, name, a, mask, "mask b must be f32 or f16");
        if (mask->ne[0] != a->ne[0]) return tg__fail2(TG_ERR_SHAPE, name, a, mask, "mask.ne0 (%lld) != a.ne0 (%lld)", (long long) mask->ne[0], (long long) a->ne[0]);
        if (mask->ne[1] < a->ne[1]) return tg__fail2(TG_ERR_SHAPE, name, a, mask, "mask.ne1 (%lld) < a.ne1 (%lld)", (long long) mask->ne[1], (long long) a->ne[1]);
        if (a->ne[2] % mask->ne[2] != 0 || a->ne[3] % mask->ne[3] != 0) {
            return tg__fail2(TG_ERR_SHAPE, name, a, mask, "mask cannot be broadcast over dims 2,3: a.ne2 %lld, a.ne3 %lld vs mask.ne2 %lld, mask.ne3 %lld",
                             (long long) a->ne[2], (long long) a->ne[3], (long long) mask->ne[2], (long long) mask->ne[3]);
        }
        if (!tg_is_contiguous_rows(mask)) return tg__fail2(TG_ERR_SHAPE, name, a, mask, "mask rows must be contiguous");
    }
    struct tg_tensor * t = result(ctx, TG_OP_SOFT_MAX, a->type, a->ne, a, mask, inplace, name);
    if (!t) return NULL;
    tg__set_param_f32(t, 0, scale);
    tg__set_param_f32(t, 1, max_bias);
    return t;
}

struct tg_tensor * tg_soft_max(struct tg_context * ctx, struct tg_tensor * a) { return soft_max_impl(ctx, a, NULL, 1.0f, 0.0f, false, "soft_max"); }
struct tg_tensor * tg_soft_max_inplace(struct tg_context * ctx, struct tg_tensor * a) { return soft_max_impl(ctx, a, NULL, 1.0f, 0.0f, true, "soft_max_inplace"); }
struct tg_tensor * tg_soft_max_ext(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * mask, float scale, float max_bias) {
    return soft_max_impl(ctx, a, mask, scale, max_bias, false, "soft_max_ext");
}

struct tg_tensor * tg_flash_attn_ext(struct tg_context * ctx, struct tg_tensor * q, struct tg_tensor * k,
                                     struct tg_tensor * v, struct tg_tensor * mask, float scale) {
    const char * name = "flash_attn_ext";
    NEED_CTX(name); NEED(q, name); NEED(k, name); NEED(v, name);
    if (q->type != TG_TYPE_F32) return tg__fail2(TG_ERR_TYPE, name, q, k, "q must be f32");
    if ((k->type != TG_TYPE_F16 && k->type != TG_TYPE_F32) || (v->type != TG_TYPE_F16 && v->type != TG_TYPE_F32))
        return tg__fail2(TG_ERR_TYPE, name, k, v, "k and v must be f16 or f32");
    if (!isfinite(scale)) return tg__fail1(TG_ERR_INVALID_ARG, name, q, "scale %g must be finite", (double) scale);
    if (k->ne[0] != q->ne[0])
        return tg__fail2(TG_ERR_SHAPE, name, q, k, "k.ne0 (%lld) != q.ne0 (%lld): the head sizes differ",
                         (long long) k->ne[0], (long long) q->ne[0]);
    if (v->ne[0] != k->ne[1])
        return tg__fail2(TG_ERR_SHAPE, name, k, v, "v.ne0 (%lld cells) != k.ne1 (%lld cells)", (long long) v->ne[0],
                         (long long) k->ne[1]);
    if (v->ne[2] != k->ne[2] || k->ne[2] <= 0 || q->ne[2] % k->ne[2] != 0)
        return tg__fail2(TG_ERR_SHAPE, name, q, k, "q heads (%lld) must be a multiple of k heads (%lld), v heads %lld",
                         (long long) q->ne[2], (long long) k->ne[2], (long long) v->ne[2]);
    if (q->ne[3] != 1 || k->ne[3] != 1 || v->ne[3] != 1) return tg__fail2(TG_ERR_SHAPE, name, q, k, "dimension 3 must be 1");
    if (k->nb[0] != tg_type_size(k->type) || v->nb[0] != tg_type_size(v->type))
        return tg__fail2(TG_ERR_SHAPE, name, k, v, "k rows and v rows must be contiguous");
    if (mask) {
        if (mask->type != TG_TYPE_F32 && mask->type != TG_TYPE_F16) return tg__fail2(TG_ERR_TYPE, name, q, mask, "mask must be f32 or f16");
        if (mask->ne[0] != k->ne[1] || mask->ne[1] < q->ne[1] || mask->ne[2] != 1 || mask->ne[3] != 1)
            return tg__fail2(TG_ERR_SHAPE, name, q, mask, "mask must be [%lld cells, >= %lld tokens], is [%lld, %lld, %lld, %lld]",
                             (long long) k->ne[1], (long long) q->ne[1], (long long) mask->ne[0], (long long) mask->ne[1],
                             (long long) mask->ne[2], (long long) mask->ne[3]);
        if (!tg_is_contiguous_rows(mask)) return tg__fail2(TG_ERR_SHAPE, name, q, mask, "mask rows must be contiguous");
    }
    const int64_t ne[4] = { v->ne[1], q->ne[2], q->ne[1], 1 };
    struct tg_tensor * t = tg__op_new(ctx, TG_OP_FLASH_ATTN_EXT, TG_TYPE_F32, ne, q, k, name);
    if (!t) return NULL;
    t->src[2] = v;
    t->src[3] = mask;
    tg__set_param_f32(t, 0, scale);
    return t;
}

struct tg_tensor * tg_silu_back(struct tg_context * ctx, struct tg_tensor * x, struct tg_tensor * g) {
    NEED_CTX("silu_back"); NEED(x, "silu_back"); NEED(g, "silu_back");
    if (x->type != TG_TYPE_F32 || g->type != TG_TYPE_F32) return tg__fail2(TG_ERR_TYPE, "silu_back", x, g, "x and g must be f32");
    if (!tg_are_same_shape(x, g)) return tg__fail2(TG_ERR_SHAPE, "silu_back", x, g, "x and g must have one shape");
    return tg__op_new(ctx, TG_OP_SILU_BACK, TG_TYPE_F32, x->ne, x, g, "silu_back");
}

struct tg_tensor * tg_rms_norm_back(struct tg_context * ctx, struct tg_tensor * x, struct tg_tensor * g, float eps) {
    NEED_CTX("rms_norm_back"); NEED(x, "rms_norm_back"); NEED(g, "rms_norm_back");
    if (x->type != TG_TYPE_F32 || g->type != TG_TYPE_F32) return tg__fail2(TG_ERR_TYPE, "rms_norm_back", x, g, "x and g must be f32");
    if (!tg_are_same_shape(x, g)) return tg__fail2(TG_ERR_SHAPE, "rms_norm_back", x, g, "x and g must have one shape");
    if (!(eps >= 0.0f) || isinf(eps)) return tg__fail1(TG_ERR_INVALID_ARG, "rms_norm_back", x, "eps %g must be finite and >= 0", (double) eps);
    struct tg_tensor * t = tg__op_new(ctx, TG_OP_RMS_NORM_BACK, TG_TYPE_F32, x->ne, x, g, "rms_norm_back");
    if (t) tg__set_param_f32(t, 0, eps);
    return t;
}

struct tg_tensor * tg_unary_back(struct tg_context * ctx, struct tg_tensor * x, struct tg_tensor * g,
                                 enum tg_unary_back kind, int n_past) {
    NEED_CTX("unary_back"); NEED(x, "unary_back"); NEED(g, "unary_back");
    if (x->type != TG_TYPE_F32 || g->type != TG_TYPE_F32) return tg__fail2(TG_ERR_TYPE, "unary_back", x, g, "x and g must be f32");
    if (!tg_are_same_shape(x, g)) return tg__fail2(TG_ERR_SHAPE, "unary_back", x, g, "x and g must have one shape");
    if ((int) kind < 0 || kind > TG_UNARY_BACK_DIAG_MASK) return tg__fail2(TG_ERR_INVALID_ARG, "unary_back", x, g, "unknown kind %d", (int) kind);
    struct tg_tensor * t = tg__op_new(ctx, TG_OP_UNARY_BACK, TG_TYPE_F32, x->ne, x, g, "unary_back");
    if (t) { t->op_params[0] = (int32_t) kind; t->op_params[1] = n_past; }
    return t;
}

struct tg_tensor * tg_norm_back(struct tg_context * ctx, struct tg_tensor * x, struct tg_tensor * g, float eps) {
    NEED_CTX("norm_back"); NEED(x, "norm_back"); NEED(g, "norm_back");
    if (x->type != TG_TYPE_F32 || g->type != TG_TYPE_F32) return tg__fail2(TG_ERR_TYPE, "norm_back", x, g, "x and g must be f32");
    if (!tg_are_same_shape(x, g)) return tg__fail2(TG_ERR_SHAPE, "norm_back", x, g, "x and g must have one shape");
    struct tg_tensor * t = tg__op_new(ctx, TG_OP_NORM_BACK, TG_TYPE_F32, x->ne, x, g, "norm_back");
    if (t) tg__set_param_f32(t, 0, eps);
    return t;
}

struct tg_tensor * tg_get_rows_back(struct tg_context * ctx, struct tg_tensor * g, struct tg_tensor * ids,
                                    struct tg_tensor * like) {
    NEED_CTX("get_rows_back"); NEED(g, "get_rows_back"); NEED(ids, "get_rows_back"); NEED(like, "get_rows_back");
    if (g->type != TG_TYPE_F32 || ids->type != TG_TYPE_I32) return tg__fail2(TG_ERR_TYPE, "get_rows_back", g, ids, "g must be f32, ids i32");
    if (g->ne[2] != 1 || g->ne[3] != 1 || ids->ne[1] != 1 || ids->ne[2] != 1 || ids->ne[0] != g->ne[1] || like->ne[0] != g->ne[0] ||
        like->ne[2] != 1 || like->ne[3] != 1)
        return tg__fail2(TG_ERR_SHAPE, "get_rows_back", g, ids, "expected g [n,m], ids [m], like [n,r] (2-D)");
    const int64_t ne[4] = { g->ne[0], like->ne[1], 1, 1 };
    struct tg_tensor * t = tg__op_new(ctx, TG_OP_GET_ROWS_BACK, TG_TYPE_F32, ne, g, ids, "get_rows_back");
    if (t) t->src[2] = like;   // the shape only
    return t;
}

static struct tg_tensor * opt_check(struct tg_context * ctx, struct tg_tensor * p, struct tg_tensor * g,
                                    struct tg_tensor * hp, int64_t n_hp, const char * name) {
    NEED_CTX(name); NEED(p, name); NEED(g, name); NEED(hp, name);
    if (p->type != TG_TYPE_F32 || g->type != TG_TYPE_F32 || hp->type != TG_TYPE_F32)
        return tg__fail2(TG_ERR_TYPE, name, p, g, "p, g and the hyper-parameters must be f32");
    if (!tg_are_same_shape(p, g) || !tg_is_contiguous(p) || !tg_is_contiguous(g))
        return tg__fail2(TG_ERR_SHAPE, name, p, g, "p and g must be contiguous, of one shape");
    if (tg_nelements(hp) != n_hp || !tg_is_contiguous(hp))
        return tg__fail2(TG_ERR_SHAPE, name, p, hp, "the hyper-parameters must be %lld contiguous f32 values", (long long) n_hp);
    return p;
}

struct tg_tensor * tg_opt_step_sgd(struct tg_context * ctx, struct tg_tensor * p, struct tg_tensor * g, struct tg_tensor * hp) {
    if (!opt_check(ctx, p, g, hp, 2, "opt_step_sgd")) return NULL;
    struct tg_tensor * t = tg__view_of(ctx, p, "opt_step_sgd");
    if (!t) return NULL;
    t->op = TG_OP_OPT_STEP_SGD;
    t->src[0] = p; t->src[1] = g; t->src[2] = hp;
    return t;
}

struct tg_tensor * tg_opt_step_adamw(struct tg_context * ctx, struct tg_tensor * p, struct tg_tensor * g,
                                     struct tg_tensor * m, struct tg_tensor * v, struct tg_tensor * hp) {
    if (!opt_check(ctx, p, g, hp, 7, "opt_step_adamw")) return NULL;
    NEED(m, "opt_step_adamw"); NEED(v, "opt_step_adamw");
    if (m->type != TG_TYPE_F32 || v->type != TG_TYPE_F32 || !tg_are_same_shape(m, p) || !tg_are_same_shape(v, p) ||
        !tg_is_contiguous(m) || !tg_is_contiguous(v))
        return tg__fail2(TG_ERR_SHAPE, "opt_step_adamw", m, v, "the moments m and v must be contiguous f32 of p's shape");
    struct tg_tensor * t = tg__view_of(ctx, p, "opt_step_adamw");
    if (!t) return NULL;
    t->op = TG_OP_OPT_STEP_ADAMW;
    t->src[0] = p; t->src[1] = g; t->src[2] = m; t->src[3] = v; t->src[4] = hp;
    return t;
}

static struct tg_tensor * rope_impl(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * pos,
                                    struct tg_tensor * ff, int n_dims, int mode,
                                    float freq_base, float freq_scale, bool inplace, const char * name) {
    NEED_CTX(name); NEED(a, name); NEED(pos, name);
    if (a->type != TG_TYPE_F32) return tg__fail2(TG_ERR_TYPE, name, a, pos, "a must be f32");
    if (pos->type != TG_TYPE_I32) return tg__fail2(TG_ERR_TYPE, name, a, pos, "positions b must be i32");
    if (pos->ne[1] != 1 || pos->ne[2] != 1 || pos->ne[3] != 1) return tg__fail2(TG_ERR_SHAPE, name, a, pos, "positions b must be 1-D");
    if (pos->ne[0] != a->ne[2]) {
        return tg__fail2(TG_ERR_SHAPE, name, a, pos, "positions length b.ne0 (%lld) != a.ne2 (%lld, tokens)", (long long) pos->ne[0], (long long) a->ne[2]);
    }
    if (n_dims <= 0 || n_dims % 2 != 0 || n_dims > a->ne[0]) {
        return tg__fail2(TG_ERR_INVALID_ARG, name, a, pos, "n_dims %d must be even, > 0 and <= a.ne0 (%lld)", n_dims, (long long) a->ne[0]);
    }
    if (mode != TG_ROPE_NORMAL && mode != TG_ROPE_NEOX) return tg__fail2(TG_ERR_INVALID_ARG, name, a, pos, "unknown rope mode %d", mode);
    if (!(freq_base > 0.0f) || isinf(freq_base)) return tg__fail2(TG_ERR_INVALID_ARG, name, a, pos, "freq_base %g must be finite and > 0", (double) freq_base);
    if (!isfinite(freq_scale)) return tg__fail2(TG_ERR_INVALID_ARG, name, a, pos, "freq_scale %g must be finite", (double) freq_scale);
    if (ff && (ff->type != TG_TYPE_F32 || !tg_is_contiguous(ff) || ff->ne[0] < n_dims / 2)) {
        return tg__fail2(TG_ERR_SHAPE, name, a, ff, "frequency factors must be contiguous f32 with >= n_dims/2 (%d) elements",
                         n_dims / 2);
    }
    struct tg_tensor * t = result(ctx, TG_OP_ROPE, a->type, a->ne, a, pos, inplace, name);
    if (!t) return NULL;
    t->src[2] = ff;
    t->op_params[0] = n_dims;
    t->op_params[1] = mode;
    t->op_params[2] = 0;
    tg__set_param_f32(t, 3, freq_base);
    tg__set_param_f32(t, 4, freq_scale);
    return t;
}

struct tg_tensor * tg_rope(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * pos,
                           int n_dims, int mode, float freq_base, float freq_scale) {
    return rope_impl(ctx, a, pos, NULL, n_dims, mode, freq_base, freq_scale, false, "rope");
}

struct tg_tensor * tg_rope_ext(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * pos,
                               struct tg_tensor * freq_factors, int n_dims, int mode, float freq_base, float freq_scale) {
    return rope_impl(ctx, a, pos, freq_factors, n_dims, mode, freq_base, freq_scale, false, "rope_ext");
}

struct tg_tensor * tg_rope_inplace(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * pos,
                                   int n_dims, int mode, float freq_base, float freq_scale) {
    return rope_impl(ctx, a, pos, NULL, n_dims, mode, freq_base, freq_scale, true, "rope_inplace");
}

// ---- glu, masks, loss -----------------------------------------------------

struct tg_tensor * tg_glu(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b, enum tg_glu_op op, bool swapped) {
    NEED_CTX("glu"); NEED(a, "glu");
    if ((int) op < 0 || op >= TG_GLU_COUNT) return tg__fail1(TG_ERR_INVALID_ARG, "glu", a, "unknown glu op %d", (int) op);
    if (a->type != TG_TYPE_F32) return tg__fail2(TG_ERR_TYPE, "glu", a, b, "a must be f32");
    int64_t ne[4] = { a->ne[0], a->ne[1], a->ne[2], a->ne[3] };
    if (b) {
        if (b->type != TG_TYPE_F32) return tg__fail2(TG_ERR_TYPE, "glu", a, b, "gate b must be f32");
        if (!tg_are_same_shape(a, b)) return tg__fail2(TG_ERR_SHAPE, "glu", a, b, "a and gate b must have the same shape");
    } else {
        if (a->ne[0] % 2 != 0) return tg__fail1(TG_ERR_SHAPE, "glu", a, "a.ne0 (%lld) must be even to split into halves", (long long) a->ne[0]);
        ne[0] = a->ne[0] / 2;
    }
    struct tg_tensor * t = tg__op_new(ctx, TG_OP_GLU, TG_TYPE_F32, ne, a, b, "glu");
    if (!t) return NULL;
    t->op_params[0] = (int32_t) op;
    t->op_params[1] = swapped ? 1 : 0;
    return t;
}

struct tg_tensor * tg_swiglu(struct tg_context * ctx, struct tg_tensor * a) { return tg_glu(ctx, a, NULL, TG_GLU_SWIGLU, false); }
struct tg_tensor * tg_swiglu_split(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) {
    if (!b) return tg__null_arg("swiglu_split", "b");
    return tg_glu(ctx, a, b, TG_GLU_SWIGLU, false);
}
struct tg_tensor * tg_geglu(struct tg_context * ctx, struct tg_tensor * a) { return tg_glu(ctx, a, NULL, TG_GLU_GEGLU, false); }
struct tg_tensor * tg_reglu(struct tg_context * ctx, struct tg_tensor * a) { return tg_glu(ctx, a, NULL, TG_GLU_REGLU, false); }

static struct tg_tensor * diag_mask_impl(struct tg_context * ctx, struct tg_tensor * a, int n_past, bool inplace, const char * name) {
    NEED_CTX(name); NEED(a, name);
    if (a->type != TG_TYPE_F32) return tg__fail1(TG_ERR_TYPE, name, a, "a must be f32");
    if (n_past < 0) return tg__fail1(TG_ERR_INVALID_ARG, name, a, "n_past %d must be >= 0", n_past);
    struct tg_tensor * t = result(ctx, TG_OP_DIAG_MASK_INF, a->type, a->ne, a, NULL, inplace, name);
    if (t) t->op_params[0] = n_past;
    return t;
}

struct tg_tensor * tg_diag_mask_inf(struct tg_context * ctx, struct tg_tensor * a, int n_past) { return diag_mask_impl(ctx, a, n_past, false, "diag_mask_inf"); }
struct tg_tensor * tg_diag_mask_inf_inplace(struct tg_context * ctx, struct tg_tensor * a, int n_past) { return diag_mask_impl(ctx, a, n_past, true, "diag_mask_inf_inplace"); }

struct tg_tensor * tg_cross_entropy_loss(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) {
    NEED_CTX("cross_entropy_loss"); NEED(a, "cross_entropy_loss"); NEED(b, "cross_entropy_loss");
    if (a->type != TG_TYPE_F32 || b->type != TG_TYPE_F32) return tg__fail2(TG_ERR_TYPE, "cross_entropy_loss", a, b, "a and b must be f32");
    if (!tg_are_same_shape(a, b)) return tg__fail2(TG_ERR_SHAPE, "cross_entropy_loss", a, b, "logits a and labels b must have the same shape");
    const int64_t ne[4] = { 1, 1, 1, 1 };
    return tg__op_new(ctx, TG_OP_CROSS_ENTROPY_LOSS, TG_TYPE_F32, ne, a, b, "cross_entropy_loss");
}

// ---- in-place eligibility -------------------------------------------------

bool tg_op_can_inplace(const struct tg_tensor * t) {
    if (!t || !t->src[0]) return false;
    switch (t->op) {
        case TG_OP_ADD: case TG_OP_SUB: case TG_OP_MUL: case TG_OP_DIV:
        case TG_OP_SCALE: case TG_OP_SQR: case TG_OP_SQRT: case TG_OP_LOG: case TG_OP_NEG: case TG_OP_ABS:
        case TG_OP_SILU: case TG_OP_GELU: case TG_OP_RELU:
        case TG_OP_RMS_NORM: case TG_OP_NORM: case TG_OP_SOFT_MAX: case TG_OP_ROPE:
        case TG_OP_DIAG_MASK_INF:
            break;
        default:
            return false;
    }
    const struct tg_tensor * s = t->src[0];
    if (s->type != t->type || !tg_are_same_shape(s, t)) return false;
    for (int i = 0; i < TG_MAX_DIMS; i++) if (s->nb[i] != t->nb[i]) return false;
    return tg_is_contiguous(s);
}
