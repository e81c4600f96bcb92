// test_grad.c - automatic differentiation (tg_graph_build_backward) against
// central finite differences in float64: every case builds a small forward
// graph over parameters (random values, broadcast shapes and non-contiguous
// views among them), the loss sum(f * W) for a fixed random W, and compares
// each parameter's analytic gradient (computed by the engine in f32) with
// (loss(x + h) - loss(x - h)) / 2h, the loss evaluated by a float64
// interpreter of the same graph written here. Prints op, shapes and the error
// of every case. Tolerance: max |analytic - numeric| <= 1e-3 * max(1, max
// |numeric|) (f32 arithmetic against float64).
// Also: gradient nodes are named "grad of X" and linked to X both ways, no
// gradient node has a gradient, an op without a gradient is named in the
// error, and a loss that depends on no parameter is refused.
#include "check.h"
#include "tg/core.h"
#include "tg/cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ull;
static double urand(void) {   // [0, 1)
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (double) (rng >> 11) / 9007199254740992.0;
}

static struct tg_cpu_pool * g_pool;

// ---- float64 interpreter of a forward graph --------------------------------

#define MAXT 256
struct interp {
    const struct tg_tensor * t[MAXT];
    double * v[MAXT];
    int n;
};

static double * val(struct interp * I, const struct tg_tensor * t) {
    for (int i = 0; i < I->n; i++) if (I->t[i] == t) return I->v[i];
    return NULL;
}

static int64_t nel(const struct tg_tensor * t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }

// Logical (row-major over ne0 fastest) index of (i0, i1, i2, i3) in t.
static int64_t lin(const struct tg_tensor * t, const int64_t i[4]) {
    return ((i[3] * t->ne[2] + i[2]) * t->ne[1] + i[1]) * t->ne[0] + i[0];
}
static void unlin(const struct tg_tensor * t, int64_t k, int64_t i[4]) {
    for (int d = 0; d < 4; d++) { i[d] = k % t->ne[d]; k /= t->ne[d]; }
}

