// test_alloc.c - graph allocator invariants on random graphs and on a
// llama-shaped graph: no two tensors live at the same step overlap in a
// buffer (except a parent and the child that took its range in place),
// inputs/outputs are never reused, in-place reuse happens where allowed, and
// results equal those of an allocation without any reuse, bitwise.
#include "check.h"
#include "tg/alloc.h"
#include "tg/backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t) (rng_state >> 33);
}
static float rndf(void) { return (float) (rnd() % 20001) / 10000.0f - 1.0f; }

static struct tg_context * new_ctx(size_t mb) {
    struct tg_context_params p = { mb << 20, NULL, true };
    return tg_context_new(p);
}

// True when `child` took `anc`'s range through a chain of in-place handoffs.
static bool inplace_descends(const struct tg_gallocr * ga, const struct tg_alloc_tensor_info * child,
                             const struct tg_alloc_tensor_info * anc) {
    for (int guard = 0; child && guard < 10000; guard++) {
        if (!child->inplace_of) return false;
        const struct tg_tensor * p = child->inplace_of;
        if (p == anc->tensor || (p->view_src && p->view_src == anc->tensor)) return true;
        child = tg_gallocr_find(ga, p->view_src && tg_gallocr_find(ga, p)->kind == TG_ALLOC_VIEW ? p->view_src : p);
    }
    return false;
}

static bool ranges_meet(size_t a0, size_t an, size_t b0, size_t bn) { return a0 < b0 + bn && b0 < a0 + an; }

// Checks the invariants of the last allocation; returns the number of problems.
static int check_invariants(const struct tg_gallocr * ga, const char * what) {
    int bad = 0, n = tg_gallocr_n_tensors(ga);
    for (int i = 0; i < n; i++) {
        const struct tg_alloc_tensor_info * a = tg_gallocr_tensor_info(ga, i);
        bool a_own = a->kind == TG_ALLOC_PLANNED || a->kind == TG_ALLOC_INPLACE;
        if (!a_own) continue;
        const struct tg_tensor * at = a->tensor;
        if (at->flags & TG_FLAG_INPUT) bad += !CHECKQ(a->first_step == 0, "%s: input %s placed at step 0", what, at->name);
        if (at->flags & (TG_FLAG_INPUT | TG_FLAG_OUTPUT))
            bad += !CHECKQ(a->last_step == tg_gallocr_n_tensors(ga) - 1 || a->last_step >= a->first_step,
                           "%s: flagged %s kept", what, at->name);
        bad += !CHECKQ(at->data == (char *) tg_buffer_get_base(a->buffer) + a->offset, "%s: %s data matches its offset", what, at->name);
        bad += !CHECKQ(a->offset + a->size <= tg_buffer_get_size(a->buffer), "%s: %s inside its buffer", what, at->name);
        for (int j = i + 1; j < n; j++) {
            const struct tg_alloc_tensor_info * b = tg_gallocr_tensor_info(ga, j);
            if (!(b->kind == TG_ALLOC_PLANNED || b->kind == TG_ALLOC_INPLACE) || b->buffer != a->buffer) continue;
            if (!ranges_meet(a->offset, a->size, b->offset, b->size)) continue;
            bool live_together = a->first_step <= b->last_step && b->first_step <= a->last_step;
            if (!live_together) continue;
            // allowed only for an in-place handoff at a single step
            bool ok = (inplace_descends(ga, b, a) && a->last_step == b->first_step)
                   || (inplace_descends(ga, a, b) && b->last_step == a->first_step);
            bad += !CHECKQ(ok, "%s: %s [%zu,+%zu) steps %d..%d overlaps %s [%zu,+%zu) steps %d..%d", what,
                           at->name, a->offset, a->size, a->first_step, a->last_step,
                           b->tensor->name, b->offset, b->size, b->first_step, b->last_step);
            if ((at->flags | b->tensor->flags) & (TG_FLAG_INPUT | TG_FLAG_OUTPUT)) {
                // a flagged tensor may only be the child of an in-place handoff, never reused afterwards
                bool flagged_child = ((b->tensor->flags & (TG_FLAG_INPUT | TG_FLAG_OUTPUT)) && inplace_descends(ga, b, a))
                                  || ((at->flags & (TG_FLAG_INPUT | TG_FLAG_OUTPUT)) && inplace_descends(ga, a, b));
                bad += !CHECKQ(flagged_child, "%s: flagged tensor %s / %s shares bytes while live", what, at->name, b->tensor->name);
            }
        }
    }
    return bad;
}

