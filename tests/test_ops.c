// test_ops.c - every CPU op against a float64 reference written here.
//
// Inputs are random; sources come contiguous, permuted, transposed or as views
// with offsets; binary ops broadcast. Each check prints the op, types, shapes
// and layouts, the NMSE against the reference and its threshold. The whole
// suite runs at the detected SIMD level, then capped to AVX, then scalar; the
// AVX and scalar outputs are also compared with the first run's.
#include "check.h"
#include "cpu/cpu-impl.h"
#include "tg/backend.h"
#include "tg/cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- random numbers ---------------------------------------------------------------

static uint64_t g_rng;
static double urand(void) {
    g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
    return (double) (g_rng >> 11) / 9007199254740992.0;
}
static float frand(double lo, double hi) { return (float) (lo + (hi - lo) * urand()); }

// ---- run state ------------------------------------------------------------------------

static struct tg_cpu_pool * g_pool;
static const char * g_level = "";   // "avx512", "avx", "scalar"
static int g_run;                   // 0 = first run (outputs saved), then compared
static int g_check;                 // check index within the run
#define MAX_SAVED 2048
static double * g_saved[MAX_SAVED];
static int64_t g_saved_n[MAX_SAVED];

static struct tg_context * new_ctx(void) {
    struct tg_context_params p = { .mem_size = 16u << 20, .mem_buffer = NULL, .no_alloc = false };
    struct tg_context * ctx = tg_context_new(p);
    if (!ctx) { fprintf(stderr, "tg_context_new: %s\n", tg_last_error()); exit(1); }
    return ctx;
}

// ---- element access as double (any type, any layout) -----------------------------------

static double getv(const struct tg_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const char * row = (const char *) t->data + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
    const struct tg_type_traits * tr = tg_type_traits(t->type);
    if (tr->is_quantized) {
        float blk[32];
        tr->to_float(row + (i0 / tr->blck_size) * tr->type_size, blk, tr->blck_size);
        return blk[i0 % tr->blck_size];
    }
    const char * p = row + i0 * t->nb[0];
    switch (t->type) {
        case TG_TYPE_F32:  return *(const float *) p;
        case TG_TYPE_F16:  return tg_fp16_to_fp32(*(const tg_fp16_t *) p);
        case TG_TYPE_BF16: return tg_bf16_to_fp32(*(const tg_bf16_t *) p);
        case TG_TYPE_I32:  return *(const int32_t *) p;
        case TG_TYPE_I64:  return (double) *(const int64_t *) p;
        case TG_TYPE_F64:  return *(const double *) p;
        default:           return NAN;
    }
}

static void setv(struct tg_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, double v) {
    char * p = (char *) t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
    switch (t->type) {
        case TG_TYPE_F32:  *(float *) p = (float) v; break;
        case TG_TYPE_F16:  *(tg_fp16_t *) p = tg_fp32_to_fp16((float) v); break;
        case TG_TYPE_BF16: *(tg_bf16_t *) p = tg_fp32_to_bf16((float) v); break;
        case TG_TYPE_I32:  *(int32_t *) p = (int32_t) v; break;
        case TG_TYPE_I64:  *(int64_t *) p = (int64_t) v; break;
        case TG_TYPE_F64:  *(double *) p = v; break;
        default: break;
    }
}

#define FOR4(t) \
    for (int64_t i3 = 0; i3 < (t)->ne[3]; i3++) for (int64_t i2 = 0; i2 < (t)->ne[2]; i2++) \
    for (int64_t i1 = 0; i1 < (t)->ne[1]; i1++) for (int64_t i0 = 0; i0 < (t)->ne[0]; i0++)
#define LIN(t) (((i3 * (t)->ne[2] + i2) * (t)->ne[1] + i1) * (t)->ne[0] + i0)

// Fills a contiguous tensor with uniform values in [lo, hi) (quantized: rows quantized).
static void fill(struct tg_tensor * t, double lo, double hi) {
    const struct tg_type_traits * tr = tg_type_traits(t->type);
    if (tr->is_quantized) {
        float * row = malloc((size_t) t->ne[0] * sizeof(float));
        for (int64_t r = 0; r < tg_nrows(t); r++) {
            for (int64_t i = 0; i < t->ne[0]; i++) row[i] = frand(lo, hi);
            tr->from_float(row, (char *) t->data + r * t->nb[1], t->ne[0]);
        }
        free(row);
        return;
    }
    FOR4(t) setv(t, i0, i1, i2, i3, frand(lo, hi));
}

// ---- inputs in several layouts ---------------------------------------------------------

enum layout { L_CONTIG, L_PERM, L_TRANSP, L_VIEW };
static const char * layout_name[] = { "", " perm", " transp", " view" };

// A tensor of shape ne filled in [lo, hi), laid out as asked (quantized
// types keep dim 0 dense: their permutation swaps dims 1 and 2).
static struct tg_tensor * input(struct tg_context * ctx, enum tg_type type, const int64_t * ne, enum layout l,
                                double lo, double hi) {
    const bool q = tg_type_traits(type)->is_quantized;
    if (q && l == L_TRANSP) l = L_PERM;
    struct tg_tensor * base, * t;
    switch (l) {
        case L_PERM:
            if (q) {
                base = tg_new_tensor_4d(ctx, type, ne[0], ne[2], ne[1], ne[3]);
                fill(base, lo, hi);
                t = tg_permute(ctx, base, 0, 2, 1, 3);
            } else {
                base = tg_new_tensor_4d(ctx, type, ne[2], ne[0], ne[1], ne[3]);
                fill(base, lo, hi);
                t = tg_permute(ctx, base, 2, 0, 1, 3);
            }
            break;
        case L_TRANSP:
            base = tg_new_tensor_4d(ctx, type, ne[1], ne[0], ne[2], ne[3]);
            fill(base, lo, hi);
            t = tg_transpose(ctx, base);
            break;
        case L_VIEW: {
            const int64_t pad = q ? 32 : 3;
            base = tg_new_tensor_4d(ctx, type, ne[0] + pad, ne[1] + 2, ne[2], ne[3]);
            fill(base, lo, hi);
            size_t off = base->nb[1] + (q ? tg_type_size(type) : 2 * tg_type_size(type));
            t = tg_view_4d(ctx, base, ne[0], ne[1], ne[2], ne[3], base->nb[1], base->nb[2], base->nb[3], off);
            break;
        }
        default:
            t = tg_new_tensor_4d(ctx, type, ne[0], ne[1], ne[2], ne[3]);
            fill(t, lo, hi);
            break;
    }
    if (!t) { fprintf(stderr, "input: %s\n", tg_last_error()); exit(1); }
    t->user = (void *) layout_name[l];
    return t;
}

// "f32 [37,5,3,1] perm" into buf.
static const char * desc(const struct tg_tensor * t, char * buf, size_t n) {
    snprintf(buf, n, "%s [%lld,%lld,%lld,%lld]%s", tg_type_name(t->type), (long long) t->ne[0], (long long) t->ne[1],
             (long long) t->ne[2], (long long) t->ne[3], t->user ? (const char *) t->user : "");
    return buf;
}

// ---- compute and compare ---------------------------------------------------------------

// ---- another backend (--backend NAME: the whole suite on e.g. CUDA0) ----------------------------

static struct tg_backend * g_be;   // NULL: the CPU pool
static int g_skipped;              // cases whose op the backend does not support

#define MAX_MIRROR 256
struct mirror { struct tg_tensor * t; void * data; struct tg_buffer * buffer; };

static void * dev_addr(struct tg_tensor * t, struct tg_tensor ** roots, char ** raddr, int nr) {
    if (t->view_src) return (char *) dev_addr(t->view_src, roots, raddr, nr) + t->view_offs;
    for (int i = 0; i < nr; i++) if (roots[i] == t) return raddr[i];
    return NULL;
}

