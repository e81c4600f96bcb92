// ops-view.c - copies (dup, cpy, cont), views, reshapes, permutes and set/acc.
// View results alias the memory owner of their source: view_src is always
// the owner (chains are followed), view_offs the byte offset into it.
#include "core-impl.h"

#include <stdio.h>
#include <string.h>

#define NEED_CTX(opname) do { if (!ctx) return tg__null_arg(opname, "context"); } while (0)
#define NEED(x, opname) do { \
        if (!(x)) return tg__null_arg(opname, #x); \
        if (!tg_type_supported((x)->type)) return tg__fail1(TG_ERR_TYPE, opname, x, #x " has unsupported type id %d", (int) (x)->type); \
    } while (0)

// ---- copies ---------------------------------------------------------------

struct tg_tensor * tg_dup(struct tg_context * ctx, struct tg_tensor * a) {
    NEED_CTX("dup"); NEED(a, "dup");
    return tg__op_new(ctx, TG_OP_DUP, a->type, a->ne, a, NULL, "dup");
}

struct tg_tensor * tg_cpy(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) {
    NEED_CTX("cpy"); NEED(a, "cpy"); NEED(b, "cpy");
    if (tg_nelements(a) != tg_nelements(b)) {
        return tg__fail2(TG_ERR_SHAPE, "cpy", a, b, "a has %lld elements, b has %lld", (long long) tg_nelements(a), (long long) tg_nelements(b));
    }
    if (a->type != b->type) {
        const struct tg_type_traits * ta = tg_type_traits(a->type), * tb = tg_type_traits(b->type);
        if (!ta->to_float || !tb->from_float) {
            return tg__fail2(TG_ERR_TYPE, "cpy", a, b, "no conversion from %s to %s", ta->name, tb->name);
        }
    }
    struct tg_tensor * t = tg__view_of(ctx, b, "cpy");
    if (!t) return NULL;
    if (b->name[0]) tg_format_name(t, "%s (copy of %s)", b->name, a->name);
    else if (a->name[0]) tg_format_name(t, "%s (copy)", a->name);
    else t->name[0] = '\0';
    t->op = TG_OP_CPY;
    t->src[0] = a;
    t->src[1] = b;
    return t;
}

struct tg_tensor * tg_cont_4d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    NEED_CTX("cont"); NEED(a, "cont");
    const int64_t ne[4] = { ne0, ne1, ne2, ne3 };
    if (ne0 < 1 || ne1 < 1 || ne2 < 1 || ne3 < 1 || ne0 * ne1 * ne2 * ne3 != tg_nelements(a)) {
        return tg__fail1(TG_ERR_SHAPE, "cont", a, "[%lld,%lld,%lld,%lld] does not have a's %lld elements",
                         (long long) ne0, (long long) ne1, (long long) ne2, (long long) ne3, (long long) tg_nelements(a));
    }
    struct tg_tensor * t = tg__op_new(ctx, TG_OP_CONT, a->type, ne, a, NULL, "cont");
    if (t && a->name[0]) tg_format_name(t, "%s (cont)", a->name);
    return t;
}

struct tg_tensor * tg_cont(struct tg_context * ctx, struct tg_tensor * a) {
    NEED_CTX("cont"); NEED(a, "cont");
    return tg_cont_4d(ctx, a, a->ne[0], a->ne[1], a->ne[2], a->ne[3]);
}

// ---- views ----------------------------------------------------------------

// Bytes spanned by a view of type `type`, shape ne and row strides nb[1..3].
static bool span_bytes(enum tg_type type, const int64_t * ne, const size_t * nb, size_t * out) {
    size_t n = tg_row_size(type, ne[0]);
    for (int i = 1; i < TG_MAX_DIMS; i++) {
        size_t step;
        if (__builtin_mul_overflow((size_t) (ne[i] - 1), nb[i], &step) || __builtin_add_overflow(n, step, &n)) return false;
    }
    *out = n;
    return true;
}

