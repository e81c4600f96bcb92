// test_trace_sketch.c - value sketches (SKETCH records, format 1.2) estimate
// the distance between two runs without their contents:
//  - a strided view and a transposed view sketch exactly like their
//    contiguous copies (logical element order); f16 like the same values in f32;
//  - every SIMD level the engine can run at (scalar, AVX2, AVX-512 paths of
//    the sketch, chosen at run time) gives the same sketch bit for bit, on
//    lengths and offsets that are not multiples of 16, NaN and infinities;
//  - on random vectors the estimate of ||a-b|| / ||b|| is unbiased and within
//    30% in nearly every trial;
//  - on the tiny reference model, F32 against Q8_0 and against Q4_0 (the same
//    tokens, every node's contents dumped in the same runs): the sketch
//    estimate is within 30% of the true relative L2 difference for >= 95% of
//    the nodes (the fraction is printed); the same for the tiny model on the
//    CPU against BLAS (40 prompt tokens, so BLAS takes the matrix products:
//    differences near float rounding);
//  - `tgdb diff` on traces without contents compares by sketch and flags the
//    nodes that introduce divergence (the embedding lookup of quantized
//    weights is one).
#include "check.h"
#include "cpu/cpu-impl.h"
#include "tg/core.h"
#include "tg/llama.h"
#include "tg/trace-diff.h"
#include "tg/trace-read.h"
#include "tg/trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rng_state = 12345;
static double urand(void) {   // (0, 1)
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return ((double) (rng_state >> 11) + 0.5) / 9007199254740992.0;
}
static double nrand(void) { return sqrt(-2 * log(urand())) * cos(6.283185307179586 * urand()); }

static bool sketch_of(const void * data, int type, const int64_t ne[4], const size_t nb[4], double * sk,
                      struct tg_trace_summary * s) {
    return tg_trace_hash_summarize_sketch(data, type, ne, nb, NULL, s, sk);
}

static void test_views(void) {
    enum { R = 7, C = 37 };   // a [C, R] matrix (C fastest), rows not a multiple of 16
    float dense[R * C], padded[R * 40], trans[C * R];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            float v = (float) nrand();
            dense[r * C + c] = v;
            padded[r * 40 + c] = v;
            trans[c * R + r] = v;   // the transpose, contiguous: [R, C]
        }
    double a[TG_TRACE_SKETCH_N], b[TG_TRACE_SKETCH_N], t[TG_TRACE_SKETCH_N], v[TG_TRACE_SKETCH_N];
    struct tg_trace_summary s;
    const int64_t ne[4] = { C, R, 1, 1 }, ne_t[4] = { R, C, 1, 1 };
    const size_t nb[4] = { 4, 4 * C, 4 * C * R, 4 * C * R };
    const size_t nb_pad[4] = { 4, 4 * 40, 4 * 40 * R, 4 * 40 * R };
    const size_t nb_view_t[4] = { 4 * C, 4, 4 * C * R, 4 * C * R };   // dense read as its transpose
    const size_t nb_t[4] = { 4, 4 * R, 4 * R * C, 4 * R * C };
    bool ok = sketch_of(dense, TG_TYPE_F32, ne, nb, a, &s) && sketch_of(padded, TG_TYPE_F32, ne, nb_pad, b, &s) &&
              sketch_of(dense, TG_TYPE_F32, ne_t, nb_view_t, v, &s) && sketch_of(trans, TG_TYPE_F32, ne_t, nb_t, t, &s);
    CHECK(ok && memcmp(a, b, sizeof(a)) == 0, "a strided view sketches exactly like its contiguous copy");
    CHECK(ok && memcmp(v, t, sizeof(v)) == 0, "a transposed view sketches exactly like its contiguous transpose");
    CHECK(ok && memcmp(a, t, sizeof(a)) != 0, "(and the transpose's logical order gives another sketch)");
    double norm2 = 0, sk2 = 0;
    for (int i = 0; i < R * C; i++) norm2 += (double) dense[i] * dense[i];
    for (int k = 0; k < TG_TRACE_SKETCH_N; k++) sk2 += a[k] * a[k];
    CHECK(sk2 > 0.5 * norm2 && sk2 < 2 * norm2, "the sketch's energy is about the values' (%.3g vs %.3g)", sk2, norm2);

    tg_fp16_t h[R * C];
    float hf[R * C];
    for (int i = 0; i < R * C; i++) { h[i] = tg_fp32_to_fp16(dense[i]); hf[i] = tg_fp16_to_fp32(h[i]); }
    const size_t nb_h[4] = { 2, 2 * C, 2 * C * R, 2 * C * R };
    ok = sketch_of(h, TG_TYPE_F16, ne, nb_h, a, &s) && sketch_of(hf, TG_TYPE_F32, ne, nb, b, &s);
    CHECK(ok && memcmp(a, b, sizeof(a)) == 0, "f16 values sketch like the same values in f32");

    float nan_in[R * C];
    memcpy(nan_in, dense, sizeof(nan_in));
    nan_in[5] = NAN;
    nan_in[77] = INFINITY;
    float zeroed[R * C];
    memcpy(zeroed, dense, sizeof(zeroed));
    zeroed[5] = zeroed[77] = 0;
    ok = sketch_of(nan_in, TG_TYPE_F32, ne, nb, a, &s) && sketch_of(zeroed, TG_TYPE_F32, ne, nb, b, &s);
    CHECK(ok && memcmp(a, b, sizeof(a)) == 0, "NaN and infinities add nothing to the sketch");
}