// Computes g on g_be: every tensor's memory (roots of views) copied into one
// buffer of the backend, the graph run there, every root copied back; the
// tensors get their host memory back. Returns the status (1: skipped).
static int compute_on_backend(struct tg_graph * g, const char * what) {
    for (int i = 0; i < g->n_nodes; i++) {
        if (!tg_backend_supports_op(g_be, g->nodes[i])) {
            printf("skip [%s] %s: %s does not compute %s\n", g_level, what, tg_backend_name(g_be), tg_op_name(g->nodes[i]->op));
            g_skipped++;
            return 1;
        }
    }
    struct mirror mm[MAX_MIRROR];
    struct tg_tensor * roots[MAX_MIRROR];
    char * raddr[MAX_MIRROR];
    int nm = 0, nr = 0;
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? g->n_leafs : g->n_nodes;
        for (int i = 0; i < n; i++) {
            struct tg_tensor * t = pass ? g->leafs[i] : g->nodes[i];
            struct tg_tensor * list[1 + TG_MAX_SRC];
            int nl = 0;
            list[nl++] = t;
            for (int j = 0; j < TG_MAX_SRC; j++) if (t->src[j]) list[nl++] = t->src[j];
            for (int k = 0; k < nl; k++) {
                struct tg_tensor * u = list[k];
                for (struct tg_tensor * v = u; v; v = v->view_src) {
                    bool seen = false;
                    for (int q = 0; q < nm && !seen; q++) seen = mm[q].t == v;
                    if (seen || nm == MAX_MIRROR) continue;
                    mm[nm++] = (struct mirror) { v, v->data, v->buffer };
                    if (!v->view_src && nr < MAX_MIRROR) roots[nr++] = v;
                }
            }
        }
    }
    struct tg_buffer_type * buft = tg_backend_get_default_buffer_type(g_be);
    size_t align = tg_buft_get_alignment(buft), size = 0;
    for (int i = 0; i < nr; i++) size = (size + align - 1) / align * align + tg_nbytes(roots[i]);
    struct tg_buffer * buf = tg_buft_alloc_buffer(buft, size ? size : 1);
    if (!buf) { CHECK(false, "[%s] %s: device buffer: %s", g_level, what, tg_last_error()); return 2; }
    char * base = tg_buffer_get_base(buf);
    size_t off = 0;
    for (int i = 0; i < nr; i++) {
        off = (off + align - 1) / align * align;
        raddr[i] = base + off;
        off += tg_nbytes(roots[i]);
    }
    for (int i = 0; i < nm; i++) { mm[i].t->data = dev_addr(mm[i].t, roots, raddr, nr); mm[i].t->buffer = buf; }
    for (int i = 0; i < nr; i++) {
        void * host = NULL;
        for (int q = 0; q < nm; q++) if (mm[q].t == roots[i]) host = mm[q].data;
        buf->iface.set_tensor(buf, roots[i], host, 0, tg_nbytes(roots[i]));
    }
    enum tg_status st = tg_backend_graph_compute(g_be, g);
    if (st != TG_OK) CHECK(false, "[%s] %s computes: %s", g_level, what, tg_last_error());
    for (int i = 0; i < nr; i++) {
        void * host = NULL;
        for (int q = 0; q < nm; q++) if (mm[q].t == roots[i]) host = mm[q].data;
        buf->iface.get_tensor(buf, roots[i], host, 0, tg_nbytes(roots[i]));
    }
    for (int i = 0; i < nm; i++) { mm[i].t->data = mm[i].data; mm[i].t->buffer = mm[i].buffer; }
    tg_buffer_free(buf);
    return st == TG_OK ? 0 : 2;
}

static bool compute(struct tg_context * ctx, struct tg_tensor * out, const char * what) {
    struct tg_graph * g = tg_graph_new(ctx, 64);
    enum tg_status st = g ? tg_graph_build_forward(g, out) : tg_last_status();
    if (st == TG_OK && g_be) return compute_on_backend(g, what) == 0;
    if (st == TG_OK) st = tg_cpu_graph_compute(g_pool, g, NULL);
    if (st != TG_OK) CHECK(false, "[%s] %s computes: %s", g_level, what, tg_last_error());
    return st == TG_OK;
}

// NMSE of out (logical order) against ref; infinities must match exactly.
static double nmse_of(const struct tg_tensor * out, const double * ref, double * got) {
    double num = 0, den = 0;
    bool inf_bad = false;
    FOR4(out) {
        double o = getv(out, i0, i1, i2, i3), r = ref[LIN(out)];
        if (got) got[LIN(out)] = o;
        if (isinf(r) || isinf(o)) { inf_bad |= o != r; continue; }
        num += (o - r) * (o - r);
        den += r * r;
    }
    if (inf_bad || isnan(num)) return INFINITY;
    return num / (den > 0 ? den : 1.0);
}

static void check_out(const struct tg_tensor * out, const double * ref, double thr, const char * what) {
    const int64_t n = tg_nelements(out);
    double * got = malloc((size_t) n * sizeof(double));
    double e = nmse_of(out, ref, got);
    CHECK(e <= thr, "[%s] %s nmse=%.1e <= %.0e", g_level, what, e, thr);
    int idx = g_check++;
    if (idx >= MAX_SAVED) { free(got); return; }
    if (g_run == 0) {
        free(g_saved[idx]);
        g_saved[idx] = got;
        g_saved_n[idx] = n;
        return;
    }
    if (g_saved[idx] && g_saved_n[idx] == n) {
        double num = 0, den = 0;
        bool bad = false;
        for (int64_t i = 0; i < n; i++) {
            double a = got[i], b = g_saved[idx][i];
            if (isinf(a) || isinf(b)) { bad |= a != b; continue; }
            num += (a - b) * (a - b);
            den += b * b;
        }
        double e2 = bad ? INFINITY : num / (den > 0 ? den : 1.0);
        CHECK(e2 <= thr, "[%s vs first run] %s nmse=%.1e <= %.0e", g_level, what, e2, thr);
    }
    free(got);
}

static double * ref_alloc(const struct tg_tensor * out) {
    return calloc((size_t) tg_nelements(out), sizeof(double));
}

// Threshold for results stored in type t (f32 results computed in float).
static double thr_for(enum tg_type t) {
    switch (t) {
        case TG_TYPE_F16:  return 1e-6;
        case TG_TYPE_BF16: return 1e-4;
        case TG_TYPE_Q8_0: return 1e-4;
        case TG_TYPE_Q4_0: return 2e-2;
        default:           return 1e-12;
    }
}

// ---- elementwise -----------------------------------------------------------------------

typedef struct tg_tensor * (*un_ctor)(struct tg_context *, struct tg_tensor *);

static double ref_un(enum tg_op op, double x) {
    switch (op) {
        case TG_OP_SQR:  return x * x;
        case TG_OP_SQRT: return sqrt(x);
        case TG_OP_LOG:  return log(x);
        case TG_OP_NEG:  return -x;
        case TG_OP_ABS:  return fabs(x);
        case TG_OP_SILU: return x / (1.0 + exp(-x));
        case TG_OP_GELU: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
        default:         return x > 0 ? x : 0;
    }
}

static void case_unary(void) {
    static const struct { enum tg_op op; const char * name; un_ctor fn, fn_in; double lo, hi; } ops[] = {
        { TG_OP_SQR,  "sqr",  tg_sqr,  tg_sqr_inplace,  -2, 2 },  { TG_OP_SQRT, "sqrt", tg_sqrt, tg_sqrt_inplace, 0.1, 4 },
        { TG_OP_LOG,  "log",  tg_log,  tg_log_inplace,  0.1, 4 }, { TG_OP_NEG,  "neg",  tg_neg,  tg_neg_inplace,  -2, 2 },
        { TG_OP_ABS,  "abs",  tg_abs,  tg_abs_inplace,  -2, 2 },  { TG_OP_SILU, "silu", tg_silu, tg_silu_inplace, -12, 12 },
        { TG_OP_GELU, "gelu", tg_gelu, tg_gelu_inplace, -8, 8 },  { TG_OP_RELU, "relu", tg_relu, tg_relu_inplace, -2, 2 },
    };
    static const int64_t big[4] = { 4099, 3, 1, 1 }, small[4] = { 33, 5, 3, 2 };
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        for (int v = 0; v < 4; v++) {
            enum layout l = v == 1 ? L_PERM : v == 2 ? L_VIEW : L_CONTIG;
            bool inplace = v == 3;
            struct tg_context * ctx = new_ctx();
            struct tg_tensor * a = input(ctx, TG_TYPE_F32, v == 0 ? big : small, l, ops[k].lo, ops[k].hi);
            struct tg_tensor * out = (inplace ? ops[k].fn_in : ops[k].fn)(ctx, a);
            double * ref = ref_alloc(out);
            FOR4(a) ref[LIN(a)] = ref_un(ops[k].op, getv(a, i0, i1, i2, i3));
            char what[160], da[64];
            snprintf(what, sizeof(what), "%s%s %s", ops[k].name, inplace ? "_inplace" : "", desc(a, da, sizeof(da)));
            if (compute(ctx, out, what)) check_out(out, ref, 1e-12, what);
            free(ref);
            tg_context_free(ctx);
        }
    }
}

typedef struct tg_tensor * (*bin_ctor)(struct tg_context *, struct tg_tensor *, struct tg_tensor *);

static double ref_bin(enum tg_op op, double x, double y) {
    switch (op) {
        case TG_OP_ADD: return x + y;
        case TG_OP_SUB: return x - y;
        case TG_OP_MUL: return x * y;
        default:        return x / y;
    }
}

static void one_binary(enum tg_op op, const char * name, bin_ctor fn, enum tg_type ta, enum tg_type tb,
                       const int64_t * sa, const int64_t * sb, enum layout la, enum layout lb) {
    struct tg_context * ctx = new_ctx();
    struct tg_tensor * a = input(ctx, ta, sa, la, -2, 2);
    struct tg_tensor * b = op == TG_OP_DIV ? input(ctx, tb, sb, lb, 0.5, 2) : input(ctx, tb, sb, lb, -2, 2);
    struct tg_tensor * out = fn(ctx, a, b);
    char what[200], da[64], db[64];
    snprintf(what, sizeof(what), "%s %s %s", name, desc(a, da, sizeof(da)), desc(b, db, sizeof(db)));
    if (!out) { CHECK(false, "%s constructed: %s", what, tg_last_error()); tg_context_free(ctx); return; }
    double * ref = ref_alloc(out);
    FOR4(a) ref[LIN(a)] = ref_bin(op, getv(a, i0, i1, i2, i3),
                                  getv(b, i0 % b->ne[0], i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]));
    if (compute(ctx, out, what)) check_out(out, ref, thr_for(out->type), what);
    free(ref);
    tg_context_free(ctx);
}