// A view of a with shape ne, strides type size, nb1..nb3 at byte `offset`
// from a's first element. Checks that it lies inside the owner's memory.
static struct tg_tensor * view_impl(struct tg_context * ctx, struct tg_tensor * a, int n_dims, const int64_t * ne_in,
                                    const size_t * nb_in, size_t offset, const char * name) {
    int64_t ne[4] = { 1, 1, 1, 1 };
    for (int i = 0; i < n_dims; i++) ne[i] = ne_in[i];
    if (tg__check_shape(a->type, 4, ne, NULL, "view") != TG_OK) {
        char msg[600];
        snprintf(msg, sizeof(msg), "%s", tg_last_error() + strlen("view: "));
        return tg__fail1(tg_last_status(), name, a, "bad view shape: %s", msg);
    }
    size_t nb[4] = { tg_type_size(a->type), 0, 0, 0 };   // elements of a view are dense (ggml)
    nb[1] = n_dims > 1 ? nb_in[0] : tg_row_size(a->type, ne[0]);
    nb[2] = n_dims > 2 ? nb_in[1] : nb[1] * (size_t) ne[1];
    nb[3] = n_dims > 3 ? nb_in[2] : nb[2] * (size_t) ne[2];
    const struct tg_tensor * owner = a->view_src ? a->view_src : a;
    size_t base = a->view_src ? a->view_offs : 0, span = 0, end = 0;
    size_t have = tg_nbytes(owner);
    if (!span_bytes(a->type, ne, nb, &span) || __builtin_add_overflow(base, offset, &end) ||
        __builtin_add_overflow(end, span, &end) || end > have) {
        return tg__fail1(TG_ERR_SHAPE, name, a, "view [%lld,%lld,%lld,%lld] (strides %zu,%zu,%zu) at offset %zu needs %zu bytes from byte %zu, out of bounds of the %zu bytes of %s%s%s",
                         (long long) ne[0], (long long) ne[1], (long long) ne[2], (long long) ne[3], nb[1], nb[2], nb[3],
                         offset, span, base + offset, have, owner == a ? "a" : "a's memory owner",
                         owner->name[0] ? " " : "", owner->name);
    }
    struct tg_tensor * t = tg__new_tensor(ctx, a->type, 4, ne, a, offset, name);
    if (!t) return NULL;
    memcpy(t->nb, nb, sizeof(nb));
    if (a->name[0]) tg_format_name(t, "%s (view)", a->name);
    t->op = TG_OP_VIEW;
    t->src[0] = a;
    memcpy(t->op_params, &offset, sizeof(offset));
    return t;
}

struct tg_tensor * tg_view_1d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, size_t offset) {
    NEED_CTX("view_1d"); NEED(a, "view_1d");
    return view_impl(ctx, a, 1, &ne0, NULL, offset, "view_1d");
}

struct tg_tensor * tg_view_2d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, int64_t ne1, size_t nb1, size_t offset) {
    NEED_CTX("view_2d"); NEED(a, "view_2d");
    const int64_t ne[2] = { ne0, ne1 };
    const size_t nb[1] = { nb1 };
    return view_impl(ctx, a, 2, ne, nb, offset, "view_2d");
}

struct tg_tensor * tg_view_3d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1, size_t nb2, size_t offset) {
    NEED_CTX("view_3d"); NEED(a, "view_3d");
    const int64_t ne[3] = { ne0, ne1, ne2 };
    const size_t nb[2] = { nb1, nb2 };
    return view_impl(ctx, a, 3, ne, nb, offset, "view_3d");
}

struct tg_tensor * tg_view_4d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3,
                              size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    NEED_CTX("view_4d"); NEED(a, "view_4d");
    const int64_t ne[4] = { ne0, ne1, ne2, ne3 };
    const size_t nb[3] = { nb1, nb2, nb3 };
    return view_impl(ctx, a, 4, ne, nb, offset, "view_4d");
}

struct tg_tensor * tg_view_tensor(struct tg_context * ctx, struct tg_tensor * a) {
    NEED_CTX("view_tensor"); NEED(a, "view_tensor");
    struct tg_tensor * t = tg__view_of(ctx, a, "view_tensor");
    if (!t) return NULL;
    t->op = TG_OP_VIEW;
    t->src[0] = a;
    return t;
}

