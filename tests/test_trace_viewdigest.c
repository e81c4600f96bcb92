// test_trace_viewdigest.c - the element-set digest of binary16 views
// (trace/FORMAT.md 1.5): a function of the logical contents only (a view and
// its contiguous copy agree; one changed element changes it), summaries as
// computed in double from the values, and the recorder's memo (the digest
// brought up to date from the elements written since) bit for bit equal to
// the digest from scratch: on K- and V-cache layouts under random stores,
// growth, shrinking and host writes; and in a traced generation on the tiny
// model (recompute vs memo, with and without the hashing thread, a cache
// clear between two sequences).
#include "check.h"
#include "tg/cpu.h"
#include "tg/llama.h"
#include "tg/trace-read.h"
#include "tg/trace.h"
#include "trace_evals.h"
#include "trace/viewdigest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x1234567u;
static uint32_t rnd(void) { rng = rng * 6364136223846793005ull + 1442695040888963407ull; return (uint32_t) (rng >> 33); }

static uint16_t rnd_half(int special) {   // mostly small values; with `special`, some zeros, NaN, infinities
    if (special && rnd() % 50 == 0) { static const uint16_t sp[] = { 0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x0001 }; return sp[rnd() % 6]; }
    return tg_fp32_to_fp16(((float) (rnd() % 20001) - 10000.0f) / 4096.0f);
}

struct dg { bool ok; uint64_t hash; struct tg_trace_summary s; double sk[TG_TRACE_SKETCH_N]; };

static bool dg_same(const struct dg * a, const struct dg * b) {
    return a->ok && b->ok && a->hash == b->hash && !memcmp(&a->s, &b->s, sizeof(a->s)) && !memcmp(a->sk, b->sk, sizeof(a->sk));
}

static struct dg scratch(const void * data, const int64_t ne[4], const size_t nb[4]) {
    struct dg d = { 0 };
    d.ok = tg_trace_set_digest(data, TG_TYPE_F16, ne, nb, &d.hash, &d.s, d.sk);
    return d;
}

// ---- a function of the logical contents -----------------------------------------------------