static void case_binary(void) {
    static const struct { enum tg_op op; const char * name; bin_ctor fn; } ops[] = {
        { TG_OP_ADD, "add", tg_add }, { TG_OP_SUB, "sub", tg_sub }, { TG_OP_MUL, "mul", tg_mul }, { TG_OP_DIV, "div", tg_div },
    };
    static const int64_t sa[4] = { 37, 5, 3, 2 };
    static const int64_t sbs[4][4] = { { 37, 5, 3, 2 }, { 37, 1, 3, 1 }, { 1, 5, 1, 2 }, { 37, 5, 1, 1 } };
    static const enum layout lay[3][2] = { { L_CONTIG, L_CONTIG }, { L_PERM, L_TRANSP }, { L_VIEW, L_PERM } };
    for (int k = 0; k < 4; k++) {
        for (int s = 0; s < 4; s++) {
            for (int l = 0; l < 3; l++) {
                one_binary(ops[k].op, ops[k].name, ops[k].fn, TG_TYPE_F32, TG_TYPE_F32, sa, sbs[s], lay[l][0], lay[l][1]);
            }
        }
        static const int64_t flat[4] = { 5000, 3, 1, 1 };
        one_binary(ops[k].op, ops[k].name, ops[k].fn, TG_TYPE_F32, TG_TYPE_F32, flat, flat, L_CONTIG, L_CONTIG);
        one_binary(ops[k].op, ops[k].name, ops[k].fn, TG_TYPE_F16, TG_TYPE_F32, sa, sbs[1], L_CONTIG, L_CONTIG);
        one_binary(ops[k].op, ops[k].name, ops[k].fn, TG_TYPE_F16, TG_TYPE_F16, sa, sbs[2], L_PERM, L_CONTIG);
        one_binary(ops[k].op, ops[k].name, ops[k].fn, TG_TYPE_BF16, TG_TYPE_F32, sa, sbs[0], L_VIEW, L_TRANSP);
    }
    one_binary(TG_OP_ADD, "add_inplace", tg_add_inplace, TG_TYPE_F32, TG_TYPE_F32, sa, sbs[1], L_CONTIG, L_PERM);
    one_binary(TG_OP_MUL, "mul_inplace", tg_mul_inplace, TG_TYPE_F32, TG_TYPE_F32, sa, sbs[3], L_CONTIG, L_CONTIG);
}

static void case_scale(void) {
    static const int64_t big[4] = { 4099, 3, 1, 1 }, small[4] = { 33, 5, 3, 2 };
    for (int v = 0; v < 4; v++) {
        enum layout l = v == 1 ? L_PERM : v == 2 ? L_VIEW : L_CONTIG;
        struct tg_context * ctx = new_ctx();
        struct tg_tensor * a = input(ctx, TG_TYPE_F32, v == 0 ? big : small, l, -2, 2);
        struct tg_tensor * out = v == 3 ? tg_scale_inplace(ctx, a, 0.37f) : tg_scale(ctx, a, 0.37f);
        double * ref = ref_alloc(out);
        FOR4(a) ref[LIN(a)] = getv(a, i0, i1, i2, i3) * (double) 0.37f;
        char what[160], da[64];
        snprintf(what, sizeof(what), "scale%s %s s=0.37", v == 3 ? "_inplace" : "", desc(a, da, sizeof(da)));
        if (compute(ctx, out, what)) check_out(out, ref, 1e-12, what);
        free(ref);
        tg_context_free(ctx);
    }
}

// ---- reductions ------------------------------------------------------------------------------

static void case_reduce(void) {
    static const int64_t big[4] = { 4099, 3, 1, 1 }, small[4] = { 33, 5, 3, 2 };
    static const char * names[3] = { "sum", "sum_rows", "mean" };
    for (int k = 0; k < 3; k++) {
        for (int v = 0; v < 3; v++) {
            enum layout l = v == 1 ? L_PERM : v == 2 ? L_VIEW : L_CONTIG;
            struct tg_context * ctx = new_ctx();
            struct tg_tensor * a = input(ctx, TG_TYPE_F32, v == 0 ? big : small, l, -1, 2);
            struct tg_tensor * out = k == 0 ? tg_sum(ctx, a) : k == 1 ? tg_sum_rows(ctx, a) : tg_mean(ctx, a);
            double * ref = ref_alloc(out);
            FOR4(a) {
                double x = getv(a, i0, i1, i2, i3);
                if (k == 0) ref[0] += x;
                else ref[(i3 * a->ne[2] + i2) * a->ne[1] + i1] += k == 2 ? x / (double) a->ne[0] : x;
            }
            char what[160], da[64];
            snprintf(what, sizeof(what), "%s %s", names[k], desc(a, da, sizeof(da)));
            if (compute(ctx, out, what)) check_out(out, ref, 1e-12, what);
            free(ref);
            tg_context_free(ctx);
        }
    }
    for (int v = 0; v < 2; v++) {
        static const int64_t s[4] = { 37, 11, 1, 1 };
        struct tg_context * ctx = new_ctx();
        struct tg_tensor * a = input(ctx, TG_TYPE_F32, s, v ? L_TRANSP : L_CONTIG, -1, 1);
        struct tg_tensor * out = tg_argmax(ctx, a);
        double * ref = ref_alloc(out);
        for (int64_t r = 0; r < a->ne[1]; r++) {
            int64_t best = 0;
            for (int64_t i = 1; i < a->ne[0]; i++) if (getv(a, i, r, 0, 0) > getv(a, best, r, 0, 0)) best = i;
            ref[r] = (double) best;
        }
        char what[160], da[64];
        snprintf(what, sizeof(what), "argmax %s -> i32", desc(a, da, sizeof(da)));
        if (compute(ctx, out, what)) check_out(out, ref, 0, what);
        free(ref);
        tg_context_free(ctx);
    }
}

// ---- repeat, concat -----------------------------------------------------------------------------

static void case_repeat_concat(void) {
    static const enum tg_type types[3] = { TG_TYPE_F32, TG_TYPE_F16, TG_TYPE_I32 };
    for (int t = 0; t < 3; t++) {
        for (int v = 0; v < 2; v++) {
            static const int64_t sa[4] = { 5, 2, 3, 1 };
            struct tg_context * ctx = new_ctx();
            struct tg_tensor * a = input(ctx, types[t], sa, v ? L_PERM : L_CONTIG, -100, 100);
            struct tg_tensor * shape = tg_new_tensor_4d(ctx, types[t], 10, 4, 3, 2);
            struct tg_tensor * out = tg_repeat(ctx, a, shape);
            double * ref = ref_alloc(out);
            FOR4(out) ref[LIN(out)] = getv(a, i0 % a->ne[0], i1 % a->ne[1], i2 % a->ne[2], i3 % a->ne[3]);
            char what[160], da[64];
            snprintf(what, sizeof(what), "repeat %s -> [10,4,3,2]", desc(a, da, sizeof(da)));
            if (compute(ctx, out, what)) check_out(out, ref, 0, what);
            free(ref);
            tg_context_free(ctx);
        }
    }
    for (int dim = 0; dim < 4; dim++) {
        for (int v = 0; v < 3; v++) {
            int64_t sa[4] = { 6, 5, 3, 2 }, sb[4] = { 6, 5, 3, 2 };
            sb[dim] = 4;
            enum tg_type type = v == 2 ? TG_TYPE_F16 : TG_TYPE_F32;
            struct tg_context * ctx = new_ctx();
            struct tg_tensor * a = input(ctx, type, sa, v == 1 ? L_PERM : L_CONTIG, -1, 1);
            struct tg_tensor * b = input(ctx, type, sb, v == 1 ? L_VIEW : L_CONTIG, -1, 1);
            struct tg_tensor * out = tg_concat(ctx, a, b, dim);
            double * ref = ref_alloc(out);
            FOR4(out) {
                int64_t j[4] = { i0, i1, i2, i3 };
                const struct tg_tensor * s = a;
                if (j[dim] >= a->ne[dim]) { s = b; j[dim] -= a->ne[dim]; }
                ref[LIN(out)] = getv(s, j[0], j[1], j[2], j[3]);
            }
            char what[200], da[64], db[64];
            snprintf(what, sizeof(what), "concat dim=%d %s %s", dim, desc(a, da, sizeof(da)), desc(b, db, sizeof(db)));
            if (compute(ctx, out, what)) check_out(out, ref, 0, what);
            free(ref);
            tg_context_free(ctx);
        }
    }
}
// ---- copies and rows ------------------------------------------------------------------------

static const enum tg_type g_store_types[5] = { TG_TYPE_F32, TG_TYPE_F16, TG_TYPE_BF16, TG_TYPE_Q8_0, TG_TYPE_Q4_0 };

static void one_cpy(enum tg_type ts, enum tg_type td, enum layout l, const int64_t * ss, const int64_t * sd, int kind) {
    struct tg_context * ctx = new_ctx();
    struct tg_tensor * s = input(ctx, ts, ss, l, -2, 2);
    struct tg_tensor * out;
    const char * name;
    if (kind == 0) { out = tg_cont(ctx, s); name = "cont"; }
    else if (kind == 1) { out = tg_dup(ctx, s); name = "dup"; }
    else { out = tg_cpy(ctx, s, tg_new_tensor_4d(ctx, td, sd[0], sd[1], sd[2], sd[3])); name = "cpy"; }
    char what[200], da[64], db[64];
    snprintf(what, sizeof(what), "%s %s -> %s", name, desc(s, da, sizeof(da)), out ? desc(out, db, sizeof(db)) : "?");
    if (!out) { CHECK(false, "%s constructed: %s", what, tg_last_error()); tg_context_free(ctx); return; }
    double * ref = ref_alloc(out);
    FOR4(s) ref[LIN(s)] = getv(s, i0, i1, i2, i3);
    double thr = ts == out->type ? 0 : thr_for(out->type);
    if (compute(ctx, out, what)) check_out(out, ref, thr, what);
    free(ref);
    tg_context_free(ctx);
}