// Evaluates node n from its sources' values into out (nel(n) doubles). False: op not modelled.
static bool eval_node(struct interp * I, const struct tg_tensor * n, double * out) {
    const struct tg_tensor * a = n->src[0], * b = n->src[1];
    const double * A = a ? val(I, a) : NULL, * B = b ? val(I, b) : NULL;
    const int64_t N = nel(n);
    int64_t idx[4], j[4];
    switch (n->op) {
    case TG_OP_ADD: case TG_OP_SUB: case TG_OP_MUL: case TG_OP_DIV:
        for (int64_t k = 0; k < N; k++) {
            unlin(n, k, idx);
            for (int d = 0; d < 4; d++) j[d] = idx[d] % b->ne[d];
            const double x = A[k], y = B[lin(b, j)];
            out[k] = n->op == TG_OP_ADD ? x + y : n->op == TG_OP_SUB ? x - y : n->op == TG_OP_MUL ? x * y : x / y;
        }
        return true;
    case TG_OP_SCALE: for (int64_t k = 0; k < N; k++) out[k] = A[k] * tg_get_op_param_f32(n, 0); return true;
    case TG_OP_SQR:   for (int64_t k = 0; k < N; k++) out[k] = A[k] * A[k]; return true;
    case TG_OP_SQRT:  for (int64_t k = 0; k < N; k++) out[k] = sqrt(A[k]); return true;
    case TG_OP_LOG:   for (int64_t k = 0; k < N; k++) out[k] = log(A[k]); return true;
    case TG_OP_NEG:   for (int64_t k = 0; k < N; k++) out[k] = -A[k]; return true;
    case TG_OP_SUM: { double s = 0; for (int64_t k = 0; k < nel(a); k++) s += A[k]; out[0] = s; return true; }
    case TG_OP_SUM_ROWS: case TG_OP_MEAN:
        for (int64_t r = 0; r < N; r++) {
            double s = 0;
            for (int64_t c = 0; c < a->ne[0]; c++) s += A[r * a->ne[0] + c];
            out[r] = n->op == TG_OP_MEAN ? s / (double) a->ne[0] : s;
        }
        return true;
    case TG_OP_REPEAT:
        for (int64_t k = 0; k < N; k++) {
            unlin(n, k, idx);
            for (int d = 0; d < 4; d++) j[d] = idx[d] % a->ne[d];
            out[k] = A[lin(a, j)];
        }
        return true;
    case TG_OP_CONT: case TG_OP_DUP: case TG_OP_RESHAPE: case TG_OP_CPY:
        memcpy(out, A, (size_t) N * sizeof(double));   // logical order kept
        return true;
    case TG_OP_PERMUTE: case TG_OP_TRANSPOSE: {
        int p[4] = { 1, 0, 2, 3 };
        if (n->op == TG_OP_PERMUTE) for (int d = 0; d < 4; d++) p[d] = n->op_params[d];
        for (int64_t k = 0; k < nel(a); k++) {   // axis d of a goes to axis p[d]
            unlin(a, k, idx);
            for (int d = 0; d < 4; d++) j[p[d]] = idx[d];
            out[lin(n, j)] = A[k];
        }
        return true;
    }
    case TG_OP_MUL_MAT:   // per matrix q: out[i, c] = sum_l a[l, i] b[l, c]
        for (int64_t q = 0; q < n->ne[2] * n->ne[3]; q++)
        for (int64_t c = 0; c < n->ne[1]; c++)
            for (int64_t i = 0; i < n->ne[0]; i++) {
                double s = 0;
                for (int64_t l = 0; l < a->ne[0]; l++)
                    s += A[(q * a->ne[1] + i) * a->ne[0] + l] * B[(q * b->ne[1] + c) * b->ne[0] + l];
                out[(q * n->ne[1] + c) * n->ne[0] + i] = s;
            }
        return true;
    case TG_OP_CONCAT: {
        const int dim = n->op_params[0];
        for (int64_t k = 0; k < N; k++) {
            unlin(n, k, idx);
            if (idx[dim] < a->ne[dim]) out[k] = A[lin(a, idx)];
            else { memcpy(j, idx, sizeof(j)); j[dim] -= a->ne[dim]; out[k] = B[lin(b, j)]; }
        }
        return true;
    }
    case TG_OP_OUT_PROD:   // 2-D: out[i, c] = sum_l a[i, l] b[c, l]
        for (int64_t c = 0; c < n->ne[1]; c++)
            for (int64_t i = 0; i < n->ne[0]; i++) {
                double s = 0;
                for (int64_t l = 0; l < a->ne[1]; l++) s += A[l * a->ne[0] + i] * B[l * b->ne[0] + c];
                out[c * n->ne[0] + i] = s;
            }
        return true;
    case TG_OP_VIEW: {   // of a contiguous source: element (i0..i3) at byte offset + sum i * nb
        const size_t es = sizeof(float);
        for (int64_t k = 0; k < N; k++) {
            unlin(n, k, idx);
            const size_t off = n->view_offs + (size_t) idx[0] * n->nb[0] + (size_t) idx[1] * n->nb[1] +
                               (size_t) idx[2] * n->nb[2] + (size_t) idx[3] * n->nb[3];
            out[k] = A[off / es];
        }
        return true;
    }
    case TG_OP_RELU: for (int64_t k = 0; k < N; k++) out[k] = A[k] > 0 ? A[k] : 0; return true;
    case TG_OP_GELU: for (int64_t k = 0; k < N; k++) {
        const double x = A[k];
        out[k] = 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    } return true;
    case TG_OP_DIAG_MASK_INF:
        for (int64_t k = 0; k < N; k++) { unlin(n, k, idx); out[k] = idx[0] > n->op_params[0] + idx[1] ? -INFINITY : A[k]; }
        return true;
    case TG_OP_NORM: {
        const double eps = tg_get_op_param_f32(n, 0);
        const int64_t C = n->ne[0];
        for (int64_t r = 0; r < N / C; r++) {
            double mu = 0, var = 0;
            for (int64_t c = 0; c < C; c++) mu += A[r * C + c];
            mu /= (double) C;
            for (int64_t c = 0; c < C; c++) var += (A[r * C + c] - mu) * (A[r * C + c] - mu);
            const double sc = 1 / sqrt(var / (double) C + eps);
            for (int64_t c = 0; c < C; c++) out[r * C + c] = (A[r * C + c] - mu) * sc;
        }
        return true;
    }
    case TG_OP_SILU: for (int64_t k = 0; k < N; k++) out[k] = A[k] / (1 + exp(-A[k])); return true;
    case TG_OP_RMS_NORM: {
        const double eps = tg_get_op_param_f32(n, 0);
        const int64_t C = n->ne[0];
        for (int64_t r = 0; r < N / C; r++) {
            double ss = 0;
            for (int64_t c = 0; c < C; c++) ss += A[r * C + c] * A[r * C + c];
            const double sc = 1 / sqrt(ss / (double) C + eps);
            for (int64_t c = 0; c < C; c++) out[r * C + c] = A[r * C + c] * sc;
        }
        return true;
    }
    case TG_OP_GET_ROWS:   // b: ids (I32, from the tensor's own data)
        for (int64_t r = 0; r < n->ne[1]; r++) {
            const int32_t id = ((const int32_t *) b->data)[r];
            for (int64_t c = 0; c < n->ne[0]; c++) out[r * n->ne[0] + c] = A[id * a->ne[0] + c];
        }
        return true;
    case TG_OP_ROPE: {   // a [d, h, t], positions b (I32 [t])
        const int nd = n->op_params[0], mode = n->op_params[1];
        const double base = tg_get_op_param_f32(n, 3), fs = tg_get_op_param_f32(n, 4);
        memcpy(out, A, (size_t) N * sizeof(double));
        for (int64_t t = 0; t < n->ne[2]; t++)
            for (int64_t hh = 0; hh < n->ne[1]; hh++) {
                const double * x = A + (t * n->ne[1] + hh) * n->ne[0];
                double * y = out + (t * n->ne[1] + hh) * n->ne[0];
                for (int i = 0; i < nd / 2; i++) {
                    const double th = ((const int32_t *) b->data)[t] * fs * pow(base, -2.0 * i / nd);
                    const int i0 = mode == TG_ROPE_NEOX ? i : 2 * i, i1 = mode == TG_ROPE_NEOX ? i + nd / 2 : 2 * i + 1;
                    y[i0] = x[i0] * cos(th) - x[i1] * sin(th);
                    y[i1] = x[i0] * sin(th) + x[i1] * cos(th);
                }
            }
        return true;
    }
    case TG_OP_GLU: {   // swiglu: silu(x) * gate
        const bool sw = n->op_params[1] != 0;
        const int64_t C = n->ne[0];
        for (int64_t r = 0; r < N / C; r++)
            for (int64_t c = 0; c < C; c++) {
                double x, gt;
                if (b) { x = A[r * C + c]; gt = B[r * C + c]; }
                else { x = A[r * 2 * C + (sw ? C : 0) + c]; gt = A[r * 2 * C + (sw ? 0 : C) + c]; }
                out[r * C + c] = x / (1 + exp(-x)) * gt;
            }
        return true;
    }
    case TG_OP_SOFT_MAX: {
        const double sc = tg_get_op_param_f32(n, 0);
        const int64_t R = N / n->ne[0], C = n->ne[0];
        for (int64_t r = 0; r < R; r++) {
            double mx = -INFINITY, s = 0;
            for (int64_t c = 0; c < C; c++) {
                double x = A[r * C + c] * sc + (B ? B[(r % b->ne[1]) * C + c] : 0.0);
                out[r * C + c] = x;
                if (x > mx) mx = x;
            }
            for (int64_t c = 0; c < C; c++) { out[r * C + c] = exp(out[r * C + c] - mx); s += out[r * C + c]; }
            for (int64_t c = 0; c < C; c++) out[r * C + c] /= s;
        }
        return true;
    }
    case TG_OP_CROSS_ENTROPY_LOSS: {
        const int64_t C = a->ne[0], R = nel(a) / C;
        double loss = 0;
        for (int64_t r = 0; r < R; r++) {
            double mx = -INFINITY, s = 0;
            for (int64_t c = 0; c < C; c++) if (A[r * C + c] > mx) mx = A[r * C + c];
            for (int64_t c = 0; c < C; c++) s += exp(A[r * C + c] - mx);
            const double lse = log(s) + mx;
            for (int64_t c = 0; c < C; c++) loss -= B[r * C + c] * (A[r * C + c] - lse);
        }
        out[0] = loss / (double) R;
        return true;
    }
    default:
        return false;
    }
}