static void test_pure(void) {
    const int64_t ne[4] = { 24, 40, 3, 1 };
    const size_t n = 24 * 40 * 3;
    uint16_t * a = malloc(n * 2), * t = malloc(n * 2);
    for (size_t i = 0; i < n; i++) a[i] = rnd_half(1);
    // the same logical tensor stored dim 1 outermost: t[(i1 * 3 + i2) * 24 + i0]
    for (int64_t i2 = 0; i2 < 3; i2++)
        for (int64_t i1 = 0; i1 < 40; i1++)
            for (int64_t i0 = 0; i0 < 24; i0++) t[(i1 * 3 + i2) * 24 + i0] = a[(i2 * 40 + i1) * 24 + i0];
    const size_t nbc[4] = { 2, 48, 48 * 40, 48 * 40 * 3 }, nbt[4] = { 2, 48 * 3, 48, 48 * 40 * 3 };
    struct dg x = scratch(a, ne, nbc), y = scratch(t, ne, nbt);
    tg_trace_vd_force_scalar(true);
    struct dg xs = scratch(a, ne, nbc);
    tg_trace_vd_force_scalar(false);
    CHECK(dg_same(&x, &xs), "the %s path and the scalar path: the same digest (%016llx, %016llx)", tg_cpu_simd_name(),
          (unsigned long long) x.hash, (unsigned long long) xs.hash);
    CHECK(x.ok && dg_same(&x, &y), "a strided view and its contiguous copy: the same digest (%016llx, %016llx)",
          (unsigned long long) x.hash, (unsigned long long) y.hash);
    // the summary against one computed here in double
    double sum = 0, sq = 0, mn = INFINITY, mx = -INFINITY;
    uint64_t nan = 0, inf = 0, zero = 0;
    for (size_t i = 0; i < n; i++) {
        double v = tg_fp16_to_fp32(a[i]);
        if (v != v) { nan++; continue; }
        if (v < mn) mn = v;
        if (v > mx) mx = v;
        if (isinf(v)) { inf++; continue; }
        if (v == 0) zero++;
        sum += v; sq += v * v;
    }
    const double fin = (double) (n - nan - inf);
    CHECK(x.s.n_elem == n && x.s.n_nan == nan && x.s.n_inf == inf && x.s.n_zero == zero && x.s.min == mn && x.s.max == mx,
          "summary counts and extremes (%llu NaN, %llu inf, %llu zeros, min %g max %g)", (unsigned long long) nan,
          (unsigned long long) inf, (unsigned long long) zero, x.s.min, x.s.max);
    CHECK(fabs(x.s.mean - sum / fin) <= 1e-12 * (fabs(sum / fin) + 1) && fabs(x.s.rms - sqrt(sq / fin)) <= 1e-12 * sqrt(sq / fin),
          "summary mean %.15g (double %.15g), rms %.15g (double %.15g)", x.s.mean, sum / fin, x.s.rms, sqrt(sq / fin));
    // one element changed, two swapped, the shape changed: another hash
    a[777] ^= 1;
    struct dg z = scratch(a, ne, nbc);
    a[777] ^= 1;
    uint16_t k = a[5]; a[5] = a[6]; a[6] = k;
    struct dg w = scratch(a, ne, nbc);
    const int64_t ne2[4] = { 24, 120, 1, 1 };
    struct dg r = scratch(a, ne2, nbc);
    CHECK(z.hash != x.hash && (a[5] == a[6] || w.hash != x.hash) && r.hash != w.hash,
          "a changed bit, swapped elements, another shape: other hashes");
    const int64_t ne3[4] = { 24, 40, 3, 1 };
    const size_t over[4] = { 2, 2, 48, 48 * 3 };
    CHECK(!tg_trace_set_digest(a, TG_TYPE_F16, ne3, over, NULL, NULL, NULL) &&
          !tg_trace_set_digest(a, TG_TYPE_F32, ne3, nbc, NULL, NULL, NULL),
          "overlapping strides and other types: not covered");
    free(a);
    free(t);
}

// ---- the memo against the digest from scratch ------------------------------------------------

// A cache of CTX positions of E = D * H values (D per head), as the llama
// runtime lays it out: K [E, CTX] (a view [D, n, H] with strides 2, 2E, 2D)
// and V transposed [CTX, E] (a view [n, D, H] with strides 2, 2 CTX, 2 D CTX).
#define CTX 96
#define D   16
#define H   4
#define E   (D * H)