static void case_copy(void) {
    static const int64_t sh[4] = { 64, 6, 3, 1 }, sh2[4] = { 64, 6, 2, 1 }, sh2d[4] = { 32, 24, 1, 1 };
    for (int a = 0; a < 5; a++) {
        one_cpy(g_store_types[a], g_store_types[a], L_PERM, sh, sh, 0);
        one_cpy(g_store_types[a], g_store_types[a], L_VIEW, sh, sh, 0);
        if (a < 3) one_cpy(g_store_types[a], g_store_types[a], L_TRANSP, sh, sh, 1);
        for (int b = 0; b < 5; b++) {
            one_cpy(g_store_types[a], g_store_types[b], L_CONTIG, sh, sh, 2);
            one_cpy(g_store_types[a], g_store_types[b], a < 3 ? L_TRANSP : L_PERM, sh, sh, 2);
            if (b == 0 || b == 1 || b == 3) {
                one_cpy(g_store_types[a], g_store_types[b], L_CONTIG, sh2, sh2d, 2);   // reshaping copy
                if (a < 3) one_cpy(g_store_types[a], g_store_types[b], L_PERM, sh2, sh2d, 2);
            }
        }
    }
}

// Copies into strided destinations (a KV-cache-like view with padded rows, or
// a transposed view), converting; only the view's elements are compared.
static void case_cpy_into_views(void) {
    static const int64_t sh[4] = { 64, 6, 3, 1 };
    for (int a = 0; a < 3; a++) {
        for (int b = 0; b < 5; b++) {
            for (int v = 0; v < 2; v++) {
                const enum tg_type ts = g_store_types[a], td = g_store_types[b];
                const bool q = tg_type_traits(td)->is_quantized;
                if (q && v == 1) continue;   // quantized rows cannot be transposed
                struct tg_context * ctx = new_ctx();
                struct tg_tensor * s = input(ctx, ts, sh, v ? L_PERM : L_CONTIG, -2, 2);
                struct tg_tensor * dst;
                if (v == 0) {
                    struct tg_tensor * big = input(ctx, td, (const int64_t[4]) { 96, 8, 3, 1 }, L_CONTIG, -1, 1);
                    dst = tg_view_4d(ctx, big, 64, 6, 3, 1, big->nb[1], big->nb[2], big->nb[3], big->nb[1] + (q ? tg_type_size(td) : 0));
                    dst->user = (void *) " view";
                } else {
                    struct tg_tensor * big = input(ctx, td, (const int64_t[4]) { 6, 64, 3, 1 }, L_CONTIG, -1, 1);
                    dst = tg_transpose(ctx, big);
                    dst->user = (void *) " transp";
                }
                struct tg_tensor * out = tg_cpy(ctx, s, dst);
                char what[200], da[64], db[64];
                snprintf(what, sizeof(what), "cpy %s -> %s", desc(s, da, sizeof(da)), desc(dst, db, sizeof(db)));
                double * ref = ref_alloc(s);
                FOR4(s) ref[LIN(s)] = getv(s, i0, i1, i2, i3);
                if (compute(ctx, out, what)) check_out(dst, ref, ts == td ? 0 : thr_for(td), what);
                free(ref);
                tg_context_free(ctx);
            }
        }
    }
}

// Rows of one or two elements (a token's V column written into a transposed
// V cache: [T, n_embd] views of the cache, T = 1 when generating), from a
// transposed and from a contiguous source, into F32 and F16.
static void case_cpy_short_rows(void) {
    for (int b = 0; b < 2; b++) {
        for (int n0 = 1; n0 <= 2; n0++) {
            for (int v = 0; v < 2; v++) {
                const enum tg_type td = b ? TG_TYPE_F16 : TG_TYPE_F32;
                const int64_t sh[4] = { n0, 200, 3, 1 };   // 200 rows a thread: past the 64-row batches of the f16 store
                struct tg_context * ctx = new_ctx();
                struct tg_tensor * s = input(ctx, TG_TYPE_F32, sh, v ? L_TRANSP : L_CONTIG, -2, 2);
                struct tg_tensor * big = input(ctx, td, (const int64_t[4]) { 200, n0 + 5, 3, 1 }, L_CONTIG, -1, 1);
                // rows 2.. of big, transposed: element k of a row n_embd-ish apart
                struct tg_tensor * part = tg_view_3d(ctx, big, 200, n0, 3, big->nb[1], big->nb[2], 2 * big->nb[1]);
                struct tg_tensor * dst = part ? tg_transpose(ctx, part) : NULL;
                struct tg_tensor * out = dst ? tg_cpy(ctx, s, dst) : NULL;
                char what[200], da[64], db[64];
                snprintf(what, sizeof(what), "cpy %s -> %s (rows of %d)", desc(s, da, sizeof(da)),
                         dst ? desc(dst, db, sizeof(db)) : "?", (int) n0);
                if (!out) { CHECK(false, "%s constructed: %s", what, tg_last_error()); tg_context_free(ctx); continue; }
                double * ref = ref_alloc(s);
                // exact: each value rounded to f16 (nearest, ties to even) as the scalar conversion does
                FOR4(s) ref[LIN(s)] = b ? tg_fp16_to_fp32(tg_fp32_to_fp16((float) getv(s, i0, i1, i2, i3)))
                                        : getv(s, i0, i1, i2, i3);
                if (compute(ctx, out, what)) check_out(dst, ref, 0, what);
                free(ref);
                tg_context_free(ctx);
            }
        }
    }
}

// F64 (GGUF's double type) converts to and from f32 like the other float types.
static void case_f64(void) {
    static const int64_t sh[4] = { 64, 6, 3, 1 }, sa[4] = { 64, 10, 2, 1 };
    for (int b = 0; b < 5; b++) {
        one_cpy(TG_TYPE_F64, g_store_types[b], L_PERM, sh, sh, 2);
        one_cpy(g_store_types[b], TG_TYPE_F64, L_CONTIG, sh, sh, 2);
    }
    one_cpy(TG_TYPE_F64, TG_TYPE_F64, L_TRANSP, sh, sh, 0);
    struct tg_context * ctx = new_ctx();
    struct tg_tensor * a = input(ctx, TG_TYPE_F64, sa, L_VIEW, -2, 2);
    struct tg_tensor * ids = tg_new_tensor_2d(ctx, TG_TYPE_I32, 5, 2);
    for (int64_t j = 0; j < 10; j++) ((int32_t *) ids->data)[j] = (int32_t) (urand() * 10);
    struct tg_tensor * out = tg_get_rows(ctx, a, ids);
    double * ref = ref_alloc(out);
    FOR4(out) ref[LIN(out)] = (float) getv(a, i0, (int64_t) getv(ids, i1, i2, 0, 0), i2, i3);
    char what[160], da[64];
    snprintf(what, sizeof(what), "get_rows %s ids i32 [5,2,1,1] -> f32", desc(a, da, sizeof(da)));
    if (compute(ctx, out, what)) check_out(out, ref, 0, what);
    free(ref);
    tg_context_free(ctx);
}

static void case_get_rows(void) {
    static const int64_t sa[4] = { 64, 10, 2, 1 };
    for (int t = 0; t < 5; t++) {
        for (int v = 0; v < 3; v++) {
            enum layout l = v == 1 ? L_VIEW : v == 2 ? L_PERM : L_CONTIG;
            struct tg_context * ctx = new_ctx();
            struct tg_tensor * a = input(ctx, g_store_types[t], sa, l, -2, 2);
            struct tg_tensor * ids = tg_new_tensor_2d(ctx, TG_TYPE_I32, 5, 2);
            for (int64_t j = 0; j < 10; j++) ((int32_t *) ids->data)[j] = (int32_t) (urand() * 10);
            struct tg_tensor * out = tg_get_rows(ctx, a, ids);
            double * ref = ref_alloc(out);
            FOR4(out) ref[LIN(out)] = getv(a, i0, (int64_t) getv(ids, i1, i2, 0, 0), i2, i3);
            char what[160], da[64];
            snprintf(what, sizeof(what), "get_rows %s ids i32 [5,2,1,1] -> f32", desc(a, da, sizeof(da)));
            if (compute(ctx, out, what)) check_out(out, ref, 0, what);
            free(ref);
            tg_context_free(ctx);
        }
    }
}