// The loss of gf in float64 with the leafs' values as in `leaf_vals` (by index in gf->leafs).
static double eval_loss(const struct tg_graph * gf, double ** leaf_vals, const struct tg_tensor * loss, bool * ok) {
    struct interp I = { .n = 0 };
    for (int l = 0; l < gf->n_leafs; l++) { I.t[I.n] = gf->leafs[l]; I.v[I.n++] = leaf_vals[l]; }
    double r = NAN;
    for (int i = 0; i < gf->n_nodes && *ok; i++) {
        const struct tg_tensor * n = gf->nodes[i];
        double * out = calloc((size_t) nel(n), sizeof(double));
        if (!out || !eval_node(&I, n, out)) { *ok = false; free(out); break; }
        I.t[I.n] = n; I.v[I.n++] = out;
        if (n == loss) r = out[0];
    }
    for (int i = gf->n_leafs; i < I.n; i++) free(I.v[i]);
    return r;
}

// ---- one case ---------------------------------------------------------------

typedef struct tg_tensor * (*build_fn)(struct tg_context * ctx, struct tg_tensor ** p);

struct gcase {
    const char * what;
    int n_params;
    int64_t shape[4][4];     // per parameter
    double lo, hi;           // parameter values in [lo, hi)
    build_fn build;
};