// ---- random graphs ----------------------------------------------------------------

struct rgraph { struct tg_context * ctx; struct tg_graph * g; struct tg_tensor * in[4]; int n_in; struct tg_tensor * out[16]; int n_out; };

// Square [n,n] F32 tensors so that transposes keep the shape.
static void build_random(struct rgraph * r, uint64_t seed, int n, int n_ops) {
    rng_state = seed;
    r->ctx = new_ctx(8);
    struct tg_tensor * pool[256];
    int np = 0;
    r->n_in = 2 + (int) (rnd() % 3);
    for (int i = 0; i < r->n_in; i++) {
        r->in[i] = tg_format_name(tg_new_tensor_2d(r->ctx, TG_TYPE_F32, n, n), "in%d", i);
        tg_set_input(r->in[i]);
        pool[np++] = r->in[i];
    }
    r->n_out = 0;
    struct tg_tensor * t = NULL;
    for (int k = 0; k < n_ops; k++) {
        // prefer recent tensors: long chains and some fan-out
        struct tg_tensor * a = pool[np - 1 - (int) (rnd() % (np < 4 ? np : 4))];
        struct tg_tensor * b = pool[rnd() % np];
        switch (rnd() % 10) {
            case 0: t = tg_add(r->ctx, a, b); break;
            case 1: t = tg_mul(r->ctx, a, b); break;
            case 2: t = tg_scale(r->ctx, a, 0.5f); break;
            case 3: t = tg_silu(r->ctx, a); break;
            case 4: t = tg_sqr(r->ctx, a); break;
            case 5: t = tg_neg(r->ctx, a); break;
            case 6: t = tg_sub(r->ctx, a, b); break;
            case 7: t = tg_cont(r->ctx, tg_transpose(r->ctx, a)); break;
            case 8: t = tg_rms_norm(r->ctx, tg_view_tensor(r->ctx, a), 1e-5f); break;
            default: t = tg_add(r->ctx, tg_reshape_2d(r->ctx, a, n, n), b); break;
        }
        tg_format_name(t, "op%d", k);
        pool[np++] = t;
        if (rnd() % 7 == 0 && r->n_out < 15) { tg_set_output(t); r->out[r->n_out++] = t; }
    }
    tg_set_output(t);
    r->out[r->n_out++] = t;
    r->g = tg_graph_new(r->ctx, 1024);
    for (int i = 0; i < r->n_out; i++) tg_graph_build_forward(r->g, r->out[i]);
}

static void set_inputs(struct tg_tensor ** in, int n_in, uint64_t seed) {
    rng_state = seed ^ 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < n_in; i++) {
        int64_t ne = tg_nelements(in[i]);
        float * v = malloc((size_t) ne * sizeof(float));
        for (int64_t j = 0; j < ne; j++) v[j] = rndf();
        tg_backend_tensor_set(in[i], v, 0, (size_t) ne * sizeof(float));
        free(v);
    }
}

static bool same_bytes(const struct tg_tensor * a, const struct tg_tensor * b) {
    size_t n = tg_nbytes(a);
    if (n != tg_nbytes(b)) return false;
    char * x = malloc(n), * y = malloc(n);
    tg_backend_tensor_get(a, x, 0, n);
    tg_backend_tensor_get(b, y, 0, n);
    bool eq = memcmp(x, y, n) == 0;
    free(x); free(y);
    return eq;
}