static void case_set_rows(void) {
    static const int64_t sa[4] = { 64, 10, 2, 1 }, sb[4] = { 64, 3, 2, 1 };
    for (int t = 0; t < 5; t++) {
        for (int v = 0; v < 3; v++) {
            enum tg_type it = v == 1 ? TG_TYPE_I64 : TG_TYPE_I32;
            struct tg_context * ctx = new_ctx();
            struct tg_tensor * a = input(ctx, g_store_types[t], sa, L_CONTIG, -2, 2);
            struct tg_tensor * b = input(ctx, TG_TYPE_F32, sb, v == 2 ? L_PERM : L_CONTIG, -2, 2);
            const int64_t cx = v == 2 ? 1 : 2;   // v == 2: ids broadcast over dim 2 of b
            struct tg_tensor * c = tg_new_tensor_2d(ctx, it, 3, cx);
            for (int64_t x = 0; x < cx; x++) {
                int perm[10];
                for (int i = 0; i < 10; i++) perm[i] = i;
                for (int i = 9; i > 0; i--) { int j = (int) (urand() * (i + 1)); int s = perm[i]; perm[i] = perm[j]; perm[j] = s; }
                for (int64_t m = 0; m < 3; m++) setv(c, m, x, 0, 0, perm[m]);
            }
            double * ref = ref_alloc(a);
            FOR4(a) ref[LIN(a)] = getv(a, i0, i1, i2, i3);
            FOR4(b) {
                int64_t row = (int64_t) getv(c, i1, i2 % cx, 0, 0);
                ref[((i3 * a->ne[2] + i2) * a->ne[1] + row) * a->ne[0] + i0] = getv(b, i0, i1, i2, i3);
            }
            struct tg_tensor * out = tg_set_rows(ctx, a, b, c);
            char what[200], da[64], db[64];
            snprintf(what, sizeof(what), "set_rows %s <- %s ids %s [3,%lld]", desc(a, da, sizeof(da)), desc(b, db, sizeof(db)),
                     tg_type_name(it), (long long) cx);
            if (compute(ctx, out, what)) check_out(out, ref, thr_for(a->type), what);
            free(ref);
            tg_context_free(ctx);
        }
    }
}

// ---- norms ------------------------------------------------------------------------------------

static void case_norm(void) {
    static const int64_t s[4] = { 257, 7, 3, 1 };
    for (int k = 0; k < 2; k++) {
        for (int v = 0; v < 4; v++) {
            enum layout l = v == 1 ? L_PERM : v == 2 ? L_VIEW : L_CONTIG;
            struct tg_context * ctx = new_ctx();
            struct tg_tensor * a = input(ctx, TG_TYPE_F32, s, l, -1.5, 2.5);
            const float eps = 1e-5f;
            struct tg_tensor * out = k == 0 ? (v == 3 ? tg_rms_norm_inplace(ctx, a, eps) : tg_rms_norm(ctx, a, eps))
                                            : (v == 3 ? tg_norm_inplace(ctx, a, eps) : tg_norm(ctx, a, eps));
            double * ref = ref_alloc(out);
            for (int64_t i3 = 0; i3 < a->ne[3]; i3++) for (int64_t i2 = 0; i2 < a->ne[2]; i2++) for (int64_t i1 = 0; i1 < a->ne[1]; i1++) {
                const int64_t n = a->ne[0];
                double mean = 0, ss = 0;
                for (int64_t i = 0; i < n; i++) mean += getv(a, i, i1, i2, i3);
                mean = k == 0 ? 0 : mean / n;
                for (int64_t i = 0; i < n; i++) { double d = getv(a, i, i1, i2, i3) - mean; ss += d * d; }
                double sc = 1.0 / sqrt(ss / n + (double) eps);
                for (int64_t i0 = 0; i0 < n; i0++) ref[LIN(a)] = (getv(a, i0, i1, i2, i3) - mean) * sc;
            }
            char what[160], da[64];
            snprintf(what, sizeof(what), "%s%s %s eps=1e-5", k == 0 ? "rms_norm" : "norm", v == 3 ? "_inplace" : "", desc(a, da, sizeof(da)));
            if (compute(ctx, out, what)) check_out(out, ref, 1e-12, what);
            free(ref);
            tg_context_free(ctx);
        }
    }
}

// ---- soft_max ---------------------------------------------------------------------------------

static double ref_slope(int64_t h, int64_t n_head, double max_bias) {
    if (max_bias <= 0) return 1.0;
    int64_t n_log2 = 1;
    while (n_log2 * 2 <= n_head) n_log2 *= 2;
    double m0 = pow(2.0, -max_bias / (double) n_log2), m1 = pow(2.0, -(max_bias / 2.0) / (double) n_log2);
    return h < n_log2 ? pow(m0, (double) (h + 1)) : pow(m1, (double) (2 * (h - n_log2) + 1));
}

static void one_soft_max_of(const int64_t * sa, enum layout l, enum tg_type mt, const int64_t * ms, float scale,
                            float max_bias, bool inplace) {
    struct tg_context * ctx = new_ctx();
    struct tg_tensor * a = input(ctx, TG_TYPE_F32, sa, l, -4, 4);
    struct tg_tensor * mask = NULL;
    if (ms) {
        mask = input(ctx, mt, ms, L_CONTIG, -3, 3);
        FOR4(mask) if (i0 > 0 && urand() < 0.15) setv(mask, i0, i1, i2, i3, -INFINITY);
    }
    struct tg_tensor * out = inplace ? tg_soft_max_inplace(ctx, a)
                           : mask || scale != 1.0f ? tg_soft_max_ext(ctx, a, mask, scale, max_bias) : tg_soft_max(ctx, a);
    double * ref = ref_alloc(out);
    double * w = malloc((size_t) a->ne[0] * sizeof(double));
    for (int64_t i3 = 0; i3 < a->ne[3]; i3++) for (int64_t i2 = 0; i2 < a->ne[2]; i2++) for (int64_t i1 = 0; i1 < a->ne[1]; i1++) {
        double mx = -INFINITY, sum = 0;
        const double slope = ref_slope(i2, a->ne[2], max_bias);
        for (int64_t i = 0; i < a->ne[0]; i++) {
            w[i] = getv(a, i, i1, i2, i3) * (double) scale;
            if (mask) w[i] += slope * getv(mask, i, i1, i2 % mask->ne[2], i3 % mask->ne[3]);
            if (w[i] > mx) mx = w[i];
        }
        for (int64_t i = 0; i < a->ne[0]; i++) sum += exp(w[i] - mx);
        for (int64_t i0 = 0; i0 < a->ne[0]; i0++) ref[LIN(a)] = exp(w[i0] - mx) / sum;
    }
    free(w);
    char what[200], da[64], dm[64];
    snprintf(what, sizeof(what), "soft_max%s %s mask %s scale=%g max_bias=%g", inplace ? "_inplace" : "", desc(a, da, sizeof(da)),
             mask ? desc(mask, dm, sizeof(dm)) : "none", (double) scale, (double) max_bias);
    if (compute(ctx, out, what)) check_out(out, ref, 1e-12, what);
    free(ref);
    tg_context_free(ctx);
}

static void one_soft_max(enum layout l, enum tg_type mt, const int64_t * ms, float scale, float max_bias, bool inplace) {
    static const int64_t sa[4] = { 37, 5, 3, 2 };
    one_soft_max_of(sa, l, mt, ms, scale, max_bias, inplace);
}

static void case_soft_max(void) {
    static const int64_t m8[4] = { 37, 8, 1, 1 }, m53[4] = { 37, 5, 3, 1 }, m612[4] = { 37, 6, 1, 2 };
    // generation's kq_soft_max: one query row, every head reading the same
    // mask row (converted once per thread), rows enough for several threads
    static const int64_t sg[4] = { 1500, 1, 12, 1 }, mg[4] = { 1500, 1, 1, 1 }, mg2[4] = { 1500, 1, 2, 1 };
    one_soft_max_of(sg, L_CONTIG, TG_TYPE_F16, mg, 0.125f, 0.0f, false);
    one_soft_max_of(sg, L_CONTIG, TG_TYPE_F32, mg2, 0.125f, 0.0f, false);
    one_soft_max_of(sg, L_CONTIG, TG_TYPE_F16, mg2, 0.5f, 4.0f, false);
    for (int v = 0; v < 2; v++) {
        enum layout l = v ? L_PERM : L_CONTIG;
        one_soft_max(l, TG_TYPE_F32, NULL, 1.0f, 0.0f, false);
        one_soft_max(l, TG_TYPE_F32, NULL, 0.3f, 0.0f, false);
        one_soft_max(l, TG_TYPE_F32, m8, 0.125f, 0.0f, false);
        one_soft_max(l, TG_TYPE_F16, m8, 0.125f, 0.0f, false);
        one_soft_max(l, TG_TYPE_F16, m8, 0.125f, 8.0f, false);
        one_soft_max(l, TG_TYPE_F32, m53, 1.0f, 0.0f, false);
        one_soft_max(l, TG_TYPE_F16, m612, 0.5f, 4.0f, false);
    }
    one_soft_max(L_CONTIG, TG_TYPE_F32, NULL, 1.0f, 0.0f, true);
}
// ---- rope ------------------------------------------------------------------------------------