static void run_case(const struct gcase * c) {
    struct tg_context * ctx = tg_context_new((struct tg_context_params) { .mem_size = 16u << 20 });
    struct tg_tensor * p[4] = { 0 };
    for (int i = 0; i < c->n_params; i++) {
        p[i] = tg_new_tensor_4d(ctx, TG_TYPE_F32, c->shape[i][0], c->shape[i][1] ? c->shape[i][1] : 1,
                                c->shape[i][2] ? c->shape[i][2] : 1, c->shape[i][3] ? c->shape[i][3] : 1);
        tg_format_name(p[i], "p%d", i);
        tg_set_param(p[i]);
        for (int64_t k = 0; k < nel(p[i]); k++) ((float *) p[i]->data)[k] = (float) (c->lo + (c->hi - c->lo) * urand());
    }
    struct tg_tensor * f = c->build(ctx, p);
    if (!CHECK(f != NULL, "%s: forward builds (%s)", c->what, f ? "" : tg_last_error())) { tg_context_free(ctx); return; }
    struct tg_tensor * W = tg_new_tensor_4d(ctx, TG_TYPE_F32, f->ne[0], f->ne[1], f->ne[2], f->ne[3]);
    tg_set_name(W, "W");
    for (int64_t k = 0; k < nel(W); k++) ((float *) W->data)[k] = (float) (urand() * 2 - 1);
    struct tg_tensor * loss = tg_sum(ctx, tg_mul(ctx, tg_is_contiguous(f) ? f : tg_cont(ctx, f), W));
    tg_set_name(loss, "loss");
    struct tg_graph * gf = tg_graph_new(ctx, 256), * gb = tg_graph_new(ctx, 512);
    enum tg_status st = tg_graph_build_forward(gf, loss);
    if (!st) st = tg_graph_build_backward(ctx, gf, gb, loss, NULL);
    if (!CHECK(st == TG_OK, "%s: backward builds (%s)", c->what, st ? tg_last_error() : "")) { tg_context_free(ctx); return; }
    st = tg_cpu_graph_compute(g_pool, gb, NULL);
    if (!CHECK(st == TG_OK, "%s: forward + backward compute (%s)", c->what, st ? tg_last_error() : "")) { tg_context_free(ctx); return; }
    // no gradient node has a gradient; names and links
    bool clean = true;
    for (int i = 0; i < gb->n_nodes; i++) {
        const struct tg_tensor * t = gb->nodes[i];
        if (t->grad_of && t->grad) clean = false;
        if (t->grad_of && (t->grad_of->grad != t || strncmp(t->name, "grad of ", 8))) clean = false;
    }
    CHECK(clean, "%s: gradient nodes are 'grad of X', X->grad points back, none has a gradient", c->what);
    // float64 finite differences
    double * lv[MAXT] = { 0 };
    for (int l = 0; l < gf->n_leafs; l++) {
        const struct tg_tensor * t = gf->leafs[l];
        lv[l] = malloc((size_t) nel(t) * sizeof(double));
        for (int64_t k = 0; k < nel(t); k++)   // contiguous leafs; I32 ones (ids, positions) are read in place
            lv[l][k] = t->type == TG_TYPE_F32 ? ((const float *) t->data)[k] : 0.0;
    }
    bool ok = true;
    for (int i = 0; i < c->n_params; i++) {
        int li = -1;
        for (int l = 0; l < gf->n_leafs; l++) if (gf->leafs[l] == p[i]) li = l;
        if (!CHECK(li >= 0 && p[i]->grad != NULL, "%s: p%d has a gradient", c->what, i)) continue;
        double max_err = 0, max_num = 0;
        for (int64_t k = 0; k < nel(p[i]); k++) {
            const double x0 = lv[li][k], h = 1e-6 * fmax(1.0, fabs(x0));
            lv[li][k] = x0 + h;
            const double up = eval_loss(gf, lv, loss, &ok);
            lv[li][k] = x0 - h;
            const double dn = eval_loss(gf, lv, loss, &ok);
            lv[li][k] = x0;
            const double num = (up - dn) / (2 * h);
            const double ana = ((const float *) p[i]->grad->data)[k];
            max_err = fmax(max_err, fabs(num - ana));
            max_num = fmax(max_num, fabs(num));
        }
        if (!CHECK(ok, "%s: the float64 reference models every op", c->what)) break;
        const double tol = 1e-3 * fmax(1.0, max_num);
        CHECK(max_err <= tol, "%s: d loss / d p%d [%lld,%lld,%lld,%lld]: max |analytic - numeric| %.3g <= %.3g",
              c->what, i, (long long) p[i]->ne[0], (long long) p[i]->ne[1], (long long) p[i]->ne[2],
              (long long) p[i]->ne[3], max_err, tol);
    }
    for (int l = 0; l < gf->n_leafs; l++) free(lv[l]);
    tg_context_free(ctx);
}

// ---- the cases --------------------------------------------------------------