static void test_random(struct tg_backend * cpu) {
    int total_inplace = 0, total_bad = 0;
    for (int it = 0; it < 40; it++) {
        uint64_t seed = 1000 + (uint64_t) it;
        int n = 8 + (it % 5) * 4, n_ops = 10 + (it * 7) % 50;
        struct rgraph r, ref;
        build_random(&r, seed, n, n_ops);
        build_random(&ref, seed, n, n_ops);
        struct tg_gallocr * ga = tg_gallocr_new(tg_cpu_buffer_type());
        struct tg_gallocr * gr = tg_gallocr_new(tg_cpu_buffer_type());
        tg_gallocr_set_options(gr, (struct tg_gallocr_options) { .no_reuse = true, .no_inplace = true });
        enum tg_status st = tg_gallocr_alloc_graph(ga, r.g);
        enum tg_status st2 = tg_gallocr_alloc_graph(gr, ref.g);
        CHECKQ(st == TG_OK && st2 == TG_OK, "random %d: allocated (%s)", it, tg_last_error());
        char what[32];
        snprintf(what, sizeof what, "random %d", it);
        total_bad += check_invariants(ga, what);
        total_inplace += tg_gallocr_n_inplace(ga);
        CHECKQ(tg_gallocr_n_inplace(gr) == 0, "random %d: no in-place in the reference", it);
        CHECKQ(tg_gallocr_get_buffer_size(ga, 0) <= tg_gallocr_get_buffer_size(gr, 0), "random %d: reuse never needs more memory", it);
        set_inputs(r.in, r.n_in, seed);
        set_inputs(ref.in, ref.n_in, seed);
        st = tg_backend_graph_compute(cpu, r.g);
        st2 = tg_backend_graph_compute(cpu, ref.g);
        CHECKQ(st == TG_OK && st2 == TG_OK, "random %d: computed (%s)", it, tg_last_error());
        for (int o = 0; o < r.n_out; o++)
            total_bad += !CHECKQ(same_bytes(r.out[o], ref.out[o]), "random %d: output %s equals the no-reuse result", it, r.out[o]->name);
        tg_gallocr_free(ga); tg_gallocr_free(gr);
        tg_context_free(r.ctx); tg_context_free(ref.ctx);
    }
    CHECK(total_bad == 0, "40 random graphs: no live overlap, flagged tensors kept, outputs bitwise equal (%d problems)", total_bad);
    CHECK(total_inplace > 0, "random graphs used in-place reuse (%d times)", total_inplace);
}

// ---- llama-shaped graph ----------------------------------------------------------------

enum { E = 64, NH = 4, HD = 16, T = 8, FF = 96, NL = 2, NV = 50 };

struct weights {
    struct tg_context * ctx;
    struct tg_buffer *  buf;
    struct tg_tensor * attn_norm[NL], * wq[NL], * wk[NL], * wv[NL], * wo[NL];
    struct tg_tensor * ffn_norm[NL], * wgate[NL], * wup[NL], * wdown[NL];
    struct tg_tensor * out_norm, * out;
};

static struct tg_tensor * w2(struct weights * w, const char * name, int l, int64_t a, int64_t b) {
    struct tg_tensor * t = b ? tg_new_tensor_2d(w->ctx, TG_TYPE_F32, a, b) : tg_new_tensor_1d(w->ctx, TG_TYPE_F32, a);
    return l >= 0 ? tg_format_name(t, "blk.%d.%s", l, name) : tg_set_name(t, name);
}

static void make_weights(struct weights * w, struct tg_backend * cpu) {
    w->ctx = new_ctx(1);
    for (int l = 0; l < NL; l++) {
        w->attn_norm[l] = w2(w, "attn_norm.weight", l, E, 0);
        w->wq[l] = w2(w, "attn_q.weight", l, E, E);
        w->wk[l] = w2(w, "attn_k.weight", l, E, E);
        w->wv[l] = w2(w, "attn_v.weight", l, E, E);
        w->wo[l] = w2(w, "attn_output.weight", l, E, E);
        w->ffn_norm[l] = w2(w, "ffn_norm.weight", l, E, 0);
        w->wgate[l] = w2(w, "ffn_gate.weight", l, E, FF);
        w->wup[l] = w2(w, "ffn_up.weight", l, E, FF);
        w->wdown[l] = w2(w, "ffn_down.weight", l, FF, E);
    }
    w->out_norm = w2(w, "output_norm.weight", -1, E, 0);
    w->out = w2(w, "output.weight", -1, E, NV);
    w->buf = tg_backend_alloc_ctx_tensors(w->ctx, cpu);
    tg_buffer_set_usage(w->buf, TG_BUFFER_USAGE_WEIGHTS);
    rng_state = 77;
    for (struct tg_tensor * t = tg_context_first_tensor(w->ctx); t; t = tg_context_next_tensor(w->ctx, t)) {
        int64_t ne = tg_nelements(t);
        float * v = malloc((size_t) ne * sizeof(float));
        bool norm = t->ne[1] == 1;
        for (int64_t j = 0; j < ne; j++) v[j] = norm ? 1.0f + 0.1f * rndf() : 0.2f * rndf();
        tg_backend_tensor_set(t, v, 0, (size_t) ne * sizeof(float));
        free(v);
    }
}