static int memo_run(bool v_layout, int steps) {
    uint16_t * mem = calloc((size_t) CTX * E, 2);
    struct vd_memo * m = tg_trace_vd_new();
    int bad = 0, n = 0, compared = 0;
    for (int step = 0; step < steps && mem && m; step++) {
        const int op = (int) (rnd() % 10);
        if (op < 6) {   // store position p (a node writing one K row or one V column)
            const int p = (int) (rnd() % CTX);
            int64_t wne[4] = { E, 1, 1, 1 };
            size_t wnb[4] = { 2, 2 * E, 2 * E, 2 * E };
            uint16_t * w = mem + (size_t) p * E;
            if (v_layout) {
                wne[0] = 1; wne[1] = E;
                wnb[1] = 2 * CTX; wnb[2] = wnb[3] = 2 * CTX * E;
                w = mem + p;
            }
            tg_trace_vd_before_write(m, w, TG_TYPE_F16, wne, wnb, NULL);
            for (int k = 0; k < E; k++) w[v_layout ? (size_t) k * CTX : (size_t) k] = rnd_half(1);
        } else if (op < 9) {   // the view over n positions (grown or shrunk by a step of 8 or more)
            n = 8 + 8 * (int) (rnd() % (CTX / 8));
            if (n > CTX) n = CTX;
            int64_t ne[4] = { D, n, H, 1 };
            size_t nb[4] = { 2, 2 * E, 2 * D, 2 * E * CTX };
            if (v_layout) { ne[0] = n; ne[1] = D; nb[1] = 2 * CTX; nb[2] = 2 * CTX * D; nb[3] = 2 * CTX * E; }
            struct dg a = { 0 }, b = scratch(mem, ne, nb);
            a.ok = tg_trace_vd_digest(m, 7, mem, TG_TYPE_F16, ne, nb, &a.hash, &a.s, a.sk);
            compared++;
            if (!dg_same(&a, &b) && bad++ < 3)
                fprintf(stderr, "  step %d (n %d): memo %016llx mean %.17g, scratch %016llx mean %.17g\n", step, n,
                        (unsigned long long) a.hash, a.s.mean, (unsigned long long) b.hash, b.s.mean);
        } else {   // a host write the memo cannot follow
            const int p = (int) (rnd() % CTX);
            tg_trace_vd_invalidate(m, (uintptr_t) (mem + (size_t) p * E), (uintptr_t) (mem + (size_t) p * E + 3));
            mem[(size_t) p * E + 1] = rnd_half(0);
        }
    }
    struct vd_stats st;
    tg_trace_vd_stats(m, &st);
    CHECK(bad == 0 && compared > 0, "%s layout: %d digests from the memo equal the digest from scratch (%d differ)",
          v_layout ? "V (transposed)" : "K", compared, bad);
    CHECK(st.n_memo > (uint64_t) compared / 4 && st.n_taken_out > 0 && st.n_invalidated > 0,
          "%s layout: %llu brought up to date, %llu from scratch, %llu elements taken out before writes, %llu invalidated",
          v_layout ? "V" : "K", (unsigned long long) st.n_memo, (unsigned long long) st.n_scratch,
          (unsigned long long) st.n_taken_out, (unsigned long long) st.n_invalidated);
    tg_trace_vd_free(m);
    free(mem);
    return bad;
}

// ---- a traced generation ------------------------------------------------------------------

struct run { struct trace_ev * ev; int n; struct tg_trace_recorder_stats st; int n_set; };

// Every EVAL of the trace (trace_evals.h); each with the element-set digest
// must come with a scheme-2 sketch.
static bool read_evals(const char * path, struct run * out) {
    out->ev = trace_read_evals(path, &out->n);
    bool ok = out->ev != NULL;
    for (int i = 0; ok && i < out->n; i++) {
        const struct trace_ev * v = &out->ev[i];
        if (!(v->e.flags & TG_TRACE_EVAL_SETDIGEST)) continue;
        out->n_set++;
        if (!v->has_sketch || v->sk.scheme != 2) {
            fprintf(stderr, "  %s: eval %d (node %d) has the element-set digest without a scheme-2 sketch\n", path, i, v->e.node);
            ok = false;
        }
    }
    return ok;
}

static bool generate(struct tg_llama_model * model, int view_digest, int hash_thread, const char * path, struct run * out) {
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = 128;
    cp.n_threads = 1;
    struct tg_llama_context * ctx = tg_llama_context_new(model, &cp);
    struct tg_trace_options opt = tg_trace_default_options();
    opt.view_digest = view_digest;
    opt.hash_thread = hash_thread;
    struct tg_trace_recorder * rec = ctx ? tg_trace_attach(NULL, path, &opt) : NULL;   // global: sees every write
    bool ok = rec != NULL;
    int32_t prompt[12] = { 1, 15043, 3186, 29991, 450, 4996, 17354, 1701, 29916, 432, 17204, 975 };
    for (int seq = 0; seq < 2; seq++) {   // a second sequence after clearing the cache
        if (seq) tg_llama_kv_clear(ctx);
        ok = ok && tg_llama_decode(ctx, prompt, 12 - 4 * seq, 0) == TG_OK;
        for (int k = 0; ok && k < 44; k++) {
            int32_t tok = 100 + 37 * k + seq;
            ok = tg_llama_decode(ctx, &tok, 1, 12 - 4 * seq + k) == TG_OK;
        }
    }
    if (!ok) fprintf(stderr, "  generation (view_digest %d, hash_thread %d): %s\n", view_digest, hash_thread, tg_last_error());
    if (rec) tg_trace_recorder_get_stats(rec, &out->st);
    ok = tg_trace_detach(rec) == TG_OK && ok;
    tg_llama_context_free(ctx);
    return ok && read_evals(path, out);
}