static struct tg_tensor * b_add(struct tg_context * x, struct tg_tensor ** p) { return tg_add(x, p[0], p[1]); }
static struct tg_tensor * b_add_bc(struct tg_context * x, struct tg_tensor ** p) { return tg_add(x, p[0], p[1]); }
static struct tg_tensor * b_sub(struct tg_context * x, struct tg_tensor ** p) { return tg_sub(x, p[0], p[1]); }
static struct tg_tensor * b_mul(struct tg_context * x, struct tg_tensor ** p) { return tg_mul(x, p[0], p[1]); }
static struct tg_tensor * b_div(struct tg_context * x, struct tg_tensor ** p) { return tg_div(x, p[0], p[1]); }
static struct tg_tensor * b_scale(struct tg_context * x, struct tg_tensor ** p) { return tg_scale(x, p[0], -1.7f); }
static struct tg_tensor * b_sqr(struct tg_context * x, struct tg_tensor ** p) { return tg_sqr(x, p[0]); }
static struct tg_tensor * b_sqrt(struct tg_context * x, struct tg_tensor ** p) { return tg_sqrt(x, p[0]); }
static struct tg_tensor * b_log(struct tg_context * x, struct tg_tensor ** p) { return tg_log(x, p[0]); }
static struct tg_tensor * b_neg(struct tg_context * x, struct tg_tensor ** p) { return tg_neg(x, p[0]); }
static struct tg_tensor * b_sum(struct tg_context * x, struct tg_tensor ** p) { return tg_sum(x, p[0]); }
static struct tg_tensor * b_sum_rows(struct tg_context * x, struct tg_tensor ** p) { return tg_sum_rows(x, p[0]); }
static struct tg_tensor * b_mean(struct tg_context * x, struct tg_tensor ** p) { return tg_mean(x, p[0]); }
static struct tg_tensor * b_repeat(struct tg_context * x, struct tg_tensor ** p) {
    struct tg_tensor * like = tg_new_tensor_2d(x, TG_TYPE_F32, 5, 4);
    return tg_repeat(x, p[0], like);
}
static struct tg_tensor * b_mul_mat(struct tg_context * x, struct tg_tensor ** p) { return tg_mul_mat(x, p[0], p[1]); }
static struct tg_tensor * b_views(struct tg_context * x, struct tg_tensor ** p) {   // transpose, permute, reshape, cont
    struct tg_tensor * t = tg_transpose(x, p[0]);                         // [3,4] viewed
    struct tg_tensor * m = tg_mul(x, tg_cont(x, t), p[1]);               // with a [3,1] broadcast
    struct tg_tensor * r = tg_reshape_3d(x, m, 3, 2, 2);
    return tg_permute(x, r, 1, 2, 0, 3);                                  // non-contiguous result
}
static struct tg_tensor * b_soft_max(struct tg_context * x, struct tg_tensor ** p) {
    struct tg_tensor * mask = tg_new_tensor_2d(x, TG_TYPE_F32, 7, 3);
    for (int64_t k = 0; k < 21; k++) ((float *) mask->data)[k] = (k % 7) > (k / 7) + 4 ? -INFINITY : (float) (k % 3) * -0.25f;
    return tg_soft_max_ext(x, p[0], mask, 0.7f, 0.0f);
}
static struct tg_tensor * b_ce(struct tg_context * x, struct tg_tensor ** p) {
    struct tg_tensor * lab = tg_new_tensor_2d(x, TG_TYPE_F32, 6, 4);
    for (int r = 0; r < 4; r++) {
        double s = 0;
        for (int c = 0; c < 6; c++) s += ((float *) lab->data)[r * 6 + c] = (float) urand();
        for (int c = 0; c < 6; c++) ((float *) lab->data)[r * 6 + c] /= (float) s;
    }
    return tg_cross_entropy_loss(x, p[0], lab);
}
static struct tg_tensor * b_mlp(struct tg_context * x, struct tg_tensor ** p) {   // a layer: x W + b, squared, shared input
    struct tg_tensor * h = tg_add(x, tg_mul_mat(x, p[0], p[1]), p[2]);           // [4,3] + [4,1]
    struct tg_tensor * y = tg_mul(x, tg_sqr(x, h), tg_scale(x, h, 0.5f));         // h used twice
    return tg_soft_max(x, y);
}