// ---- reshape, permute, transpose ------------------------------------------

static struct tg_tensor * reshape_impl(struct tg_context * ctx, struct tg_tensor * a, const int64_t * ne, const char * name) {
    if (!tg_is_contiguous(a)) return tg__fail1(TG_ERR_SHAPE, name, a, "a must be contiguous to be reshaped (use cont first)");
    int64_t n = 1;
    for (int i = 0; i < TG_MAX_DIMS; i++) {
        if (ne[i] < 1) return tg__fail1(TG_ERR_SHAPE, name, a, "ne%d = %lld must be >= 1", i, (long long) ne[i]);
        if (__builtin_mul_overflow(n, ne[i], &n)) n = -1;
    }
    if (n != tg_nelements(a)) {
        return tg__fail1(TG_ERR_SHAPE, name, a, "[%lld,%lld,%lld,%lld] has %lld elements, a has %lld", (long long) ne[0],
                         (long long) ne[1], (long long) ne[2], (long long) ne[3], (long long) n, (long long) tg_nelements(a));
    }
    struct tg_tensor * t = tg__new_tensor(ctx, a->type, 4, ne, a, 0, name);
    if (!t) return NULL;
    if (a->name[0]) tg_format_name(t, "%s (reshaped)", a->name);
    t->op = TG_OP_RESHAPE;
    t->src[0] = a;
    return t;
}

struct tg_tensor * tg_reshape(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b) {
    NEED_CTX("reshape"); NEED(a, "reshape"); NEED(b, "reshape");
    return reshape_impl(ctx, a, b->ne, "reshape");
}

struct tg_tensor * tg_reshape_1d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0) {
    NEED_CTX("reshape_1d"); NEED(a, "reshape_1d");
    const int64_t ne[4] = { ne0, 1, 1, 1 };
    return reshape_impl(ctx, a, ne, "reshape_1d");
}

struct tg_tensor * tg_reshape_2d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, int64_t ne1) {
    NEED_CTX("reshape_2d"); NEED(a, "reshape_2d");
    const int64_t ne[4] = { ne0, ne1, 1, 1 };
    return reshape_impl(ctx, a, ne, "reshape_2d");
}

struct tg_tensor * tg_reshape_3d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2) {
    NEED_CTX("reshape_3d"); NEED(a, "reshape_3d");
    const int64_t ne[4] = { ne0, ne1, ne2, 1 };
    return reshape_impl(ctx, a, ne, "reshape_3d");
}

struct tg_tensor * tg_reshape_4d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    NEED_CTX("reshape_4d"); NEED(a, "reshape_4d");
    const int64_t ne[4] = { ne0, ne1, ne2, ne3 };
    return reshape_impl(ctx, a, ne, "reshape_4d");
}

static struct tg_tensor * permute_impl(struct tg_context * ctx, struct tg_tensor * a, const int * axes, enum tg_op op, const char * name) {
    bool seen[TG_MAX_DIMS] = { false };
    for (int i = 0; i < TG_MAX_DIMS; i++) {
        if (axes[i] < 0 || axes[i] >= TG_MAX_DIMS || seen[axes[i]]) {
            return tg__fail1(TG_ERR_INVALID_ARG, name, a, "axes (%d,%d,%d,%d) are not a permutation of 0..3",
                             axes[0], axes[1], axes[2], axes[3]);
        }
        seen[axes[i]] = true;
    }
    if (tg_type_traits(a->type)->is_quantized && axes[0] != 0) {
        return tg__fail1(TG_ERR_TYPE, name, a, "dim 0 of a %s tensor holds its blocks and must stay dim 0 (axes %d,%d,%d,%d)",
                         tg_type_name(a->type), axes[0], axes[1], axes[2], axes[3]);
    }
    int64_t ne[4];
    size_t nb[4];
    for (int i = 0; i < TG_MAX_DIMS; i++) { ne[axes[i]] = a->ne[i]; nb[axes[i]] = a->nb[i]; }
    struct tg_tensor * t = tg__new_tensor(ctx, a->type, 4, ne, a, 0, name);
    if (!t) return NULL;
    memcpy(t->nb, nb, sizeof(nb));
    if (a->name[0]) tg_format_name(t, op == TG_OP_TRANSPOSE ? "%s (transposed)" : "%s (permuted)", a->name);
    t->op = op;
    t->src[0] = a;
    for (int i = 0; i < TG_MAX_DIMS; i++) t->op_params[i] = axes[i];
    return t;
}