struct lgraph { struct tg_context * ctx; struct tg_graph * g; struct tg_tensor * inp, * pos, * mask, * logits, * mid; };

static void build_llama(struct lgraph * r, struct weights * w) {
    struct tg_context * c = r->ctx = new_ctx(4);
    r->inp = tg_set_name(tg_new_tensor_2d(c, TG_TYPE_F32, E, T), "inp_embd");
    r->pos = tg_set_name(tg_new_tensor_1d(c, TG_TYPE_I32, T), "inp_pos");
    r->mask = tg_set_name(tg_new_tensor_2d(c, TG_TYPE_F32, T, T), "kq_mask");
    tg_set_input(r->inp); tg_set_input(r->pos); tg_set_input(r->mask);
    struct tg_tensor * inpL = r->inp;
    for (int l = 0; l < NL; l++) {
        struct tg_tensor * cur = tg_mul(c, tg_rms_norm(c, inpL, 1e-5f), w->attn_norm[l]);
        tg_format_name(cur, "attn_norm-%d", l);
        struct tg_tensor * q = tg_reshape_3d(c, tg_mul_mat(c, w->wq[l], cur), HD, NH, T);
        struct tg_tensor * k = tg_reshape_3d(c, tg_mul_mat(c, w->wk[l], cur), HD, NH, T);
        struct tg_tensor * v = tg_reshape_3d(c, tg_mul_mat(c, w->wv[l], cur), HD, NH, T);
        q = tg_format_name(tg_rope(c, q, r->pos, HD, TG_ROPE_NORMAL, 10000.0f, 1.0f), "Qcur-%d", l);
        k = tg_format_name(tg_rope(c, k, r->pos, HD, TG_ROPE_NORMAL, 10000.0f, 1.0f), "Kcur-%d", l);
        struct tg_tensor * qp = tg_permute(c, q, 0, 2, 1, 3);                    // [HD, T, NH]
        struct tg_tensor * kp = tg_permute(c, k, 0, 2, 1, 3);                    // [HD, T, NH]
        struct tg_tensor * kq = tg_format_name(tg_mul_mat(c, kp, qp), "kq-%d", l); // [T, T, NH]
        kq = tg_format_name(tg_soft_max_ext(c, kq, r->mask, 1.0f / sqrtf((float) HD), 0.0f), "kq_soft_max-%d", l);
        struct tg_tensor * vt = tg_cont(c, tg_permute(c, v, 1, 2, 0, 3));        // [T, HD, NH]
        struct tg_tensor * kqv = tg_mul_mat(c, vt, kq);                          // [HD, T, NH]
        struct tg_tensor * merged = tg_cont_4d(c, tg_permute(c, kqv, 0, 2, 1, 3), E, T, 1, 1);
        cur = tg_mul_mat(c, w->wo[l], merged);
        struct tg_tensor * ffn_inp = tg_format_name(tg_add(c, cur, inpL), "ffn_inp-%d", l);
        cur = tg_mul(c, tg_rms_norm(c, ffn_inp, 1e-5f), w->ffn_norm[l]);
        struct tg_tensor * act = tg_swiglu_split(c, tg_mul_mat(c, w->wgate[l], cur), tg_mul_mat(c, w->wup[l], cur));
        cur = tg_mul_mat(c, w->wdown[l], act);
        inpL = tg_format_name(tg_add(c, cur, ffn_inp), "l_out-%d", l);
        if (l == 0) { r->mid = kq; tg_set_output(kq); }
    }
    struct tg_tensor * cur = tg_mul(c, tg_rms_norm(c, inpL, 1e-5f), w->out_norm);
    r->logits = tg_set_name(tg_mul_mat(c, w->out, cur), "result_output");
    tg_set_output(r->logits);
    r->g = tg_graph_new(c, 2048);
    tg_graph_build_forward(r->g, r->mid);
    tg_graph_build_forward(r->g, r->logits);
}