static struct tg_tensor * b_silu(struct tg_context * x, struct tg_tensor ** p) { return tg_silu(x, p[0]); }
static struct tg_tensor * b_rms_norm(struct tg_context * x, struct tg_tensor ** p) { return tg_rms_norm(x, p[0], 1e-5f); }
static struct tg_tensor * b_get_rows(struct tg_context * x, struct tg_tensor ** p) {
    struct tg_tensor * ids = tg_new_tensor_1d(x, TG_TYPE_I32, 5);
    const int32_t v[5] = { 3, 0, 3, 6, 1 };   // a repeated row: its gradient adds up
    memcpy(ids->data, v, sizeof(v));
    return tg_get_rows(x, p[0], ids);
}
static struct tg_tensor * pos_of(struct tg_context * x, int n) {
    struct tg_tensor * pos = tg_new_tensor_1d(x, TG_TYPE_I32, n);
    for (int i = 0; i < n; i++) ((int32_t *) pos->data)[i] = 3 + 5 * i;
    return pos;
}
static struct tg_tensor * b_rope(struct tg_context * x, struct tg_tensor ** p) {
    return tg_rope(x, p[0], pos_of(x, 3), 8, TG_ROPE_NORMAL, 10000.0f, 1.0f);
}
static struct tg_tensor * b_rope_neox(struct tg_context * x, struct tg_tensor ** p) {   // partial rotation
    return tg_rope(x, p[0], pos_of(x, 3), 6, TG_ROPE_NEOX, 500.0f, 0.5f);
}
static struct tg_tensor * b_swiglu(struct tg_context * x, struct tg_tensor ** p) { return tg_swiglu_split(x, p[0], p[1]); }
static struct tg_tensor * b_swiglu_halves(struct tg_context * x, struct tg_tensor ** p) { return tg_swiglu(x, p[0]); }
static struct tg_tensor * b_attn(struct tg_context * x, struct tg_tensor ** p) {   // batched products, softmax, as attention
    struct tg_tensor * kq = tg_mul_mat(x, p[1], p[0]);                       // k [4,5,2] . q [4,3,2] -> [5,3,2]
    struct tg_tensor * sm = tg_soft_max_ext(x, kq, NULL, 0.5f, 0.0f);
    struct tg_tensor * vt = tg_cont(x, tg_transpose(x, p[2]));               // v [4,5,2] -> [5,4,2]
    return tg_mul_mat(x, vt, sm);                                            // [4,3,2]
}

static struct tg_tensor * b_concat(struct tg_context * x, struct tg_tensor ** p) { return tg_concat(x, p[0], p[1], 1); }
static struct tg_tensor * b_out_prod(struct tg_context * x, struct tg_tensor ** p) { return tg_out_prod(x, p[0], p[1]); }
static struct tg_tensor * b_view(struct tg_context * x, struct tg_tensor ** p) {   // a 3x2 window from row 1, col 2
    return tg_view_2d(x, p[0], 3, 2, p[0]->nb[1], p[0]->nb[1] + 2 * sizeof(float));
}

static struct tg_tensor * b_relu(struct tg_context * x, struct tg_tensor ** p) { return tg_relu(x, p[0]); }
static struct tg_tensor * b_gelu(struct tg_context * x, struct tg_tensor ** p) { return tg_gelu(x, p[0]); }
static struct tg_tensor * b_norm(struct tg_context * x, struct tg_tensor ** p) { return tg_norm(x, p[0], 1e-5f); }
static struct tg_tensor * b_diag(struct tg_context * x, struct tg_tensor ** p) {   // masked, then a softmax
    return tg_soft_max(x, tg_diag_mask_inf(x, p[0], 1));
}

static const struct gcase cases[] = {
    { "relu [7,3] (no value at 0)",    1, { { 7, 3 } }, -1, 1, b_relu },
    { "gelu [7,3]",                    1, { { 7, 3 } }, -3, 3, b_gelu },
    { "norm [8,3]",                    1, { { 8, 3 } }, -1, 1, b_norm },
    { "diag_mask_inf [5,4] n_past 1, soft_max", 1, { { 5, 4 } }, -1, 1, b_diag },
    { "concat [4,2] + [4,3] along dim 1", 2, { { 4, 2 }, { 4, 3 } }, -1, 1, b_concat },
    { "out_prod [5,3] x [4,3]",        2, { { 5, 3 }, { 4, 3 } }, -1, 1, b_out_prod },
    { "view 3x2 window of [6,4]",      1, { { 6, 4 } }, -1, 1, b_view },
    { "silu [6,3]",                   1, { { 6, 3 } }, -3, 3, b_silu },
    { "rms_norm [8,3]",               1, { { 8, 3 } }, -1, 1, b_rms_norm },
    { "get_rows [4,7] by 5 ids (one twice)", 1, { { 4, 7 } }, -1, 1, b_get_rows },
    { "rope [8,2,3] normal",          1, { { 8, 2, 3 } }, -1, 1, b_rope },
    { "rope [8,2,3] neox, 6 of 8 dims", 1, { { 8, 2, 3 } }, -1, 1, b_rope_neox },
    { "swiglu split [5,3]",           2, { { 5, 3 }, { 5, 3 } }, -2, 2, b_swiglu },
    { "swiglu halves [10,3]",         1, { { 10, 3 } }, -2, 2, b_swiglu_halves },
    { "attention: batched mul_mat, soft_max, mul_mat", 3, { { 4, 3, 2 }, { 4, 5, 2 }, { 4, 5, 2 } }, -1, 1, b_attn },
    { "add [5,3] + [5,3]",            2, { { 5, 3 }, { 5, 3 } }, -1, 1, b_add },
    { "add [5,3] + [5,1] (broadcast)", 2, { { 5, 3 }, { 5, 1 } }, -1, 1, b_add_bc },
    { "add [5,3] + [1,3] (broadcast)", 2, { { 5, 3 }, { 1, 3 } }, -1, 1, b_add_bc },
    { "sub [4,3,2] - [4,1,2]",        2, { { 4, 3, 2 }, { 4, 1, 2 } }, -1, 1, b_sub },
    { "mul [5,3] * [5,1]",            2, { { 5, 3 }, { 5, 1 } }, -1, 1, b_mul },
    { "div [5,3] / [5,3]",            2, { { 5, 3 }, { 5, 3 } }, 0.5, 2, b_div },
    { "scale [6,2] by -1.7",          1, { { 6, 2 } }, -1, 1, b_scale },
    { "sqr [6,2]",                    1, { { 6, 2 } }, -1, 1, b_sqr },
    { "sqrt [6,2]",                   1, { { 6, 2 } }, 0.5, 2, b_sqrt },
    { "log [6,2]",                    1, { { 6, 2 } }, 0.5, 2, b_log },
    { "neg [6,2]",                    1, { { 6, 2 } }, -1, 1, b_neg },
    { "sum [4,3,2]",                  1, { { 4, 3, 2 } }, -1, 1, b_sum },
    { "sum_rows [4,3,2]",             1, { { 4, 3, 2 } }, -1, 1, b_sum_rows },
    { "mean [4,3]",                   1, { { 4, 3 } }, -1, 1, b_mean },
    { "repeat [5,1] -> [5,4]",        1, { { 5, 1 } }, -1, 1, b_repeat },
    { "mul_mat [6,4] x [6,3]",        2, { { 6, 4 }, { 6, 3 } }, -1, 1, b_mul_mat },
    { "transpose, cont, mul, reshape, permute", 2, { { 4, 3 }, { 3, 1 } }, -1, 1, b_views },
    { "soft_max_ext [7,3] scale 0.7, mask", 1, { { 7, 3 } }, -2, 2, b_soft_max },
    { "cross_entropy_loss [6,4]",     1, { { 6, 4 } }, -2, 2, b_ce },
    { "mul_mat + bias, sqr, mul, soft_max", 3, { { 5, 4 }, { 5, 3 }, { 4, 1 } }, -1, 1, b_mlp },
};

