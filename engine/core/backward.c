// backward.c - automatic differentiation: the backward graph of a forward
// graph for a scalar loss, built from the engine's own ops (tg/core.h).
//
// The forward nodes are visited in reverse order; each node with a gradient
// hands gradient terms to those of its sources that need one (parameters and
// the nodes between them and the loss), a source's terms added up in the
// order they arrive. Terms are ordinary nodes; a gradient node is named
// "grad of NAME" and points back with grad_of.
#include "core-impl.h"

#include "core/ptrmap.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct bw {
    struct tg_context * ctx;
    struct tg_graph *   gb;
    struct tg_ptrmap    needs;   // tensors on a path from a parameter to the loss
};

static bool needs(const struct bw * w, const struct tg_tensor * t) { return t && tg_ptrmap_find(&w->needs, t, 0) != 0; }

static enum tg_status fail_unsupported(const struct tg_tensor * node, const struct tg_tensor * src, const char * why) {
    return tg_error(TG_ERR_UNSUPPORTED, "backward: op %s of '%s' has no gradient%s%s (needed for the gradient of '%s')",
                    tg_op_name(node->op), node->name[0] ? node->name : "(unnamed)", why ? ": " : "", why ? why : "",
                    src && src->name[0] ? src->name : "(unnamed)");
}

// g summed over the dimensions along which `like` was broadcast (like->ne[d]
// == 1 < g->ne[d]); NULL when like's shape is not such a reduction of g's.
static struct tg_tensor * reduce_to(struct tg_context * ctx, struct tg_tensor * g, const struct tg_tensor * like) {
    for (int d = 0; d < TG_MAX_DIMS; d++) {
        if (like->ne[d] == g->ne[d]) continue;
        if (like->ne[d] != 1) return NULL;
        if (d == 0) {
            g = tg_sum_rows(ctx, tg_is_contiguous(g) ? g : tg_cont(ctx, g));
        } else {
            int ax[4] = { 0, 1, 2, 3 };
            ax[0] = d; ax[d] = 0;   // swap dims 0 and d
            struct tg_tensor * p = tg_cont(ctx, tg_permute(ctx, g, ax[0], ax[1], ax[2], ax[3]));
            struct tg_tensor * r = tg_sum_rows(ctx, p);
            g = tg_cont(ctx, tg_permute(ctx, r, ax[0], ax[1], ax[2], ax[3]));
        }
        if (!g) return NULL;
    }
    return g;
}

// Adds term to src's gradient (the first term becomes it).
static enum tg_status accumulate(struct bw * w, struct tg_tensor * src, struct tg_tensor * term) {
    if (!term) return tg_last_status() ? tg_last_status() : TG_ERR_INVALID_ARG;
    if (!tg_are_same_shape(term, src)) {
        struct tg_tensor * r = reduce_to(w->ctx, term, src);
        if (!r || !tg_are_same_shape(r, src))
            return tg_error(TG_ERR_SHAPE, "backward: a gradient term of shape [%lld,%lld,%lld,%lld] does not reduce to '%s' [%lld,%lld,%lld,%lld]",
                            (long long) term->ne[0], (long long) term->ne[1], (long long) term->ne[2], (long long) term->ne[3],
                            src->name, (long long) src->ne[0], (long long) src->ne[1], (long long) src->ne[2], (long long) src->ne[3]);
        term = r;
    }
    if (!tg_is_contiguous(term)) term = tg_cont(w->ctx, term);
    struct tg_tensor * prev = src->grad;
    struct tg_tensor * g = prev ? tg_add(w->ctx, prev, term) : term;
    if (!g) return tg_last_status();
    if (prev) {   // the sum so far becomes a partial term of the new gradient
        tg_format_name(prev, "grad of %s (partial)", src->name[0] ? src->name : "(unnamed)");
        prev->grad_of = NULL;
    }
    if (g == term && (term->grad_of || term->op == TG_OP_NONE || tg_op_is_view(term->op))) {
        g = tg_cont(w->ctx, term);   // a gradient node of its own (a term may be another tensor's gradient)
        if (!g) return tg_last_status();
    }
    tg_format_name(g, "grad of %s", src->name[0] ? src->name : "(unnamed)");
    g->grad_of = src;
    src->grad = g;
    return TG_OK;
}