static void one_rope(enum layout l, int mode, int n_dims, float fscale, bool inplace, bool factors) {
    static const int64_t sa[4] = { 72, 4, 5, 1 };
    const float base = 10000.0f;
    struct tg_context * ctx = new_ctx();
    struct tg_tensor * a = input(ctx, TG_TYPE_F32, sa, l, -2, 2);
    struct tg_tensor * pos = tg_new_tensor_1d(ctx, TG_TYPE_I32, 5);
    for (int i = 0; i < 5; i++) ((int32_t *) pos->data)[i] = (int32_t) (urand() * 3000);
    struct tg_tensor * ff = NULL;
    if (factors) {   // Llama 3.1-like: 1 for high frequencies, up to 8 for low ones
        ff = tg_new_tensor_1d(ctx, TG_TYPE_F32, n_dims / 2);
        for (int i = 0; i < n_dims / 2; i++) ((float *) ff->data)[i] = 1.0f + 7.0f * (float) urand();
    }
    struct tg_tensor * out = inplace ? tg_rope_inplace(ctx, a, pos, n_dims, mode, base, fscale)
                           : factors ? tg_rope_ext(ctx, a, pos, ff, n_dims, mode, base, fscale)
                                     : tg_rope(ctx, a, pos, n_dims, mode, base, fscale);
    double * ref = ref_alloc(out);
    FOR4(a) ref[LIN(a)] = getv(a, i0, i1, i2, i3);
    for (int64_t i3 = 0; i3 < a->ne[3]; i3++) for (int64_t i2 = 0; i2 < a->ne[2]; i2++) for (int64_t i1 = 0; i1 < a->ne[1]; i1++) {
        const double p = ((int32_t *) pos->data)[i2];
        for (int64_t i = 0; i < n_dims / 2; i++) {
            double theta = p * (double) fscale * pow((double) base, -2.0 * (double) i / n_dims);
            if (ff) theta /= (double) ((float *) ff->data)[i];
            int64_t ia = mode == TG_ROPE_NEOX ? i : 2 * i, ib = mode == TG_ROPE_NEOX ? i + n_dims / 2 : 2 * i + 1;
            double x0 = getv(a, ia, i1, i2, i3), x1 = getv(a, ib, i1, i2, i3);
            int64_t i0 = ia;
            ref[LIN(a)] = x0 * cos(theta) - x1 * sin(theta);
            i0 = ib;
            ref[LIN(a)] = x0 * sin(theta) + x1 * cos(theta);
        }
    }
    char what[200], da[64];
    snprintf(what, sizeof(what), "rope%s %s %s n_dims=%d freq_base=1e4 freq_scale=%g pos i32 [5]",
             inplace ? "_inplace" : factors ? "_ext (freq factors)" : "",
             mode == TG_ROPE_NEOX ? "neox" : "normal", desc(a, da, sizeof(da)), n_dims, (double) fscale);
    if (compute(ctx, out, what)) check_out(out, ref, 1e-12, what);
    free(ref);
    tg_context_free(ctx);
}

static void case_rope(void) {
    static const enum layout lay[3] = { L_CONTIG, L_VIEW, L_PERM };
    for (int m = 0; m < 2; m++) {
        for (int l = 0; l < 3; l++) {
            one_rope(lay[l], m ? TG_ROPE_NEOX : TG_ROPE_NORMAL, 72, l == 1 ? 0.25f : 1.0f, false, false);
            one_rope(lay[l], m ? TG_ROPE_NEOX : TG_ROPE_NORMAL, 40, 1.0f, false, false);
            one_rope(lay[l], m ? TG_ROPE_NEOX : TG_ROPE_NORMAL, 64, l == 2 ? 0.5f : 1.0f, false, true);
        }
        one_rope(L_CONTIG, m ? TG_ROPE_NEOX : TG_ROPE_NORMAL, 64, 1.0f, true, false);
    }
}

// ---- glu, masks, loss ----------------------------------------------------------------------------

static double ref_act(int op, double x) {
    return op == TG_GLU_SWIGLU ? ref_un(TG_OP_SILU, x) : op == TG_GLU_GEGLU ? ref_un(TG_OP_GELU, x) : (x > 0 ? x : 0);
}

static void case_glu(void) {
    static const char * names[3] = { "swiglu", "geglu", "reglu" };
    static const int64_t s2[4] = { 74, 5, 3, 1 }, s1[4] = { 37, 5, 3, 1 };
    static const enum layout lay[3] = { L_CONTIG, L_PERM, L_VIEW };
    for (int op = 0; op < 3; op++) {
        for (int sw = 0; sw < 2; sw++) {
            for (int l = 0; l < 3; l++) {
                for (int two = 0; two < 2; two++) {
                    struct tg_context * ctx = new_ctx();
                    struct tg_tensor * a = input(ctx, TG_TYPE_F32, two ? s1 : s2, lay[l], -4, 4);
                    struct tg_tensor * b = two ? input(ctx, TG_TYPE_F32, s1, lay[(l + 1) % 3], -2, 2) : NULL;
                    struct tg_tensor * out = tg_glu(ctx, a, b, (enum tg_glu_op) op, sw != 0);
                    double * ref = ref_alloc(out);
                    const int64_t n = out->ne[0];
                    FOR4(out) {
                        double x, g;
                        if (two) { x = getv(a, i0, i1, i2, i3); g = getv(b, i0, i1, i2, i3); if (sw) { double t = x; x = g; g = t; } }
                        else { x = getv(a, i0 + (sw ? n : 0), i1, i2, i3); g = getv(a, i0 + (sw ? 0 : n), i1, i2, i3); }
                        ref[LIN(out)] = ref_act(op, x) * g;
                    }
                    char what[200], da[64], db[64];
                    snprintf(what, sizeof(what), "glu %s%s %s%s%s", names[op], sw ? " swapped" : "", desc(a, da, sizeof(da)),
                             two ? " gate " : " (split)", two ? desc(b, db, sizeof(db)) : "");
                    if (compute(ctx, out, what)) check_out(out, ref, 1e-12, what);
                    free(ref);
                    tg_context_free(ctx);
                }
            }
        }
    }
}

static void case_diag_mask(void) {
    static const int64_t s[4] = { 7, 5, 2, 1 };
    for (int v = 0; v < 3; v++) {
        struct tg_context * ctx = new_ctx();
        struct tg_tensor * a = input(ctx, TG_TYPE_F32, s, v == 1 ? L_PERM : L_CONTIG, -1, 1);
        const int n_past = 2;
        struct tg_tensor * out = v == 2 ? tg_diag_mask_inf_inplace(ctx, a, n_past) : tg_diag_mask_inf(ctx, a, n_past);
        double * ref = ref_alloc(out);
        FOR4(a) ref[LIN(a)] = i0 > n_past + i1 ? -INFINITY : getv(a, i0, i1, i2, i3);
        char what[160], da[64];
        snprintf(what, sizeof(what), "diag_mask_inf%s %s n_past=2", v == 2 ? "_inplace" : "", desc(a, da, sizeof(da)));
        if (compute(ctx, out, what)) check_out(out, ref, 0, what);
        free(ref);
        tg_context_free(ctx);
    }
}

static void case_cross_entropy(void) {
    static const int64_t s[4] = { 37, 6, 1, 1 };
    for (int v = 0; v < 2; v++) {
        struct tg_context * ctx = new_ctx();
        struct tg_tensor * a = input(ctx, TG_TYPE_F32, s, v ? L_TRANSP : L_CONTIG, -3, 3);
        struct tg_tensor * b = input(ctx, TG_TYPE_F32, s, L_CONTIG, 0, 1);
        for (int64_t r = 0; r < 6; r++) {
            double sum = 0;
            for (int64_t i = 0; i < 37; i++) sum += getv(b, i, r, 0, 0);
            for (int64_t i = 0; i < 37; i++) setv(b, i, r, 0, 0, getv(b, i, r, 0, 0) / sum);
        }
        struct tg_tensor * out = tg_cross_entropy_loss(ctx, a, b);
        double * ref = ref_alloc(out);
        for (int64_t r = 0; r < 6; r++) {
            double mx = -INFINITY, sum = 0;
            for (int64_t i = 0; i < 37; i++) if (getv(a, i, r, 0, 0) > mx) mx = getv(a, i, r, 0, 0);
            for (int64_t i = 0; i < 37; i++) sum += exp(getv(a, i, r, 0, 0) - mx);
            double lse = log(sum) + mx;
            for (int64_t i = 0; i < 37; i++) ref[0] -= getv(b, i, r, 0, 0) * (getv(a, i, r, 0, 0) - lse) / 6.0;
        }
        char what[160], da[64];
        snprintf(what, sizeof(what), "cross_entropy_loss %s labels f32 [37,6,1,1]", desc(a, da, sizeof(da)));
        if (compute(ctx, out, what)) check_out(out, ref, 1e-12, what);
        free(ref);
        tg_context_free(ctx);
    }
}