// The estimator on random vectors of several sizes and distances.
static void test_estimator(void) {
    enum { TRIALS = 400, NMAX = 6000 };
    static float a[NMAX], b[NMAX];
    int within = 0;
    double sum_ratio = 0;
    for (int trial = 0; trial < TRIALS; trial++) {
        int n = trial % 4 == 0 ? 40 : trial % 4 == 1 ? 300 : trial % 4 == 2 ? 2000 : NMAX;
        double eps = trial % 3 == 0 ? 1e-3 : trial % 3 == 1 ? 1e-2 : 0.2;
        double d2 = 0, b2 = 0;
        for (int i = 0; i < n; i++) {
            b[i] = (float) (nrand() * (i % 64 == 3 ? 20 : 1));   // an outlier feature
            a[i] = b[i] + (float) (eps * nrand());
            d2 += ((double) a[i] - b[i]) * ((double) a[i] - b[i]);
            b2 += (double) b[i] * b[i];
        }
        struct tg_trace_sketch sa = { .n = TG_TRACE_SKETCH_N, .scheme = 1 }, sb = sa;
        struct tg_trace_summary sum;
        const int64_t ne[4] = { 64, (n + 63) / 64, 1, 1 };
        int64_t ne1[4] = { n, 1, 1, 1 };
        const size_t nb[4] = { 4, 4 * (size_t) n, 4 * (size_t) n, 4 * (size_t) n };
        (void) ne;
        double va[TG_TRACE_SKETCH_N], vb[TG_TRACE_SKETCH_N];
        sketch_of(a, TG_TYPE_F32, ne1, nb, va, &sum);
        sketch_of(b, TG_TYPE_F32, ne1, nb, vb, &sum);
        for (int k = 0; k < TG_TRACE_SKETCH_N; k++) { sa.v[k] = (float) va[k]; sb.v[k] = (float) vb[k]; }
        double err, est = tg_diff_sketch_rel_l2(&sa, &sb, &sum, &err), truth = sqrt(d2 / b2);
        within += fabs(est - truth) <= 0.3 * truth;
        sum_ratio += est / truth;
    }
    double mean = sum_ratio / TRIALS;
    CHECK(within >= TRIALS * 97 / 100, "random vectors: estimate within 30%% of the true rel L2 in %d of %d trials",
          within, TRIALS);
    CHECK(fabs(mean - 1) < 0.05, "random vectors: mean estimate / truth %.3f (unbiased within 5%%)", mean);
}