static void test_errors(void) {
    struct tg_context * ctx = tg_context_new((struct tg_context_params) { .mem_size = 1u << 20 });
    struct tg_tensor * a = tg_new_tensor_1d(ctx, TG_TYPE_F32, 4);
    tg_set_name(a, "a");
    tg_set_param(a);
    struct tg_tensor * s = tg_abs(ctx, a);   // no gradient (not differentiable at 0)
    tg_set_name(s, "act");
    struct tg_tensor * loss = tg_sum(ctx, s);
    struct tg_graph * gf = tg_graph_new(ctx, 16), * gb = tg_graph_new(ctx, 32);
    tg_graph_build_forward(gf, loss);
    enum tg_status st = tg_graph_build_backward(ctx, gf, gb, loss, NULL);
    CHECK(st == TG_ERR_UNSUPPORTED && strstr(tg_last_error(), "op ABS of 'act'") && strstr(tg_last_error(), "gradient of 'a'"),
          "an op without a gradient is named with the tensor that needed it: %s", tg_last_error());
    struct tg_tensor * b = tg_new_tensor_1d(ctx, TG_TYPE_F32, 4);   // no parameter
    struct tg_tensor * l2 = tg_sum(ctx, tg_sqr(ctx, b));
    struct tg_graph * gf2 = tg_graph_new(ctx, 16), * gb2 = tg_graph_new(ctx, 32);
    tg_graph_build_forward(gf2, l2);
    st = tg_graph_build_backward(ctx, gf2, gb2, l2, NULL);
    CHECK(st == TG_ERR_INVALID_ARG && strstr(tg_last_error(), "no tensor flagged"), "a loss without parameters: %s", tg_last_error());
    st = tg_graph_build_backward(ctx, gf2, gb2, b, NULL);
    CHECK(st != TG_OK, "a loss that is not a node of the forward graph: %s", tg_last_error());
    struct tg_backward_options o = { .second_order = true };
    st = tg_graph_build_backward(ctx, gf2, gb2, l2, &o);
    CHECK(st == TG_ERR_UNSUPPORTED, "second order: not supported yet (%s)", tg_last_error());
    tg_context_free(ctx);
}