struct tg_tensor * tg_permute(struct tg_context * ctx, struct tg_tensor * a, int axis0, int axis1, int axis2, int axis3) {
    NEED_CTX("permute"); NEED(a, "permute");
    const int axes[4] = { axis0, axis1, axis2, axis3 };
    return permute_impl(ctx, a, axes, TG_OP_PERMUTE, "permute");
}

struct tg_tensor * tg_transpose(struct tg_context * ctx, struct tg_tensor * a) {
    NEED_CTX("transpose"); NEED(a, "transpose");
    const int axes[4] = { 1, 0, 2, 3 };
    return permute_impl(ctx, a, axes, TG_OP_TRANSPOSE, "transpose");
}

// ---- set / acc ------------------------------------------------------------

static struct tg_tensor * set_acc_impl(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b,
                                       size_t nb1, size_t nb2, size_t nb3, size_t offset, enum tg_op op,
                                       bool inplace, const char * name) {
    NEED_CTX(name); NEED(a, name); NEED(b, name);
    if (a->type != TG_TYPE_F32 || b->type != TG_TYPE_F32) return tg__fail2(TG_ERR_TYPE, name, a, b, "a and b must be f32");
    if (!tg_is_contiguous(a)) return tg__fail2(TG_ERR_SHAPE, name, a, b, "a must be contiguous");
    if (tg_nelements(b) > tg_nelements(a)) {
        return tg__fail2(TG_ERR_SHAPE, name, a, b, "b has more elements (%lld) than a (%lld)", (long long) tg_nelements(b), (long long) tg_nelements(a));
    }
    const size_t vals[4] = { nb1, nb2, nb3, offset };
    for (int i = 0; i < 4; i++) {
        if (vals[i] > INT32_MAX || vals[i] % sizeof(float) != 0) {
            return tg__fail2(TG_ERR_INVALID_ARG, name, a, b, "strides/offset (%zu,%zu,%zu,%zu) must be multiples of 4 below 2^31",
                             nb1, nb2, nb3, offset);
        }
    }
    const size_t nb[4] = { sizeof(float), nb1, nb2, nb3 };
    size_t span = 0, end = 0, have = tg_nbytes(a);
    if (!span_bytes(a->type, b->ne, nb, &span) || __builtin_add_overflow(offset, span, &end) || end > have) {
        return tg__fail2(TG_ERR_SHAPE, name, a, b, "the view of b's shape (strides %zu,%zu,%zu) at offset %zu needs %zu bytes, a has %zu",
                         nb1, nb2, nb3, offset, span, have);
    }
    struct tg_tensor * t = inplace ? tg__view_of(ctx, a, name) : tg__op_new(ctx, op, a->type, a->ne, a, b, name);
    if (!t) return NULL;
    t->op = op;
    t->src[0] = a;
    t->src[1] = b;
    for (int i = 0; i < 4; i++) t->op_params[i] = (int32_t) vals[i];
    t->op_params[4] = inplace ? 1 : 0;
    return t;
}

struct tg_tensor * tg_set(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b, size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    return set_acc_impl(ctx, a, b, nb1, nb2, nb3, offset, TG_OP_SET, false, "set");
}
struct tg_tensor * tg_set_inplace(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b, size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    return set_acc_impl(ctx, a, b, nb1, nb2, nb3, offset, TG_OP_SET, true, "set_inplace");
}
struct tg_tensor * tg_acc(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b, size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    return set_acc_impl(ctx, a, b, nb1, nb2, nb3, offset, TG_OP_ACC, false, "acc");
}
struct tg_tensor * tg_acc_inplace(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b, size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    return set_acc_impl(ctx, a, b, nb1, nb2, nb3, offset, TG_OP_ACC, true, "acc_inplace");
}