// Records a run of the model (the same tokens every time) into path: a
// prompt of n_prompt tokens (5, or longer so that a BLAS backend takes the
// matrix products), then 3 tokens; devices as the llama context takes them.
static bool record_on(const char * model_name, const char * path, bool contents, int n_prompt, const char * devices,
                      int n_threads) {
    char mp[1024];
    snprintf(mp, sizeof(mp), "%s/%s", TG_TEST_DATA, model_name);
    struct tg_llama_model * model = tg_llama_model_load(mp, NULL);
    if (!model) { printf("  %s: %s\n", mp, tg_last_error()); return false; }
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = n_threads;
    cp.devices = devices;
    struct tg_llama_context * ctx = tg_llama_context_new(model, &cp);
    struct tg_trace_options opt = tg_trace_default_options();
    opt.contents = contents ? "*" : NULL;
    opt.zstd_level = 0;
    struct tg_trace_recorder * rec = ctx ? tg_trace_attach(tg_llama_context_sched(ctx), path, &opt) : NULL;
    bool ok = rec != NULL;
    int32_t prompt[48] = { 1, 15043, 3186, 29991, 450 };
    for (int k = 5; k < 48; k++) prompt[k] = 300 + 137 * k;
    ok = ok && tg_llama_decode(ctx, prompt, n_prompt, 0) == TG_OK;
    for (int k = 0; ok && k < 3; k++) {
        int32_t tok = 1000 + 77 * k;
        ok = tg_llama_decode(ctx, &tok, 1, n_prompt + k) == TG_OK;
    }
    if (rec && tg_trace_detach(rec) != TG_OK) ok = false;
    if (!ok) printf("  recording %s: %s\n", model_name, tg_last_error());
    tg_llama_context_free(ctx);
    tg_llama_model_free(model);
    return ok;
}

static bool record(const char * model_name, const char * path, bool contents) {
    return record_on(model_name, path, contents, 5, NULL, 2);
}

// True rel L2 of node (graph, node, seq) between the two traces' contents; NAN if not both there.
static double true_rel_l2(struct tg_trace * ta, struct tg_trace * tb, uint32_t g, int node, uint32_t seq) {
    int ca = tg_trace_find_contents(ta, g, node, seq), cb = tg_trace_find_contents(tb, g, node, seq);
    if (ca < 0 || cb < 0) return NAN;
    int64_t na = 0, nb = 0;
    float * a = tg_trace_contents_f32(ta, ca, &na), * b = tg_trace_contents_f32(tb, cb, &nb);
    double d2 = 0, b2 = 0;
    bool ok = a && b && na == nb;
    for (int64_t i = 0; ok && i < na; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i])) continue;
        d2 += ((double) a[i] - b[i]) * ((double) a[i] - b[i]);
        b2 += (double) b[i] * b[i];
    }
    free(a);
    free(b);
    if (!ok) return NAN;
    return b2 > 0 ? sqrt(d2 / b2) : (d2 > 0 ? INFINITY : 0);
}