// The optimizer steps: one SGD and one AdamW step against their formulas in
// float64, then AdamW fitting p to a target through the backward graph.
static void test_optimizers(void) {
    struct tg_context * ctx = tg_context_new((struct tg_context_params) { .mem_size = 8u << 20 });
    enum { N = 37 };
    struct tg_tensor * p = tg_new_tensor_1d(ctx, TG_TYPE_F32, N), * g = tg_new_tensor_1d(ctx, TG_TYPE_F32, N);
    struct tg_tensor * m = tg_new_tensor_1d(ctx, TG_TYPE_F32, N), * v = tg_new_tensor_1d(ctx, TG_TYPE_F32, N);
    struct tg_tensor * hs = tg_new_tensor_1d(ctx, TG_TYPE_F32, 2), * ha = tg_new_tensor_1d(ctx, TG_TYPE_F32, 7);
    double P[N], G[N], M[N], V[N];
    for (int i = 0; i < N; i++) {
        P[i] = ((float *) p->data)[i] = (float) (urand() * 2 - 1);
        G[i] = ((float *) g->data)[i] = (float) (urand() * 2 - 1);
        M[i] = ((float *) m->data)[i] = (float) (urand() * 0.1);
        V[i] = ((float *) v->data)[i] = (float) (urand() * 0.01);
    }
    const float lr = 0.05f, wd = 0.01f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    const int t = 3;
    const float c1 = 1.0f / (1.0f - powf(b1, t)), c2 = 1.0f / (1.0f - powf(b2, t));
    memcpy(hs->data, (float[]) { lr, wd }, 2 * sizeof(float));
    memcpy(ha->data, (float[]) { lr, b1, b2, eps, wd, c1, c2 }, 7 * sizeof(float));
    struct tg_graph * gs = tg_graph_new(ctx, 8);
    tg_graph_build_forward(gs, tg_opt_step_sgd(ctx, p, g, hs));
    bool ok = tg_cpu_graph_compute(g_pool, gs, NULL) == TG_OK;
    double err = 0;
    for (int i = 0; i < N; i++) {
        const double want = P[i] - lr * (G[i] + wd * P[i]);
        err = fmax(err, fabs(((float *) p->data)[i] - want));
        P[i] = ((float *) p->data)[i];
    }
    CHECK(ok && err < 1e-6, "SGD step: p -= lr (g + wd p), max error %.3g", err);
    struct tg_graph * ga = tg_graph_new(ctx, 8);
    tg_graph_build_forward(ga, tg_opt_step_adamw(ctx, p, g, m, v, ha));
    ok = tg_cpu_graph_compute(g_pool, ga, NULL) == TG_OK;
    err = 0;
    for (int i = 0; i < N; i++) {
        const double mm = b1 * M[i] + (1 - b1) * G[i], vv = b2 * V[i] + (1 - b2) * G[i] * G[i];
        const double want = P[i] - lr * (mm * c1 / (sqrt(vv * c2) + eps) + wd * P[i]);
        err = fmax(err, fabs(((float *) p->data)[i] - want) + fabs(((float *) m->data)[i] - mm) + fabs(((float *) v->data)[i] - vv));
    }
    CHECK(ok && err < 1e-5, "AdamW step (m, v, bias correction, decoupled weight decay): max error %.3g", err);
    CHECK(tg_opt_step_adamw(ctx, p, g, m, v, hs) == NULL && strstr(tg_last_error(), "7"), "AdamW with 2 hyper-parameters: %s",
          tg_last_error());

    // fit: loss = sum((q - target)^2), 300 AdamW steps
    struct tg_tensor * q = tg_new_tensor_1d(ctx, TG_TYPE_F32, N), * tgt = tg_new_tensor_1d(ctx, TG_TYPE_F32, N);
    tg_set_name(q, "q");
    tg_set_param(q);
    memset(m->data, 0, N * sizeof(float));
    memset(v->data, 0, N * sizeof(float));
    for (int i = 0; i < N; i++) { ((float *) q->data)[i] = 0.0f; ((float *) tgt->data)[i] = (float) (urand() * 4 - 2); }
    struct tg_tensor * loss = tg_sum(ctx, tg_sqr(ctx, tg_sub(ctx, q, tgt)));
    tg_set_name(loss, "loss");
    struct tg_graph * gf = tg_graph_new(ctx, 16), * gb = tg_graph_new(ctx, 64), * go = tg_graph_new(ctx, 8);
    tg_graph_build_forward(gf, loss);
    ok = tg_graph_build_backward(ctx, gf, gb, loss, NULL) == TG_OK && q->grad;
    if (ok) tg_graph_build_forward(go, tg_opt_step_adamw(ctx, q, q->grad, m, v, ha));
    double first = NAN, last = NAN;
    for (int step = 1; ok && step <= 300; step++) {
        memcpy(ha->data, (float[]) { 0.05f, b1, b2, eps, 0.0f, 1.0f / (1.0f - powf(b1, step)), 1.0f / (1.0f - powf(b2, step)) },
               7 * sizeof(float));
        ok = tg_cpu_graph_compute(g_pool, gb, NULL) == TG_OK && tg_cpu_graph_compute(g_pool, go, NULL) == TG_OK;
        if (step == 1) first = *(float *) loss->data;
        last = *(float *) loss->data;
    }
    CHECK(ok && last < 1e-3 * first, "AdamW through the backward graph: loss %.4g -> %.3g in 300 steps", first, last);
    tg_context_free(ctx);
}

int main(void) {
    g_pool = tg_cpu_pool_new(2);
    test_optimizers();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) run_case(&cases[i]);
    test_errors();
    tg_cpu_pool_free(g_pool);
    return tg_check_finish("test_grad");
}