static void set_llama_inputs(struct lgraph * r) {
    rng_state = 5;
    float x[E * T], m[T * T];
    int32_t p[T];
    for (int i = 0; i < E * T; i++) x[i] = rndf();
    for (int i = 0; i < T; i++) { p[i] = i; for (int j = 0; j < T; j++) m[i * T + j] = j <= i ? 0.0f : -INFINITY; }
    tg_backend_tensor_set(r->inp, x, 0, sizeof x);
    tg_backend_tensor_set(r->pos, p, 0, sizeof p);
    tg_backend_tensor_set(r->mask, m, 0, sizeof m);
}

static void test_llama(struct tg_backend * cpu) {
    struct weights w;
    make_weights(&w, cpu);
    struct lgraph r, ref;
    build_llama(&r, &w);
    build_llama(&ref, &w);
    struct tg_gallocr * ga = tg_gallocr_new(tg_cpu_buffer_type());
    struct tg_gallocr * gr = tg_gallocr_new(tg_cpu_buffer_type());
    tg_gallocr_set_options(gr, (struct tg_gallocr_options) { .no_reuse = true, .no_inplace = true });
    CHECK(tg_gallocr_reserve(ga, r.g) == TG_OK, "llama: reserve the worst case");
    size_t reserved = tg_gallocr_get_buffer_size(ga, 0);
    CHECK(tg_gallocr_alloc_graph(ga, r.g) == TG_OK && tg_gallocr_n_plans(ga) == 1,
          "llama: allocation reuses the reserved plan (%d plan(s))", tg_gallocr_n_plans(ga));
    CHECK(tg_gallocr_alloc_graph(gr, ref.g) == TG_OK, "llama: reference allocated without reuse");
    CHECK(check_invariants(ga, "llama") == 0, "llama: no live overlap, flagged tensors kept");
    // in place per layer: mul(attn_norm), rope q, rope k, soft_max, add(ffn_inp),
    // mul(ffn_norm), add(l_out) = 7; then the final rms_norm and mul = 2
    int expect_inplace = 7 * NL + 2;
    CHECK(tg_gallocr_n_inplace(ga) == expect_inplace, "llama: %d in-place reuses (expected %d)", tg_gallocr_n_inplace(ga), expect_inplace);
    const struct tg_alloc_tensor_info * ki = tg_gallocr_find(ga, r.mid);
    CHECK(ki && ki->kind == TG_ALLOC_INPLACE && ki->inplace_of && strcmp(ki->inplace_of->name, "kq-0") == 0,
          "llama: kq_soft_max-0 took kq-0's range in place");
    size_t used = tg_gallocr_buffer_info(ga, 0)->high_water, flat = tg_gallocr_buffer_info(gr, 0)->high_water;
    CHECK(used < flat / 2, "llama: reuse needs %zu bytes vs %zu without reuse", used, flat);
    CHECK(reserved == tg_gallocr_get_buffer_size(ga, 0), "llama: buffer size stable after alloc (%zu)", reserved);
    set_llama_inputs(&r);
    set_llama_inputs(&ref);
    CHECK(tg_backend_graph_compute(cpu, r.g) == TG_OK && tg_backend_graph_compute(cpu, ref.g) == TG_OK,
          "llama: both computed (%s)", tg_last_error());
    CHECK(same_bytes(r.logits, ref.logits), "llama: logits bitwise equal to the no-reuse allocation");
    CHECK(same_bytes(r.mid, ref.mid), "llama: kq_soft_max-0 (output) bitwise equal");
    float lg[4];
    tg_backend_tensor_get(r.logits, lg, 0, sizeof lg);
    CHECK(isfinite(lg[0]) && isfinite(lg[3]), "llama: logits are finite (%g %g)", lg[0], lg[3]);

    // a second graph of the same shape uses the plan without re-planning
    struct lgraph r2;
    build_llama(&r2, &w);
    CHECK(tg_gallocr_alloc_graph(ga, r2.g) == TG_OK && tg_gallocr_n_plans(ga) == 1 && tg_gallocr_graph_seq(ga) == 2,
          "llama: same-shape graph placed with the same plan (plans %d, seq %llu)",
          tg_gallocr_n_plans(ga), (unsigned long long) tg_gallocr_graph_seq(ga));
    CHECK(r2.logits->data == r.logits->data, "llama: same plan, same offsets for the logits");
    const struct tg_alloc_tensor_info * owners[8];
    size_t off = (size_t) ((char *) r.mid->data - (char *) tg_buffer_get_base(r.mid->buffer));
    int n_own = tg_gallocr_find_overlapping(ga, r.mid->buffer, off, tg_nbytes(r.mid), owners, 8);
    CHECK(n_own >= 1 && owners[0]->tensor != r.mid, "llama: the first graph's kq_soft_max-0 bytes now belong to the new graph (%d owners, e.g. %s)",
          n_own, n_own ? owners[0]->tensor->name : "-");
    tg_context_free(r2.ctx);

    // a larger graph does not fit: re-planned, buffer grown
    struct tg_context * bc = new_ctx(1);
    struct tg_graph * big = tg_graph_new(bc, 64);
    struct tg_tensor * bi = tg_new_tensor_1d(bc, TG_TYPE_F32, 1 << 16);
    tg_set_input(bi);
    tg_graph_build_forward(big, tg_sqr(bc, tg_silu(bc, bi)));
    CHECK(tg_gallocr_alloc_graph(ga, big) == TG_OK && tg_gallocr_n_plans(ga) == 2, "different graph: re-planned");
    CHECK(tg_gallocr_get_buffer_size(ga, 0) >= (size_t) 2 << 18, "re-planned buffer grew to %zu", tg_gallocr_get_buffer_size(ga, 0));
    tg_context_free(bc);

    tg_gallocr_free(ga); tg_gallocr_free(gr);
    tg_context_free(r.ctx); tg_context_free(ref.ctx);
    tg_buffer_free(w.buf);
    tg_context_free(w.ctx);
}