static int compare(const struct run * a, const struct run * b, const char * what) {
    if (a->n != b->n) { fprintf(stderr, "%s: %d evals against %d\n", what, b->n, a->n); return 1; }
    int bad = 0;
    for (int i = 0; i < a->n; i++) {
        const struct tg_trace_eval * x = &a->ev[i].e, * y = &b->ev[i].e;
        const uint32_t mask = ~(uint32_t) TG_TRACE_EVAL_TIME;
        bool same = x->node == y->node && (x->flags & mask) == (y->flags & mask) && x->hash == y->hash &&
                    !memcmp(&x->sum, &y->sum, sizeof(x->sum)) && a->ev[i].has_sketch == b->ev[i].has_sketch &&
                    (!a->ev[i].has_sketch || !memcmp(a->ev[i].sk.v, b->ev[i].sk.v, sizeof(a->ev[i].sk.v)));
        if (!same && bad++ < 3)
            fprintf(stderr, "  %s: eval %d (node %d): %016llx flags %x / %016llx flags %x\n", what, i, x->node,
                    (unsigned long long) x->hash, x->flags, (unsigned long long) y->hash, y->flags);
    }
    return bad;
}

static void test_generation(void) {
    char model_path[1024];
    snprintf(model_path, sizeof(model_path), "%s/tiny-f32.gguf", TG_TEST_DATA);
    struct tg_llama_model * model = tg_llama_model_load(model_path, NULL);
    CHECK(model != NULL, "model loaded: %s", model ? model_path : tg_last_error());
    if (!model) return;
    struct run r[4] = { 0 };
    const char * path = "test_trace_viewdigest.tgt";
    bool ok = generate(model, 1, 0, path, &r[0]) && generate(model, 0, 0, path, &r[1]) && generate(model, 0, 1, path, &r[2]) &&
              generate(model, 0, 2, path, &r[3]);
    CHECK(ok, "four traced generations (recomputed; memo; memo with the hashing thread, which takes the stores' "
          "elements out ahead; the thread held back until waited for)");
    if (ok) {
        CHECK(r[0].n_set > 0 && r[1].n_set == r[0].n_set, "KV-cache views carry the element-set digest and a scheme-2 "
              "sketch (%d of %d evals)", r[1].n_set, r[1].n);
        CHECK(compare(&r[0], &r[1], "memo") == 0, "memo: every eval as recomputed");
        CHECK(compare(&r[0], &r[2], "memo, thread") == 0, "memo with the hashing thread: every eval as recomputed");
        CHECK(compare(&r[0], &r[3], "memo, held thread") == 0, "memo with the thread held back: every eval as recomputed");
        CHECK(r[2].st.n_views_memo > r[2].st.n_views_scratch, "with the thread too the memo did the work (%llu, %llu)",
              (unsigned long long) r[2].st.n_views_memo, (unsigned long long) r[2].st.n_views_scratch);
        CHECK(r[0].st.n_views_memo == 0 && r[1].st.n_views_memo > r[1].st.n_views_scratch && r[1].st.n_views_scratch > 4,
              "the memo did the work: %llu views brought up to date, %llu from scratch (the first sight of each, "
              "the cleared cache's)", (unsigned long long) r[1].st.n_views_memo, (unsigned long long) r[1].st.n_views_scratch);
    }
    for (int i = 0; i < 4; i++) free(r[i].ev);
    remove(path);
    tg_llama_model_free(model);
}

int main(void) {
    test_pure();
    for (int scalar = 0; scalar < 2; scalar++) {   // (every path: the same integer sums)
        tg_trace_vd_force_scalar(scalar);
        memo_run(false, 3000);
        memo_run(true, 3000);
    }
    tg_trace_vd_force_scalar(false);
    test_generation();
    return tg_check_finish("test_trace_viewdigest");
}