static int by_double(const void * a, const void * b) {
    const double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

// Every node of A with a sketch against B: the fraction whose estimate is within 30% of the truth.
static void compare_runs(const char * label, const char * pa, const char * pb, double min_differ) {
    struct tg_trace * ta = tg_trace_open(pa), * tb = tg_trace_open(pb);
    CHECK(ta && tb, "%s: traces open", label);
    if (!ta || !tb) { tg_trace_close(ta); tg_trace_close(tb); return; }
    int n = 0, within = 0, differing = 0, shown = 0;
    double * truths = malloc((size_t) (tg_trace_n_evals(ta) + 1) * sizeof(double));
    for (int i = 0; i < tg_trace_n_evals(ta); i++) {
        struct tg_trace_eval ea, eb;
        if (!tg_trace_get_eval(ta, i, &ea) || !(ea.flags & TG_TRACE_EVAL_SKETCH)) continue;
        int j = tg_trace_find_eval(tb, ea.graph_id, ea.node, ea.compute_seq);
        if (j < 0 || !tg_trace_get_eval(tb, j, &eb) || !(eb.flags & TG_TRACE_EVAL_SKETCH)) continue;
        int sa = tg_trace_find_sketch(ta, ea.graph_id, ea.node, ea.compute_seq);
        int sb = tg_trace_find_sketch(tb, eb.graph_id, eb.node, eb.compute_seq);
        struct tg_trace_sketch ka, kb;
        if (sa < 0 || sb < 0 || !tg_trace_get_sketch(ta, sa, &ka) || !tg_trace_get_sketch(tb, sb, &kb)) continue;
        double truth = true_rel_l2(ta, tb, ea.graph_id, ea.node, ea.compute_seq);
        if (isnan(truth) || ea.sum.n_nan || eb.sum.n_nan) continue;
        double err, est = tg_diff_sketch_rel_l2(&ka, &kb, &eb.sum, &err);
        n++;
        if (truth > 0 && truths) truths[differing] = truth;
        differing += truth > 0;
        bool ok = truth == 0 ? est == 0 : fabs(est - truth) <= 0.3 * truth;
        within += ok;
        if (!ok && shown++ < 5) {
            char name[TG_TRACE_NAME];
            int gi = tg_trace_find_graph(ta, ea.graph_id);
            printf("  %s: graph %u node %d %s: estimate %.4g (+-%.2g), true %.4g\n", label, ea.graph_id, ea.node,
                   tg_trace_tensor_name(ta, gi, ea.node, name), est, err, truth);
        }
    }
    double median = NAN;
    if (truths && differing) {
        qsort(truths, (size_t) differing, sizeof(double), by_double);
        median = truths[differing / 2];
    }
    free(truths);
    printf("%s: sketch estimate within 30%% of the true relative L2 for %d of %d nodes (%.1f%%; %d differ, median "
           "true relative L2 %.2g)\n", label, within, n, n ? 100.0 * within / n : 0.0, differing, median);
    CHECK(n > 100 && differing > min_differ * n, "%s: %d nodes compared, %d of them differ (> %.0f%%)", label, n, differing,
          100 * min_differ);
    CHECK(n > 0 && within >= 0.95 * n, "%s: within 30%% for %.1f%% of the nodes (>= 95%%)", label,
          n ? 100.0 * within / n : 0.0);
    tg_trace_close(ta);
    tg_trace_close(tb);
}

// tg_diff_run on traces without contents: sketches are the evidence.
static void diff_without_contents(const char * pa, const char * pb) {
    struct tg_trace * ta = tg_trace_open(pa), * tb = tg_trace_open(pb);
    struct tg_diff_side * a = ta ? tg_diff_side_trace(ta) : NULL, * b = tb ? tg_diff_side_trace(tb) : NULL;
    struct tg_diff_result r;
    bool ok = a && b && tg_diff_run(a, b, NULL, &r) == TG_OK;
    CHECK(ok, "diff of the runs without contents");
    if (ok) {
        CHECK(r.evidence[TG_DIFF_EV_SKETCH] > 0 && r.evidence[TG_DIFF_EV_CONTENTS] == 0 &&
              r.evidence[TG_DIFF_EV_SUMMARY] == 0,
              "compared by sketch (%d pairs), not by summaries (%d) or contents (%d)", r.evidence[TG_DIFF_EV_SKETCH],
              r.evidence[TG_DIFF_EV_SUMMARY], r.evidence[TG_DIFF_EV_CONTENTS]);
        int embd = -1, n_err = 0;
        for (int k = 0; k < r.n_pairs; k++) {
            const struct tg_diff_pair * p = &r.pairs[k];
            if (p->evidence != TG_DIFF_EV_SKETCH) continue;
            n_err += !(p->rel_l2_err > 0 && p->rel_l2_err < 0.1 * p->rel_l2);
            if (embd < 0 && !strcmp(p->op, "GET_ROWS") && !strcmp(p->name, "inp_embd")) embd = k;
        }
        CHECK(n_err == 0, "every sketch estimate comes with its expected error (under 10%% of it)");
        CHECK(embd >= 0 && r.pairs[embd].introduced && r.pairs[embd].rel_l2 > 1e-3,
              "inp_embd (quantized embeddings) is flagged as introducing divergence (rel_l2 ~ %.3g)",
              embd >= 0 ? r.pairs[embd].rel_l2 : NAN);
        CHECK(r.n_introduced > 0 && r.n_introduced < r.evidence[TG_DIFF_EV_SKETCH] / 2,
              "%d of %d nodes introduce divergence (the others inherit it)", r.n_introduced,
              r.evidence[TG_DIFF_EV_SKETCH]);
        tg_diff_result_free(&r);
    }
    tg_diff_side_free(a);
    tg_diff_side_free(b);
    tg_trace_close(ta);
    tg_trace_close(tb);
}

// The sketch's block paths follow the engine's SIMD level: the same bits at
// every level this CPU has (odd lengths, a start inside a block, NaN, Inf).
static void test_paths(void) {
    enum { N = 4099, NL = 300001 };   // NL: past the blocks whose hash fields are tabulated (16384)
    static float x[N + 5], xl[NL], xn[NL];
    for (int i = 0; i < N + 5; i++) x[i] = (float) nrand() * (i % 97 == 0 ? 1e30f : 1.0f);
    x[17] = NAN; x[300] = INFINITY; x[301] = -INFINITY; x[1000] = -0.0f; x[2001] = 1e-40f;
    for (int i = 0; i < NL; i++) xl[i] = xn[i] = (float) nrand();   // xl finite: the unmasked fast path
    xn[5] = NAN; xn[270000] = -INFINITY;
    const int top = tg_cpu_simd_level();
    double ref[5][TG_TRACE_SKETCH_N];
    bool same = true;
    for (int lv = 0; lv <= top; lv++) {
        tg_cpu_set_simd_cap(lv);
        for (int c = 0; c < 5; c++) {
            if (c >= 3) {   // long runs, finite and not
                const int64_t ne[4] = { NL, 1, 1, 1 };
                const size_t nb[4] = { 4, 4 * (size_t) NL, 4 * (size_t) NL, 4 * (size_t) NL };
                double sk[TG_TRACE_SKETCH_N];
                struct tg_trace_summary s;
                if (!sketch_of(c == 3 ? xl : xn, TG_TYPE_F32, ne, nb, sk, &s)) { same = false; continue; }
                if (lv == 0) memcpy(ref[c], sk, sizeof(sk));
                else same = same && memcmp(ref[c], sk, sizeof(sk)) == 0;
                continue;
            }
            const int64_t n = c == 0 ? N : c == 1 ? 15 : 333;   // c == 2: a view starting at element 3
            const int64_t ne[4] = { n, 1, 1, 1 };
            const size_t nb[4] = { 4, 4 * (size_t) n, 4 * (size_t) n, 4 * (size_t) n };
            const int64_t ne2[4] = { 37, 9, 1, 1 };
            const size_t nb2[4] = { 4, 4 * 41, 4 * 41 * 9, 4 * 41 * 9 };
            double sk[TG_TRACE_SKETCH_N];
            struct tg_trace_summary s;
            bool ok = c == 2 ? sketch_of(x + 3, TG_TYPE_F32, ne2, nb2, sk, &s) : sketch_of(x, TG_TYPE_F32, ne, nb, sk, &s);
            if (!ok) { same = false; continue; }
            if (lv == 0) memcpy(ref[c], sk, sizeof(sk));
            else same = same && memcmp(ref[c], sk, sizeof(sk)) == 0;
        }
    }
    tg_cpu_set_simd_cap(-1);
    CHECK(same, "the sketch is the same bit for bit at SIMD levels 0..%d (this CPU's %s at the top)", top,
          tg_cpu_simd_name());
}

// Summaries, hashes and sketches in one pass (AVX2 and above) or in two
// (acc_f32 then the sketch; the scalar level): the same bits at every level
// this CPU has, for f32 and f16 values, contiguous and in the layouts the
// recorder meets (a K-cache view's strided rows, a transposed V view's short
// rows, a column, a start inside a sketch block), with lengths around the
// points where sums go to double (1024 halves, 4096 floats, the 16 KiB
// staging buffer), zeros of both signs, NaN, infinities, subnormals and
// values whose float squares overflow. Level 0 is checked against a double
// reference too (extremes and counts exactly, mean and rms closely), and
// every layout against its contiguous copy (bit for bit: views are gathered
// whole, then summarized like contiguous tensors).
static bool summary_ok(const float * v, const struct tg_trace_summary * s, int64_t n) {
    double mn = INFINITY, mx = -INFINITY, sum = 0, sq = 0;
    uint64_t nan = 0, inf = 0, zero = 0;
    for (int64_t i = 0; i < n; i++) {
        float x = v[i];
        if (x != x) { nan++; continue; }
        if (x < mn) mn = x;
        if (x > mx) mx = x;
        if (isinf(x)) { inf++; continue; }
        zero += x == 0.0f;
        sum += x; sq += (double) x * x;
    }
    const uint64_t fin = (uint64_t) n - nan - inf;
    const double mean = fin ? sum / (double) fin : 0, rms = fin ? sqrt(sq / (double) fin) : 0;
    return s->n_elem == (uint64_t) n && s->n_nan == nan && s->n_inf == inf && s->n_zero == zero &&
           (nan == (uint64_t) n ? s->min != s->min : s->min == mn && s->max == mx) &&
           fabs(s->mean - mean) <= 1e-6 * (fabs(mean) + rms + 1e-30) && fabs(s->rms - rms) <= 1e-6 * rms + 1e-30;
}

static void test_summary_paths(void) {
    enum { NV = 1 << 16 };
    static float xf[NV];
    static tg_fp16_t xh[NV];
    static float back[NV], logical[NV];
    for (int i = 0; i < NV; i++) xf[i] = (float) nrand() * (i % 101 == 0 ? 1e25f : 1.0f);
    xf[40] = NAN; xf[41] = INFINITY; xf[300] = -INFINITY; xf[7] = -0.0f; xf[8] = 0.0f; xf[9000] = 1e-40f;
    xf[20000] = NAN; xf[33000] = 3e38f;
    for (int i = 0; i < NV; i++) xh[i] = tg_fp32_to_fp16(i % 101 == 0 ? xf[i] * 1e-21f : xf[i]);
    xh[5000] = tg_fp32_to_fp16(65504.0f); xh[5001] = tg_fp32_to_fp16(-0.0f); xh[12] = 0x7E00; xh[13] = 0x7C00;
    for (int i = 0; i < NV; i++) back[i] = tg_fp16_to_fp32(xh[i]);
    struct shape { const char * what; int64_t off; int64_t ne[4]; int64_t st[4]; };   // strides in elements
    const struct shape shapes[] = {
        { "1 value",           0, { 1, 1, 1, 1 },      { 1, 1, 1, 1 } },
        { "15 values",         0, { 15, 1, 1, 1 },     { 1, 15, 15, 15 } },
        { "17 values",         0, { 17, 1, 1, 1 },     { 1, 17, 17, 17 } },
        { "1025 values",       0, { 1025, 1, 1, 1 },   { 1, 1025, 1025, 1025 } },
        { "4099 values",       0, { 4099, 1, 1, 1 },   { 1, 4099, 4099, 4099 } },
        { "9000 values",       0, { 9000, 1, 1, 1 },   { 1, 9000, 9000, 9000 } },
        { "40000 values",      0, { 40000, 1, 1, 1 },  { 1, 40000, 40000, 40000 } },
        { "a start at 3",      3, { 333, 7, 1, 1 },    { 1, 333, 2331, 2331 } },
        { "K-cache view",      0, { 64, 88, 4, 1 },    { 1, 256, 64, 22528 } },
        { "V view (rows 88)",  0, { 88, 64, 4, 1 },    { 1, 104, 6656, 26624 } },
        { "V view (rows 13)",  0, { 13, 64, 4, 1 },    { 1, 104, 6656, 26624 } },
        { "a column",          5, { 1, 600, 1, 1 },    { 1, 97, 58200, 58200 } },
        { "transposed",        0, { 40, 50, 1, 1 },    { 50, 1, 2000, 2000 } },
    };
    const int top = tg_cpu_simd_level();
    int n_same = 0, n_ref = 0, n_cases = 0, n_copy = 0;
    for (size_t c = 0; c < sizeof(shapes) / sizeof(shapes[0]); c++) {
        const struct shape * sh = &shapes[c];
        for (int half = 0; half < 2; half++) {
            const size_t ts = half ? 2 : 4;
            const int64_t ne[4] = { sh->ne[0], sh->ne[1], sh->ne[2], sh->ne[3] };
            const size_t nb[4] = { ts * (size_t) sh->st[0], ts * (size_t) sh->st[1], ts * (size_t) sh->st[2], ts * (size_t) sh->st[3] };
            const uint8_t * data = half ? (const uint8_t *) (xh + sh->off) : (const uint8_t *) (xf + sh->off);
            const float * vals = half ? back + sh->off : xf + sh->off;
            int64_t n = 0;   // the values in logical order, for the reference
            for (int64_t i3 = 0; i3 < ne[3]; i3++) for (int64_t i2 = 0; i2 < ne[2]; i2++)
            for (int64_t i1 = 0; i1 < ne[1]; i1++) for (int64_t i0 = 0; i0 < ne[0]; i0++)
                logical[n++] = vals[i0 * sh->st[0] + i1 * sh->st[1] + i2 * sh->st[2] + i3 * sh->st[3]];
            // its contiguous copy: the same hash, summary and sketch, bit for bit
            static tg_fp16_t packed_h[NV];
            int64_t m = 0;
            if (half)
                for (int64_t i3 = 0; i3 < ne[3]; i3++) for (int64_t i2 = 0; i2 < ne[2]; i2++)
                for (int64_t i1 = 0; i1 < ne[1]; i1++) for (int64_t i0 = 0; i0 < ne[0]; i0++)
                    packed_h[m++] = xh[sh->off + i0 * sh->st[0] + i1 * sh->st[1] + i2 * sh->st[2] + i3 * sh->st[3]];
            const size_t cb[4] = { ts, ts * (size_t) ne[0], ts * (size_t) (ne[0] * ne[1]), ts * (size_t) (ne[0] * ne[1] * ne[2]) };
            uint64_t hc = 0;
            struct tg_trace_summary sc;
            double skc[TG_TRACE_SKETCH_N];
            bool okc = tg_trace_hash_summarize_sketch(half ? (const void *) packed_h : (const void *) logical,
                                                      half ? TG_TYPE_F16 : TG_TYPE_F32, ne, cb, &hc, &sc, skc);
            uint64_t h0 = 0;
            struct tg_trace_summary s0;
            double sk0[TG_TRACE_SKETCH_N];
            bool same = true, ok = true;
            for (int lv = 0; lv <= top && ok; lv++) {
                tg_cpu_set_simd_cap(lv);
                for (int with_sk = 1; with_sk >= 0; with_sk--) {   // with the sketch (one pass) and without
                    uint64_t h;
                    struct tg_trace_summary s;
                    double sk[TG_TRACE_SKETCH_N];
                    ok = tg_trace_hash_summarize_sketch(data, half ? TG_TYPE_F16 : TG_TYPE_F32, ne, nb, &h, &s,
                                                        with_sk ? sk : NULL);
                    if (!ok) break;
                    if (lv == 0 && with_sk) {
                        h0 = h; s0 = s; memcpy(sk0, sk, sizeof(sk));
                        n_ref += summary_ok(logical, &s, n);
                    } else {
                        same = same && h == h0 && memcmp(&s, &s0, sizeof(s)) == 0 &&
                               (!with_sk || memcmp(sk, sk0, sizeof(sk)) == 0);
                    }
                }
            }
            tg_cpu_set_simd_cap(-1);
            n_cases++;
            n_same += ok && same;
            const bool as_copy = ok && okc && hc == h0 && memcmp(&sc, &s0, sizeof(sc)) == 0 && memcmp(skc, sk0, sizeof(skc)) == 0;
            n_copy += as_copy;
            if (!as_copy) fprintf(stderr, "  %s (%s): not the same as its contiguous copy\n", sh->what, half ? "f16" : "f32");
            if (!(ok && same)) fprintf(stderr, "  %s (%s): %s\n", sh->what, half ? "f16" : "f32",
                                       ok ? "differs between SIMD levels" : "not summarized");
        }
    }
    CHECK(n_same == n_cases, "hash, summary and sketch the same bits at SIMD levels 0..%d in %d of %d layouts x types",
          top, n_same, n_cases);
    CHECK(n_ref == n_cases, "level 0 summaries agree with a double reference in %d of %d", n_ref, n_cases);
    CHECK(n_copy == n_cases, "hash, summary and sketch of each layout the same bits as its contiguous copy's in %d of %d",
          n_copy, n_cases);
}

// The same run on 1 and on 2 threads (kernels split between threads, the
// recorder's hashing shared with the waiting thread where a batch is large):
// the same trace, bit for bit - flags, hashes, summaries and sketches.
static void test_threads(void) {
    char p1[64], p2[64];
    snprintf(p1, sizeof(p1), "test_trace_sketch.%d.t1.tgt", (int) getpid());
    snprintf(p2, sizeof(p2), "test_trace_sketch.%d.t2.tgt", (int) getpid());
    bool ok = record_on("tiny-f32.gguf", p1, false, 40, "CPU", 1) && record_on("tiny-f32.gguf", p2, false, 40, "CPU", 2);
    CHECK(ok, "the same run recorded on 1 and on 2 threads");
    struct tg_trace * ta = ok ? tg_trace_open(p1) : NULL, * tb = ok ? tg_trace_open(p2) : NULL;
    int n = 0, same = 0;
    for (int i = 0; ta && tb && i < tg_trace_n_evals(ta); i++) {
        struct tg_trace_eval ea, eb;
        struct tg_trace_sketch ka, kb;
        if (!tg_trace_get_eval(ta, i, &ea) || !(ea.flags & TG_TRACE_EVAL_SKETCH)) continue;
        int j = tg_trace_find_eval(tb, ea.graph_id, ea.node, ea.compute_seq);
        int sa = tg_trace_find_sketch(ta, ea.graph_id, ea.node, ea.compute_seq);
        int sb = tg_trace_find_sketch(tb, ea.graph_id, ea.node, ea.compute_seq);
        n++;
        same += j >= 0 && tg_trace_get_eval(tb, j, &eb) && eb.flags == ea.flags && eb.hash == ea.hash &&
                memcmp(&eb.sum, &ea.sum, sizeof(ea.sum)) == 0 && sa >= 0 && sb >= 0 &&
                tg_trace_get_sketch(ta, sa, &ka) && tg_trace_get_sketch(tb, sb, &kb) && !memcmp(ka.v, kb.v, sizeof(ka.v));
    }
    CHECK(n > 100, "%d sketched nodes", n);
    CHECK(same == n, "1 and 2 threads: the same flags, hash, summary and sketch for %d of %d nodes", same, n);
    tg_trace_close(ta);
    tg_trace_close(tb);
    unlink(p1);
    unlink(p2);
}

int main(void) {
    test_paths();
    test_summary_paths();
    test_threads();
    test_views();
    test_estimator();
    char f32[64], q8[64], q4[64], f32n[64], q8n[64];
    int pid = (int) getpid();
    snprintf(f32, sizeof(f32), "test_trace_sketch.%d.f32.tgt", pid);
    snprintf(q8, sizeof(q8), "test_trace_sketch.%d.q8.tgt", pid);
    snprintf(q4, sizeof(q4), "test_trace_sketch.%d.q4.tgt", pid);
    snprintf(f32n, sizeof(f32n), "test_trace_sketch.%d.f32n.tgt", pid);
    snprintf(q8n, sizeof(q8n), "test_trace_sketch.%d.q8n.tgt", pid);
    bool ok = record("tiny-f32.gguf", f32, true) && record("tiny-q8_0.gguf", q8, true) &&
              record("tiny-q4_0.gguf", q4, true);
    CHECK(ok, "F32, Q8_0 and Q4_0 runs recorded with every node's contents");
    if (ok) {
        compare_runs("F32 vs Q8_0", f32, q8, 0.5);
        compare_runs("F32 vs Q4_0", f32, q4, 0.5);
    }
#ifdef TG_HAVE_BLAS
    // CPU against BLAS (40 prompt tokens: the matrix products go to BLAS): differences near float rounding
    char cpu[64], blas[64];
    snprintf(cpu, sizeof(cpu), "test_trace_sketch.%d.cpu.tgt", pid);
    snprintf(blas, sizeof(blas), "test_trace_sketch.%d.blas.tgt", pid);
    ok = record_on("tiny-f32.gguf", cpu, true, 40, "CPU", 2) && record_on("tiny-f32.gguf", blas, true, 40, "BLAS,CPU", 2);
    CHECK(ok, "CPU and BLAS runs recorded with every node's contents");
    if (ok) compare_runs("CPU vs BLAS", blas, cpu, 0.25);   // only the matrix products and what follows differ
    unlink(cpu); unlink(blas);
#else
    printf("skipped: CPU vs BLAS (built without BLAS)\n");
#endif
    ok = record("tiny-f32.gguf", f32n, false) && record("tiny-q8_0.gguf", q8n, false);
    CHECK(ok, "F32 and Q8_0 runs recorded without contents");
    if (ok) diff_without_contents(f32n, q8n);
    unlink(f32); unlink(q8); unlink(q4); unlink(f32n); unlink(q8n);
    return tg_check_finish("test_trace_sketch");
}