// Free-list behaviour on a hand-made chain: a -> b -> c, with a kept alive.
static void test_freelist(void) {
    struct tg_context * c = new_ctx(1);
    struct tg_tensor * x = tg_set_name(tg_new_tensor_1d(c, TG_TYPE_F32, 64), "x");   // 256 B
    tg_set_input(x);
    struct tg_tensor * a = tg_set_name(tg_sqr(c, x), "a");              // planned
    struct tg_tensor * b = tg_set_name(tg_silu(c, a), "b");             // in place of a
    struct tg_tensor * d = tg_set_name(tg_add(c, b, x), "d");           // in place of b
    struct tg_tensor * e = tg_set_name(tg_mul(c, d, d), "e");           // d read twice: new range
    tg_set_output(e);
    struct tg_graph * g = tg_graph_new(c, 16);
    tg_graph_build_forward(g, e);
    struct tg_gallocr * ga = tg_gallocr_new(tg_cpu_buffer_type());
    CHECK(tg_gallocr_alloc_graph(ga, g) == TG_OK, "chain allocated");
    const struct tg_alloc_tensor_info * ia = tg_gallocr_find(ga, a), * ib = tg_gallocr_find(ga, b),
                                      * id = tg_gallocr_find(ga, d), * ie = tg_gallocr_find(ga, e), * ix = tg_gallocr_find(ga, x);
    CHECK(ib->kind == TG_ALLOC_INPLACE && ib->inplace_of == a && ib->offset == ia->offset, "silu took sqr's range in place");
    CHECK(id->kind == TG_ALLOC_INPLACE && id->inplace_of == b, "add took silu's range in place (x is the second source)");
    CHECK(ie->kind == TG_ALLOC_PLANNED && ie->offset != id->offset && ie->offset != ix->offset, "mul(d, d) gets a new range");
    CHECK(ix->first_step == 0 && ix->last_step == g->n_nodes - 1, "input x live for the whole graph");
    CHECK(ia->last_step == ib->first_step && ib->last_step == id->first_step, "in-place handoffs at single steps");
    CHECK(tg_gallocr_buffer_info(ga, 0)->high_water == 3 * 256, "high water: x, a-chain, e = 768 bytes (%zu)",
          tg_gallocr_buffer_info(ga, 0)->high_water);
    CHECK(strcmp(tg_alloc_kind_name(TG_ALLOC_INPLACE), "inplace") == 0, "kind names");
    tg_gallocr_free(ga);
    tg_context_free(c);
}

int main(void) {
    struct tg_backend * cpu = tg_backend_cpu_init();
    tg_backend_cpu_set_n_threads(cpu, 2);
    test_freelist();
    test_random(cpu);
    test_llama(cpu);
    tg_backend_free(cpu);
    return tg_check_finish("test_alloc");
}