// The gradient terms node n hands to its sources (n->grad is its gradient).
static enum tg_status backward_node(struct bw * w, struct tg_tensor * n) {
    struct tg_context * ctx = w->ctx;
    struct tg_tensor * g = n->grad, * a = n->src[0], * b = n->src[1];
    const bool na = needs(w, a), nb = needs(w, b);
    enum tg_status st = TG_OK;
    switch (n->op) {
    case TG_OP_ADD:
        if (na) st = accumulate(w, a, g);
        if (!st && nb) st = accumulate(w, b, g);
        return st;
    case TG_OP_SUB:
        if (na) st = accumulate(w, a, g);
        if (!st && nb) st = accumulate(w, b, tg_neg(ctx, g));
        return st;
    case TG_OP_MUL:
        if (na) st = accumulate(w, a, tg_mul(ctx, g, b));
        if (!st && nb) st = accumulate(w, b, tg_mul(ctx, g, a));
        return st;
    case TG_OP_DIV:   // d(a/b)/da = 1/b, d(a/b)/db = -(a/b)/b
        if (na) st = accumulate(w, a, tg_div(ctx, g, b));
        if (!st && nb) st = accumulate(w, b, tg_neg(ctx, tg_div(ctx, tg_mul(ctx, g, n), b)));
        return st;
    case TG_OP_SCALE:
        return na ? accumulate(w, a, tg_scale(ctx, g, tg_get_op_param_f32(n, 0))) : TG_OK;
    case TG_OP_SQR:
        return na ? accumulate(w, a, tg_mul(ctx, g, tg_scale(ctx, a, 2.0f))) : TG_OK;
    case TG_OP_SQRT:  // 1 / (2 sqrt(a))
        return na ? accumulate(w, a, tg_div(ctx, g, tg_scale(ctx, n, 2.0f))) : TG_OK;
    case TG_OP_LOG:
        return na ? accumulate(w, a, tg_div(ctx, g, a)) : TG_OK;
    case TG_OP_NEG:
        return na ? accumulate(w, a, tg_neg(ctx, g)) : TG_OK;
    case TG_OP_SUM:
    case TG_OP_SUM_ROWS:
        return na ? accumulate(w, a, tg_repeat(ctx, g, a)) : TG_OK;
    case TG_OP_MEAN:
        return na ? accumulate(w, a, tg_scale(ctx, tg_repeat(ctx, g, a), 1.0f / (float) a->ne[0])) : TG_OK;
    case TG_OP_REPEAT:
        return na ? accumulate(w, a, g) : TG_OK;   // summed back over the tiled dimensions by accumulate
    case TG_OP_CONT:
    case TG_OP_DUP:
        return na ? accumulate(w, a, tg_reshape(ctx, tg_is_contiguous(g) ? g : tg_cont(ctx, g), a)) : TG_OK;
    case TG_OP_CPY:   // the result is b's memory with a's values
        return na ? accumulate(w, a, tg_reshape(ctx, tg_is_contiguous(g) ? g : tg_cont(ctx, g), a)) : TG_OK;
    case TG_OP_RESHAPE:
        return na ? accumulate(w, a, tg_reshape(ctx, tg_is_contiguous(g) ? g : tg_cont(ctx, g), a)) : TG_OK;
    case TG_OP_TRANSPOSE:
        return na ? accumulate(w, a, tg_transpose(ctx, g)) : TG_OK;
    case TG_OP_PERMUTE: {   // axis i went to axis p[i]: back, axis p[i] goes to i
        if (!na) return TG_OK;
        int inv[4];
        for (int i = 0; i < 4; i++) inv[n->op_params[i]] = i;
        return accumulate(w, a, tg_permute(ctx, g, inv[0], inv[1], inv[2], inv[3]));
    }
    case TG_OP_MUL_MAT: {   // c [m,n] = a [k,m]^T b [k,n], per matrix of dims 2, 3
        if (a->ne[2] != b->ne[2] || a->ne[3] != b->ne[3] || a->type != TG_TYPE_F32)
            return fail_unsupported(n, na ? a : b, "only F32 matrix products without broadcast so far");
        struct tg_tensor * gc = tg_is_contiguous(g) ? g : tg_cont(ctx, g);
        if (na) st = accumulate(w, a, tg_out_prod(ctx, b, gc));                                   // [k,m]
        if (!st && nb) st = accumulate(w, b, tg_out_prod(ctx, a, tg_cont(ctx, tg_transpose(ctx, gc))));   // [k,n]
        return st;
    }
    case TG_OP_SOFT_MAX: {  // y = softmax(s*x + mask): dx = s * y * (g - sum(g*y))
        if (nb) return fail_unsupported(n, b, "no gradient through the mask");
        if (!na) return TG_OK;
        if (tg_get_op_param_f32(n, 1) != 0.0f) return fail_unsupported(n, a, "ALiBi (max_bias) is not differentiated");
        struct tg_tensor * gy = tg_mul(ctx, g, n);
        struct tg_tensor * d = tg_mul(ctx, n, tg_sub(ctx, g, tg_repeat(ctx, tg_sum_rows(ctx, gy), n)));
        return accumulate(w, a, tg_scale(ctx, d, tg_get_op_param_f32(n, 0)));
    }
    case TG_OP_CROSS_ENTROPY_LOSS: {   // d/da = (softmax(a) * sum(b) - b) / rows
        if (nb) return fail_unsupported(n, b, "no gradient w.r.t. the labels");
        if (!na) return TG_OK;
        const int64_t rows = tg_nelements(a) / a->ne[0];
        struct tg_tensor * p = tg_mul(ctx, tg_soft_max(ctx, a), tg_repeat(ctx, tg_sum_rows(ctx, b), a));
        struct tg_tensor * d = tg_mul(ctx, tg_sub(ctx, p, b), tg_repeat(ctx, g, a));
        return accumulate(w, a, tg_scale(ctx, d, 1.0f / (float) rows));
    }
    case TG_OP_SILU:
        return na ? accumulate(w, a, tg_silu_back(ctx, tg_is_contiguous(a) ? a : tg_cont(ctx, a), tg_is_contiguous(g) ? g : tg_cont(ctx, g))) : TG_OK;
    case TG_OP_RMS_NORM:
        return na ? accumulate(w, a, tg_rms_norm_back(ctx, a, tg_is_contiguous(g) ? g : tg_cont(ctx, g), tg_get_op_param_f32(n, 0))) : TG_OK;
    case TG_OP_GET_ROWS:   // rows of a (F32 [n,r]) picked by ids b
        if (!na) return TG_OK;
        if (a->type != TG_TYPE_F32 || a->ne[2] != 1 || a->ne[3] != 1)
            return fail_unsupported(n, a, "only 2-D F32 tables so far");
        return accumulate(w, a, tg_get_rows_back(ctx, tg_is_contiguous(g) ? g : tg_cont(ctx, g), b, a));
    case TG_OP_ROPE: {   // a rotation: its transpose is the rotation by the opposite angle
        if (!na) return TG_OK;
        if (needs(w, n->src[2])) return fail_unsupported(n, n->src[2], "no gradient w.r.t. the frequency factors");
        return accumulate(w, a, tg_rope_ext(ctx, tg_is_contiguous(g) ? g : tg_cont(ctx, g), b, n->src[2], n->op_params[0],
                                            n->op_params[1], tg_get_op_param_f32(n, 3), -tg_get_op_param_f32(n, 4)));
    }
    case TG_OP_GLU: {   // swiglu: act(x) * gate, act = silu
        if (n->op_params[0] != TG_GLU_SWIGLU) return fail_unsupported(n, a, "only SWIGLU so far");
        struct tg_tensor * gc = tg_is_contiguous(g) ? g : tg_cont(ctx, g);
        if (b) {   // x = a, gate = b
            if (na) st = accumulate(w, a, tg_silu_back(ctx, tg_is_contiguous(a) ? a : tg_cont(ctx, a), tg_mul(ctx, gc, b)));
            if (!st && nb) st = accumulate(w, b, tg_mul(ctx, gc, tg_silu(ctx, a)));
            return st;
        }
        if (!na) return TG_OK;
        const int64_t h = a->ne[0] / 2;
        const bool swapped = n->op_params[1] != 0;
        struct tg_tensor * x = tg_cont(ctx, tg_view_4d(ctx, a, h, a->ne[1], a->ne[2], a->ne[3], a->nb[1], a->nb[2], a->nb[3],
                                                       swapped ? (size_t) h * a->nb[0] : 0));
        struct tg_tensor * gate = tg_cont(ctx, tg_view_4d(ctx, a, h, a->ne[1], a->ne[2], a->ne[3], a->nb[1], a->nb[2], a->nb[3],
                                                          swapped ? 0 : (size_t) h * a->nb[0]));
        struct tg_tensor * dx = tg_silu_back(ctx, x, tg_mul(ctx, gc, gate));
        struct tg_tensor * dg = tg_mul(ctx, gc, tg_silu(ctx, x));
        return accumulate(w, a, swapped ? tg_concat(ctx, dg, dx, 0) : tg_concat(ctx, dx, dg, 0));
    }
    case TG_OP_RELU:
    case TG_OP_GELU:
        return na ? accumulate(w, a, tg_unary_back(ctx, tg_is_contiguous(a) ? a : tg_cont(ctx, a), tg_is_contiguous(g) ? g : tg_cont(ctx, g),
                                                   n->op == TG_OP_RELU ? TG_UNARY_BACK_RELU : TG_UNARY_BACK_GELU, 0)) : TG_OK;
    case TG_OP_DIAG_MASK_INF: {
        if (!na) return TG_OK;
        struct tg_tensor * gc = tg_is_contiguous(g) ? g : tg_cont(ctx, g);
        return accumulate(w, a, tg_unary_back(ctx, gc, gc, TG_UNARY_BACK_DIAG_MASK, n->op_params[0]));
    }
    case TG_OP_NORM:
        return na ? accumulate(w, a, tg_norm_back(ctx, a, tg_is_contiguous(g) ? g : tg_cont(ctx, g), tg_get_op_param_f32(n, 0))) : TG_OK;
    case TG_OP_CONCAT: {   // each source gets its slice of g along dim
        const int dim = n->op_params[0];
        struct tg_tensor * gc = tg_is_contiguous(g) ? g : tg_cont(ctx, g);
        if (na) st = accumulate(w, a, tg_cont(ctx, tg_view_4d(ctx, gc, a->ne[0], a->ne[1], a->ne[2], a->ne[3],
                                                             gc->nb[1], gc->nb[2], gc->nb[3], 0)));
        if (!st && nb) st = accumulate(w, b, tg_cont(ctx, tg_view_4d(ctx, gc, b->ne[0], b->ne[1], b->ne[2], b->ne[3],
                                                                   gc->nb[1], gc->nb[2], gc->nb[3],
                                                                   (size_t) a->ne[dim] * gc->nb[dim])));
        return st;
    }
    case TG_OP_OUT_PROD: {   // c [m,n] = sum_l a[i,l] b[j,l]: da = g b (over j), db = g^T a (over i)
        if (a->ne[2] != b->ne[2] || a->ne[3] != b->ne[3]) return fail_unsupported(n, na ? a : b, "only without broadcast so far");
        struct tg_tensor * gc = tg_is_contiguous(g) ? g : tg_cont(ctx, g);
        if (na) st = accumulate(w, a, tg_mul_mat(ctx, tg_cont(ctx, tg_transpose(ctx, gc)), b));   // [m,k]
        if (!st && nb) st = accumulate(w, b, tg_mul_mat(ctx, gc, a));                              // [n,k]
        return st;
    }
    default:
        return fail_unsupported(n, na ? a : b, NULL);
    }
}