// FLASH_ATTN_EXT against softmax(scale * K.q + mask) V in float64: F16 and
// F32 K/V, grouped-query heads, a permuted q, lengths that are not multiples
// of the kernel's tiles, an F16 mask with a fully masked row (zeros), and a
// NaN in q (that row NaN, the others not). Prompts go over the cache in
// blocks of 128 cells, generation (one token) in blocks of 512: 300 cells make
// 3 prompt blocks, 1100 cells 3 generation blocks (the online softmax rescales
// across blocks either way); generation over fewer than 256 cells goes
// through the tiles, from 256 on in two passes. Generation also over views of caches laid out
// as the llama KV cache is (a K row: every head's slice of a cell side by
// side; V transposed, rows longer than the cells used), which its two-pass
// path reads whole rows of.
static void case_flash_attn(void) {
    const int64_t D = 40, Dv = 24, H = 6;
    for (int v = 0; v < 8; v++) {
        const bool gen = v >= 4, cache = v >= 6;
        // generation: 1100 cells (F16), and F32 over 200 (under TG_FA_GEN_MIN: the
        // tiles) and 300 cells of cache views (two passes, one block)
        const int64_t C = !gen ? 300 : v == 5 ? 200 : v == 7 ? 300 : 1100, T = gen ? 1 : 19;
        const enum tg_type kvt = v % 2 ? TG_TYPE_F32 : TG_TYPE_F16;
        const int64_t Hk = v < 2 || gen ? 2 : 6;
        const enum tg_type mt = v == 3 ? TG_TYPE_F16 : TG_TYPE_F32;
        struct tg_context * ctx = new_ctx();
        const int64_t sq[4] = { D, T, H, 1 }, sk[4] = { D, C, Hk, 1 }, sv[4] = { C, Dv, Hk, 1 };
        struct tg_tensor * q = input(ctx, TG_TYPE_F32, sq, v == 1 ? L_PERM : L_CONTIG, -1, 1);
        struct tg_tensor * k, * vv;
        if (cache) {   // 1200 cells, 1100 of them used
            const int64_t kc_ne[4] = { D * Hk, 1200, 1, 1 }, vc_ne[4] = { 1200, Dv * Hk, 1, 1 };
            struct tg_tensor * kc = input(ctx, kvt, kc_ne, L_CONTIG, -1, 1), * vc = input(ctx, kvt, vc_ne, L_CONTIG, -1, 1);
            const size_t es = tg_type_size(kvt);
            k = tg_view_3d(ctx, kc, D, C, Hk, kc->nb[1], (size_t) D * es, 0);
            vv = tg_view_3d(ctx, vc, C, Dv, Hk, vc->nb[1], (size_t) Dv * vc->nb[1], 0);
        } else {
            k = input(ctx, kvt, sk, L_CONTIG, -1, 1);
            vv = input(ctx, kvt, sv, L_CONTIG, -1, 1);
        }
        struct tg_tensor * m = tg_new_tensor_2d(ctx, mt, C, T + 3);
        for (int64_t t = 0; t < T + 3; t++)
            for (int64_t c = 0; c < C; c++) {
                double x = (c > t + (C - T)) || t == 4 ? -INFINITY : -0.5 * (double) ((c * 7 + t * 3) % 11) / 11.0;
                setv(m, c, t, 0, 0, x);
            }
        const float scale = 0.37f;
        struct tg_tensor * out = tg_flash_attn_ext(ctx, q, k, vv, m, scale);
        CHECK(out != NULL, "flash_attn_ext builds: %s", out ? "" : tg_last_error());
        if (!out) { tg_context_free(ctx); continue; }
        double * ref = ref_alloc(out);
        double * sc = malloc((size_t) C * sizeof(double));
        for (int64_t h = 0; h < H; h++)
            for (int64_t t = 0; t < T; t++) {
                const int64_t hk = h / (H / Hk);
                double mx = -INFINITY, sum = 0;
                for (int64_t c = 0; c < C; c++) {
                    double d = 0;
                    for (int64_t i = 0; i < D; i++) d += getv(q, i, t, h, 0) * getv(k, i, c, hk, 0);
                    sc[c] = scale * d + getv(m, c, t, 0, 0);
                    if (sc[c] > mx) mx = sc[c];
                }
                if (mx == -INFINITY) continue;   // fully masked: zeros
                for (int64_t c = 0; c < C; c++) { sc[c] = exp(sc[c] - mx); sum += sc[c]; }
                for (int64_t d = 0; d < Dv; d++) {
                    double o = 0;
                    for (int64_t c = 0; c < C; c++) o += sc[c] * getv(vv, c, d, hk, 0);
                    ref[(t * H + h) * Dv + d] = o / sum;
                }
            }
        free(sc);
        char what[200], dq[64];
        snprintf(what, sizeof(what), "flash_attn_ext q %s k/v %s%s [%lld,%lld,%lld] heads %lld/%lld mask %s", desc(q, dq, sizeof(dq)),
                 tg_type_name(kvt), cache ? " (cache views)" : "", (long long) D, (long long) C, (long long) Dv, (long long) H,
                 (long long) Hk, tg_type_name(mt));
        if (compute(ctx, out, what)) {
            check_out(out, ref, kvt == TG_TYPE_F16 ? 1e-5 : 1e-10, what);
            if (T <= 4) { free(ref); tg_context_free(ctx); continue; }   // no fully masked token
            bool zeros = true;
            for (int64_t h = 0; h < H; h++) for (int64_t d = 0; d < Dv; d++) zeros &= getv(out, d, h, 4, 0) == 0.0;
            CHECK(zeros, "[%s] %s: the fully masked token gives zeros", g_level, what);
        }
        free(ref);
        tg_context_free(ctx);
    }
    // grouped-query heads share their K/V head's tiles: the same bits as
    // every query head with its own copy of the K/V head (T tokens x 3 heads
    // make tiles of 16 query rows that mix tokens and heads, with a tail)
    for (int kvt16 = 0; kvt16 < 2; kvt16++) {
        struct tg_context * c2 = new_ctx();
        const enum tg_type kvt = kvt16 ? TG_TYPE_F16 : TG_TYPE_F32;
        const int64_t Dg = 32, Cg = 150, Tg = kvt16 ? 5 : 6, Hg = 6, Hkg = 2;   // 15 and 18 rows: 4-column groups and a tail of 3 or 2
        const int64_t sq[4] = { Dg, Tg, Hg, 1 }, sk[4] = { Dg, Cg, Hkg, 1 }, sv[4] = { Cg, Dg, Hkg, 1 };
        struct tg_tensor * q = input(c2, TG_TYPE_F32, sq, L_CONTIG, -1, 1);
        struct tg_tensor * k = input(c2, kvt, sk, L_CONTIG, -1, 1);
        struct tg_tensor * vv = input(c2, kvt, sv, L_CONTIG, -1, 1);
        struct tg_tensor * k6 = tg_new_tensor_3d(c2, kvt, Dg, Cg, Hg), * v6 = tg_new_tensor_3d(c2, kvt, Cg, Dg, Hg);
        for (int64_t h = 0; h < Hg; h++) {   // head h's own copy of K/V head h / 3
            memcpy((char *) k6->data + h * k6->nb[2], (const char *) k->data + (h / 3) * k->nb[2], k->nb[2]);
            memcpy((char *) v6->data + h * v6->nb[2], (const char *) vv->data + (h / 3) * vv->nb[2], vv->nb[2]);
        }
        struct tg_tensor * m = tg_new_tensor_2d(c2, TG_TYPE_F32, Cg, Tg);
        for (int64_t t = 0; t < Tg; t++)
            for (int64_t c = 0; c < Cg; c++) setv(m, c, t, 0, 0, c > t + (Cg - Tg) ? -INFINITY : 0.0);
        struct tg_tensor * og = tg_flash_attn_ext(c2, q, k, vv, m, 0.3f), * om = tg_flash_attn_ext(c2, q, k6, v6, m, 0.3f);
        char what[120];
        snprintf(what, sizeof(what), "flash_attn_ext %s heads 6/2 vs 6/6 (K/V copied)", tg_type_name(kvt));
        if (og && om && compute(c2, og, what) && compute(c2, om, what))
            CHECK(memcmp(og->data, om->data, tg_nbytes(og)) == 0, "[%s] %s: the same bits", g_level, what);
        else CHECK(false, "[%s] %s computes: %s", g_level, what, tg_last_error());
        tg_context_free(c2);
    }
    // a NaN in token 7's query of head 3: that row is NaN, the rest finite
    struct tg_context * ctx = new_ctx();
    const int64_t sq[4] = { 16, 9, 4, 1 }, sk[4] = { 16, 33, 2, 1 }, sv[4] = { 33, 16, 2, 1 };
    struct tg_tensor * q = input(ctx, TG_TYPE_F32, sq, L_CONTIG, -1, 1);
    struct tg_tensor * k = input(ctx, TG_TYPE_F16, sk, L_CONTIG, -1, 1);
    struct tg_tensor * vv = input(ctx, TG_TYPE_F16, sv, L_CONTIG, -1, 1);
    setv(q, 5, 7, 3, 0, NAN);
    struct tg_tensor * out = tg_flash_attn_ext(ctx, q, k, vv, NULL, 0.25f);
    if (compute(ctx, out, "flash_attn_ext with a NaN")) {
        bool ok = true;
        for (int64_t t = 0; t < 9; t++) for (int64_t h = 0; h < 4; h++) for (int64_t d = 0; d < 16; d++) {
            const double x = getv(out, d, h, t, 0);
            ok &= (t == 7 && h == 3) ? isnan(x) : isfinite(x);
        }
        CHECK(ok, "[%s] flash_attn_ext: a NaN in one query makes exactly its row NaN", g_level);
    }
    // generation over 300 cells (the three-pass path): a NaN in head 3's
    // query makes exactly that row NaN; a mask with every cell masked, zeros
    for (int masked = 0; masked < 2; masked++) {
        const int64_t gq[4] = { 16, 1, 4, 1 }, gk[4] = { 16, 300, 2, 1 }, gv[4] = { 300, 16, 2, 1 };
        struct tg_tensor * q1 = input(ctx, TG_TYPE_F32, gq, L_CONTIG, -1, 1);
        struct tg_tensor * k1 = input(ctx, TG_TYPE_F16, gk, L_CONTIG, -1, 1);
        struct tg_tensor * v1 = input(ctx, TG_TYPE_F16, gv, L_CONTIG, -1, 1);
        struct tg_tensor * m1 = masked ? tg_new_tensor_2d(ctx, TG_TYPE_F32, 300, 1) : NULL;
        for (int64_t c = 0; m1 && c < 300; c++) setv(m1, c, 0, 0, 0, -INFINITY);
        if (!masked) setv(q1, 5, 0, 3, 0, NAN);
        struct tg_tensor * o1 = tg_flash_attn_ext(ctx, q1, k1, v1, m1, 0.25f);
        const char * what = masked ? "flash_attn_ext generation, every cell masked" : "flash_attn_ext generation with a NaN";
        if (o1 && compute(ctx, o1, what)) {
            bool ok = true;
            for (int64_t h = 0; h < 4; h++) for (int64_t d = 0; d < 16; d++) {
                const double x = getv(o1, d, h, 0, 0);
                ok &= masked ? x == 0.0 : h == 3 ? isnan(x) : isfinite(x);
            }
            CHECK(ok, "[%s] %s: %s", g_level, what, masked ? "zeros" : "exactly head 3's row NaN");
        } else CHECK(false, "[%s] %s computes: %s", g_level, what, tg_last_error());
    }
    // shape errors are named
    CHECK(tg_flash_attn_ext(ctx, q, vv, k, NULL, 0.25f) == NULL && strstr(tg_last_error(), "flash_attn_ext"),
          "flash_attn_ext with k and v swapped fails: %s", tg_last_error());
    tg_context_free(ctx);
}