// tg_backward_options.debug_grad_of_grad: the bug on purpose. Each gradient
// node of gb (but the seed) gets a "grad of grad of X" node of zeros.
static enum tg_status add_grad_of_grad(struct tg_context * ctx, struct tg_graph * gb, const struct tg_tensor * seed) {
    const int n = gb->n_nodes;
    for (int i = 0; i < n; i++) {
        struct tg_tensor * g = gb->nodes[i];
        if (!g->grad_of || g == seed || g->grad) continue;
        struct tg_tensor * gg = tg_scale(ctx, g, 0.0f);
        if (!gg) return tg_last_status();
        tg_format_name(gg, "grad of %s", g->name);
        gg->grad_of = g;
        g->grad = gg;
        enum tg_status st = tg_graph_build_forward(gb, gg);
        if (st) return st;
    }
    return TG_OK;
}

enum tg_status tg_graph_build_backward(struct tg_context * ctx, struct tg_graph * gf, struct tg_graph * gb,
                                       struct tg_tensor * loss, const struct tg_backward_options * opt) {
    if (!ctx || !gf || !gb || !loss) return tg_error(TG_ERR_INVALID_ARG, "backward: NULL context, graph or loss");
    if (opt && opt->second_order)
        return tg_error(TG_ERR_UNSUPPORTED, "backward: second-order gradients are not supported yet");
    if (loss->type != TG_TYPE_F32 || tg_nelements(loss) != 1)
        return tg_error(TG_ERR_SHAPE, "backward: the loss '%s' must be one F32 element (it has %lld)", loss->name,
                        (long long) tg_nelements(loss));
    bool in_gf = false;
    for (int i = 0; i < gf->n_nodes && !in_gf; i++) in_gf = gf->nodes[i] == loss;
    if (!in_gf) return tg_error(TG_ERR_INVALID_ARG, "backward: the loss '%s' is not a node of the forward graph", loss->name);
    struct bw w = { .ctx = ctx, .gb = gb };
    enum tg_status st = tg_ptrmap_reset(&w.needs, (size_t) (gf->n_nodes + gf->n_leafs) * 2 + 16);
    if (st) return st;
    // which tensors lie on a path from a parameter
    for (int i = 0; i < gf->n_leafs && !st; i++)
        if (gf->leafs[i]->flags & TG_FLAG_PARAM) st = tg_ptrmap_put(&w.needs, tg_ptrmap_key(gf->leafs[i]), 1);
    for (int i = 0; i < gf->n_nodes && !st; i++) {
        struct tg_tensor * n = gf->nodes[i];
        bool any = (n->flags & TG_FLAG_PARAM) != 0;
        for (int s = 0; s < TG_MAX_SRC && !any; s++) any = needs(&w, n->src[s]);
        if (!any && n->view_src) any = needs(&w, n->view_src);
        if (any) st = tg_ptrmap_put(&w.needs, tg_ptrmap_key(n), 1);
    }
    if (!st && !needs(&w, loss)) st = tg_error(TG_ERR_INVALID_ARG, "backward: the loss '%s' depends on no tensor flagged TG_FLAG_PARAM", loss->name);
    if (!st) st = tg_graph_build_forward(gb, loss);
    // the seed
    struct tg_tensor * seed = NULL;
    if (!st) {
        seed = tg_new_tensor_1d(ctx, TG_TYPE_F32, 1);
        if (!seed) st = tg_last_status();
    }
    if (!st) {
        tg_format_name(seed, "grad of %s", loss->name);
        tg_set_input(seed);
        seed->grad_of = loss;
        if (seed->data) *(float *) seed->data = 1.0f;
        for (int i = 0; i < gf->n_nodes; i++) gf->nodes[i]->grad = NULL;
        for (int i = 0; i < gf->n_leafs; i++) gf->leafs[i]->grad = NULL;
        loss->grad = seed;
    }
    for (int i = gf->n_nodes - 1; i >= 0 && !st; i--) {
        struct tg_tensor * n = gf->nodes[i];
        if (!n->grad || !needs(&w, n)) continue;
        if (n->op == TG_OP_VIEW) {   // g placed at the window into zeros of the source's shape
            struct tg_tensor * src = n->src[0] ? n->src[0] : n->view_src;
            if (!src || !needs(&w, src)) continue;
            if (!tg_is_contiguous(src)) { st = fail_unsupported(n, src, "a view of a non-contiguous tensor"); break; }
            struct tg_tensor * zeros = tg_scale(ctx, src, 0.0f);
            struct tg_tensor * gc = n->grad && !tg_is_contiguous(n->grad) ? tg_cont(ctx, n->grad) : n->grad;
            st = accumulate(&w, src, tg_acc(ctx, zeros, gc, n->nb[1], n->nb[2], n->nb[3], n->view_offs));
            continue;
        }
        st = backward_node(&w, n);
    }
    // the gradient nodes, in order, after the forward ones
    for (int i = 0; i < gf->n_leafs && !st; i++)
        if (gf->leafs[i]->grad) st = tg_graph_build_forward(gb, gf->leafs[i]->grad);
    for (int i = 0; i < gf->n_nodes && !st; i++)
        if (gf->nodes[i]->grad && gf->nodes[i] != loss) st = tg_graph_build_forward(gb, gf->nodes[i]->grad);
    if (!st && opt && opt->debug_grad_of_grad) st = add_grad_of_grad(ctx, gb, seed);
    tg_ptrmap_free(&w.needs);
    return st;
}