static void case_set_acc(void) {
    static const int64_t sa[4] = { 10, 6, 3, 1 }, sb[4] = { 4, 3, 2, 1 };
    for (int acc = 0; acc < 2; acc++) {
        for (int v = 0; v < 3; v++) {
            struct tg_context * ctx = new_ctx();
            struct tg_tensor * a = input(ctx, TG_TYPE_F32, sa, L_CONTIG, -1, 1);
            struct tg_tensor * b = input(ctx, TG_TYPE_F32, sb, v == 1 ? L_PERM : L_CONTIG, -1, 1);
            const size_t nb1 = a->nb[1], nb2 = a->nb[2], nb3 = a->nb[3], off = 2 * sizeof(float) + a->nb[1];
            const bool inplace = v == 2;
            struct tg_tensor * out = acc ? (inplace ? tg_acc_inplace(ctx, a, b, nb1, nb2, nb3, off) : tg_acc(ctx, a, b, nb1, nb2, nb3, off))
                                         : (inplace ? tg_set_inplace(ctx, a, b, nb1, nb2, nb3, off) : tg_set(ctx, a, b, nb1, nb2, nb3, off));
            double * ref = ref_alloc(a);
            FOR4(a) ref[LIN(a)] = getv(a, i0, i1, i2, i3);
            FOR4(b) {
                size_t k = (off + i0 * sizeof(float) + i1 * nb1 + i2 * nb2 + i3 * nb3) / sizeof(float);
                ref[k] = (acc ? ref[k] : 0.0) + getv(b, i0, i1, i2, i3);
            }
            char what[200], da[64], db[64];
            snprintf(what, sizeof(what), "%s%s %s b %s offset=%zu", acc ? "acc" : "set", inplace ? "_inplace" : "",
                     desc(a, da, sizeof(da)), desc(b, db, sizeof(db)), off);
            if (compute(ctx, out, what)) check_out(out, ref, acc ? 1e-12 : 0, what);
            free(ref);
            tg_context_free(ctx);
        }
    }
}

// ---- matrix products ---------------------------------------------------------------------------

static double thr_mm(enum tg_type wt, enum tg_type bt) {
    switch (wt) {
        case TG_TYPE_F16:  return bt == TG_TYPE_F16 ? 1e-12 : 1e-5;   // b rounded to f16 for the dot
        case TG_TYPE_Q8_0: case TG_TYPE_Q4_0: return 1e-4;            // b quantized to q8_0
        default:           return 1e-12;
    }
}

static void case_mul_mat(void) {
    static const int64_t sa[4] = { 64, 11, 2, 1 }, sb[4] = { 64, 7, 4, 3 };
    static const enum tg_type btypes[3] = { TG_TYPE_F32, TG_TYPE_F16, TG_TYPE_BF16 };
    for (int t = 0; t < 5; t++) {
        for (int bt = 0; bt < 3; bt++) {
            for (int v = 0; v < 3; v++) {
                enum layout lb = v == 1 ? L_PERM : v == 2 ? L_TRANSP : L_CONTIG;
                struct tg_context * ctx = new_ctx();
                struct tg_tensor * a = input(ctx, g_store_types[t], sa, v == 2 ? L_VIEW : L_CONTIG, -1, 1);
                struct tg_tensor * b = input(ctx, btypes[bt], sb, lb, -1, 1);
                struct tg_tensor * out = tg_mul_mat(ctx, a, b);
                double * ref = ref_alloc(out);
                const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
                FOR4(out) {
                    double s = 0;
                    for (int64_t k = 0; k < a->ne[0]; k++) s += getv(a, k, i0, i2 / r2, i3 / r3) * getv(b, k, i1, i2, i3);
                    ref[LIN(out)] = s;
                }
                char what[200], da[64], db[64];
                snprintf(what, sizeof(what), "mul_mat %s x %s", desc(a, da, sizeof(da)), desc(b, db, sizeof(db)));
                if (compute(ctx, out, what)) check_out(out, ref, thr_mm(a->type, b->type), what);
                free(ref);
                tg_context_free(ctx);
            }
        }
    }
    for (int t = 0; t < 5; t++) {
        for (int v = 0; v < 2; v++) {
            static const int64_t pa[4] = { 32, 9, 2, 1 }, pb[4] = { 7, 9, 4, 3 };
            struct tg_context * ctx = new_ctx();
            struct tg_tensor * a = input(ctx, g_store_types[t], pa, v ? L_VIEW : L_CONTIG, -1, 1);
            struct tg_tensor * b = input(ctx, TG_TYPE_F32, pb, v ? L_TRANSP : L_CONTIG, -1, 1);
            struct tg_tensor * out = tg_out_prod(ctx, a, b);
            double * ref = ref_alloc(out);
            const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
            FOR4(out) {
                double s = 0;
                for (int64_t l = 0; l < a->ne[1]; l++) s += getv(a, i0, l, i2 / r2, i3 / r3) * getv(b, i1, l, i2, i3);
                ref[LIN(out)] = s;
            }
            char what[200], da[64], db[64];
            snprintf(what, sizeof(what), "out_prod %s x %s", desc(a, da, sizeof(da)), desc(b, db, sizeof(db)));
            if (compute(ctx, out, what)) check_out(out, ref, 1e-12, what);
            free(ref);
            tg_context_free(ctx);
        }
    }
}

static void run_all_cases(void) {
    case_unary();
    case_binary();
    case_scale();
    case_reduce();
    case_repeat_concat();
    case_copy();
    case_cpy_into_views();
    case_cpy_short_rows();
    case_f64();
    case_get_rows();
    case_set_rows();
    case_norm();
    case_soft_max();
    case_rope();
    case_glu();
    case_diag_mask();
    case_cross_entropy();
    case_flash_attn();
    case_set_acc();
    case_mul_mat();
}

// --backend NAME: the whole suite once on that backend (e.g. CUDA0), against
// the same float64 references; a backend the build or the machine lacks is
// reported as skipped.
static int run_on_backend(const char * name) {
    struct tg_device * dev = tg_device_by_name(name);
    if (!dev) {
        printf("skipped: no device %s (%s)\n", name, tg_cuda_probe());
        return 0;
    }
    g_be = tg_device_init_backend(dev, NULL);
    CHECK(g_be != NULL, "backend %s starts: %s", name, g_be ? "ok" : tg_last_error());
    if (!g_be) return tg_check_finish("test_ops");
    g_level = name;
    g_rng = 0x9E3779B97F4A7C15ull;
    run_all_cases();
    printf("%s: %d cases skipped (op not supported there)\n", name, g_skipped);
    tg_backend_free(g_be);
    for (int i = 0; i < MAX_SAVED; i++) free(g_saved[i]);
    return tg_check_finish("test_ops");
}

int main(int argc, char ** argv) {
    if (argc == 3 && strcmp(argv[1], "--backend") == 0) return run_on_backend(argv[2]);
    if (argc != 1) { fprintf(stderr, "usage: test_ops [--backend NAME]\n"); return 2; }
    const char * levels[3];
    int caps[3], n_levels = 0;
    int native = tg_cpu_simd_level();
    levels[n_levels] = tg_cpu_simd_name(); caps[n_levels++] = -1;
    if (native > TG_SIMD_AVX) { levels[n_levels] = "avx"; caps[n_levels++] = TG_SIMD_AVX; }
    if (native > TG_SIMD_SCALAR) { levels[n_levels] = "scalar"; caps[n_levels++] = TG_SIMD_SCALAR; }
    printf("cpu simd: %s\n", tg_cpu_simd_name());
    g_pool = tg_cpu_pool_new(3);
    CHECK(g_pool != NULL, "pool of 3 threads");
    if (!g_pool) return tg_check_finish("test_ops");
    tg_cpu_set_task_grain(1);   // small tensors still split across the 3 threads
    for (int r = 0; r < n_levels; r++) {
        g_run = r;
        g_check = 0;
        g_level = levels[r];
        g_rng = 0x9E3779B97F4A7C15ull;
        if (caps[r] == TG_SIMD_SCALAR) tg_cpu_force_scalar(true);
        else tg_cpu_set_simd_cap(caps[r]);
        run_all_cases();
    }
    tg_cpu_force_scalar(false);
    tg_cpu_set_simd_cap(-1);
    tg_cpu_set_task_grain(0);
    tg_cpu_pool_free(g_pool);
    for (int i = 0; i < MAX_SAVED; i++) free(g_saved[i]);
    return tg_check_finish("test_ops");
}
