// test_llama.c - the llama runtime against llama.cpp's outputs
// (tests/data/logits.tsv and logits-MODEL-pN.f32): last-position logits
// (relative L2 error), argmax, greedy continuations; micro-batching and
// incremental decoding consistency; loader errors; sampling determinism.
#include "check.h"
#include "tg/cpu.h"
#include "logits_tsv.h"
#include "tg/gguf.h"
#include "tg/llama.h"
#include "tg/observe.h"
#include "tg/sched.h"
#include "tg/vocab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float * read_f32(const char * rel, int n) {
    char * path = tg_test_data(rel);
    float * v = read_f32s(path, n);
    free(path);
    return v;
}

static struct tg_llama_model * load(const char * name) {
    char * path = tg_test_data(name);
    struct tg_llama_model * m = tg_llama_model_load(path, NULL);
    if (!m) printf("load %s: %s\n", path, tg_last_error());
    free(path);
    return m;
}

static struct tg_llama_context * new_ctx(struct tg_llama_model * m, int n_ctx, int n_ubatch, enum tg_type kv) {
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = n_ctx;
    cp.n_ubatch = n_ubatch;
    cp.n_threads = 2;
    cp.type_k = cp.type_v = kv;
    struct tg_llama_context * c = tg_llama_context_new(m, &cp);
    if (!c) printf("context: %s\n", tg_last_error());
    return c;
}

// One logits.tsv row: logits error, argmax, first 4 greedy tokens.
static void check_row(struct tg_llama_model * m, const struct row * r) {
    const int n_vocab = tg_llama_model_hparams(m)->n_vocab;
    bool quant = strstr(r->model, "q8_0") || strstr(r->model, "q4_0");
    double tol = quant ? 3e-2 : 1e-3;
    char ref_name[128];
    snprintf(ref_name, sizeof ref_name, "logits-%.*s-%s.f32", (int) (strlen(r->model) - 5), r->model, r->pid);
    float * ref = read_f32(ref_name, n_vocab);
    struct tg_llama_context * c = new_ctx(m, 128, 512, TG_TYPE_F16);
    if (!CHECK(ref && c, "%s %s: reference %s and context", r->model, r->pid, ref_name)) goto out;
    enum tg_status st = tg_llama_decode(c, r->ids, r->n_ids, 0);
    if (!CHECK(st == TG_OK, "%s %s: decode %d tokens (%s)", r->model, r->pid, r->n_ids, tg_last_error())) goto out;
    const float * lg = tg_llama_get_logits(c, -1);
    double err = rel_l2(lg, ref, n_vocab);
    CHECK(err < tol, "%s %s: relative L2 error of the last logits %.3g < %.0e", r->model, r->pid, err, tol);
    int a = tg_llama_argmax(lg, n_vocab), b = tg_llama_argmax(ref, n_vocab);
    CHECK(a == b, "%s %s: argmax %d == reference %d", r->model, r->pid, a, b);
    check_greedy(c, lg, n_vocab, r);
out:
    tg_llama_context_free(c);
    free(ref);
}

// Micro-batches of 5, incremental decoding, every-token logits and an F32
// cache agree with one batch.
static void check_consistency(struct tg_llama_model * m, const struct row * r) {
    const int n_vocab = tg_llama_model_hparams(m)->n_vocab, n = r->n_ids;
    struct tg_llama_context * c1 = new_ctx(m, 128, 512, TG_TYPE_F16);
    struct tg_llama_context * c2 = new_ctx(m, 128, 5, TG_TYPE_F16);
    struct tg_llama_context * c3 = new_ctx(m, 128, 512, TG_TYPE_F32);
    float * full = malloc(sizeof(float) * (size_t) n_vocab);
    if (!CHECK(c1 && c2 && c3 && full, "consistency contexts")) goto out;
    CHECK(tg_llama_decode(c1, r->ids, n, 0) == TG_OK, "one batch of %d tokens", n);
    memcpy(full, tg_llama_get_logits(c1, -1), sizeof(float) * (size_t) n_vocab);
    CHECK(tg_llama_decode(c2, r->ids, n, 0) == TG_OK, "micro-batches of 5 tokens");
    double e = rel_l2(tg_llama_get_logits(c2, -1), full, n_vocab);
    CHECK(e < 1e-5, "micro-batches of 5 vs one batch: relative error %.3g < 1e-5", e);
    CHECK(tg_llama_get_logits(c2, 0) == NULL, "logits of a token that was not an output are refused");
    // incremental: all but the last token, then the last one
    CHECK(tg_llama_decode(c1, r->ids, n - 1, 0) == TG_OK && tg_llama_decode(c1, r->ids + n - 1, 1, n - 1) == TG_OK,
          "incremental decode (%d + 1 tokens)", n - 1);
    e = rel_l2(tg_llama_get_logits(c1, -1), full, n_vocab);
    CHECK(e < 1e-5, "incremental vs one batch: relative error %.3g < 1e-5", e);
    CHECK(tg_llama_kv_used(c1) == n, "cache holds %d positions", tg_llama_kv_used(c1));
    // every token's logits
    int8_t * want = malloc((size_t) n);
    memset(want, 1, (size_t) n);
    struct tg_llama_batch b = { r->ids, n, 0, want };
    CHECK(tg_llama_decode_batch(c2, &b) == TG_OK, "decode keeping every token's logits");
    e = rel_l2(tg_llama_get_logits(c2, n - 1), full, n_vocab);
    CHECK(e < 1e-5 && tg_llama_get_logits(c2, 0) != NULL, "all-logits batch: last row error %.3g < 1e-5, first row kept", e);
    free(want);
    // F32 cache
    CHECK(tg_llama_decode(c3, r->ids, n, 0) == TG_OK, "decode with an F32 KV cache");
    e = rel_l2(tg_llama_get_logits(c3, -1), full, n_vocab);
    CHECK(e < 1e-3, "F32 vs F16 KV cache: relative error %.3g < 1e-3", e);
    // bad input
    int32_t bad = n_vocab;
    CHECK(tg_llama_decode(c3, &bad, 1, n) == TG_ERR_INVALID_ARG, "token id %d refused: %s", bad, tg_last_error());
    CHECK(tg_llama_decode(c3, r->ids, 1, n + 5) == TG_ERR_INVALID_ARG, "position past the cache refused: %s", tg_last_error());
    CHECK(tg_llama_decode(c3, r->ids, 1, 128) == TG_ERR_INVALID_ARG, "position past n_ctx refused: %s", tg_last_error());
out:
    free(full);
    tg_llama_context_free(c1);
    tg_llama_context_free(c2);
    tg_llama_context_free(c3);
}

// Writes a copy of tiny-f32.gguf with tensor `drop` left out, or `reshape`
// given shape [ne0, ne1], or `retype` stored as I32. Returns true on success.
static bool write_variant(const char * out, const char * drop, const char * reshape, const char * retype) {
    char * path = tg_test_data("tiny-f32.gguf");
    struct tg_gguf * src = tg_gguf_open(path);
    free(path);
    if (!src) return false;
    struct tg_gguf_writer * w = tg_gguf_writer_new();
    bool ok = w && tg_gguf_set_kv_from(w, src) == TG_OK;
    static const int32_t zeros[64 * 64];
    for (int64_t i = 0; ok && i < tg_gguf_n_tensors(src); i++) {
        const struct tg_gguf_tensor_info * ti = tg_gguf_tensor(src, i);
        int64_t ne[4] = { ti->ne[0], ti->ne[1], ti->ne[2], ti->ne[3] };
        if (drop && !strcmp(ti->name, drop)) continue;
        if (reshape && !strcmp(ti->name, reshape)) { int64_t t = ne[0]; ne[0] = ne[1]; ne[1] = t; }
        if (retype && !strcmp(ti->name, retype)) {
            ok = tg_gguf_add_tensor(w, ti->name, TG_TYPE_I32, ti->n_dims, ne, zeros) == TG_OK;
            continue;
        }
        ok = tg_gguf_add_tensor(w, ti->name, ti->type, ti->n_dims, ne, tg_gguf_tensor_data(src, i)) == TG_OK;
    }
    ok = ok && tg_gguf_write(w, out) == TG_OK;
    tg_gguf_writer_free(w);
    tg_gguf_close(src);
    return ok;
}

#ifdef TG_HAVE_BLAS
// The BLAS backend first: the scheduler offloads the prompt's matrix products
// (>= 32 columns) to it, so the graph splits; logits still match.
static void check_blas(struct tg_llama_model * m, const struct row * r) {
    const int n_vocab = tg_llama_model_hparams(m)->n_vocab;
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = 128; cp.n_threads = 2; cp.devices = "BLAS,CPU";
    tg_clear_error();
    struct tg_llama_context * c = tg_llama_context_new(m, &cp);
    float * ref = read_f32("logits-tiny-f32-p3.f32", n_vocab);
    if (CHECK(c && ref, "BLAS,CPU context (%s)", tg_last_error())) {
        CHECK(tg_llama_decode(c, r->ids, r->n_ids, 0) == TG_OK, "decode %d tokens on BLAS,CPU (%s)", r->n_ids, tg_last_error());
        struct tg_llama_stats st = tg_llama_stats(c);
        CHECK(st.n_splits > 1, "the prompt graph has %d splits over BLAS and CPU", st.n_splits);
        double e = rel_l2(tg_llama_get_logits(c, -1), ref, n_vocab);
        CHECK(e < 1e-3, "BLAS,CPU logits vs reference: relative L2 error %.3g < 1e-3", e);
    }
    free(ref);
    tg_llama_context_free(c);
    cp.devices = "NO-SUCH-DEVICE";
    c = tg_llama_context_new(m, &cp);
    CHECK(!c && strstr(tg_last_error(), "NO-SUCH-DEVICE"), "unknown device refused: %s", tg_last_error());
    tg_llama_context_free(c);
}
#endif

static void check_load_errors(void) {
    struct tg_llama_model * m = tg_llama_model_load("no-such-model.gguf", NULL);
    CHECK(!m && strstr(tg_last_error(), "no-such-model.gguf"), "missing file: %s", tg_last_error());
    char * vocab = tg_test_data("llama-spm-vocab.gguf");
    m = tg_llama_model_load(vocab, NULL);
    free(vocab);
    CHECK(!m && strstr(tg_last_error(), "token_embd.weight"), "vocabulary only: %s", tg_last_error());
    if (CHECK(write_variant("llama-missing.gguf", "blk.1.ffn_up.weight", NULL, NULL), "wrote a model without blk.1.ffn_up")) {
        m = tg_llama_model_load("llama-missing.gguf", NULL);
        CHECK(!m && strstr(tg_last_error(), "blk.1.ffn_up.weight") && strstr(tg_last_error(), "missing"),
              "missing tensor: %s", tg_last_error());
        tg_llama_model_free(m);
    }
    if (CHECK(write_variant("llama-shape.gguf", NULL, "blk.0.ffn_down.weight", NULL), "wrote a model with a transposed ffn_down")) {
        m = tg_llama_model_load("llama-shape.gguf", NULL);
        CHECK(!m && strstr(tg_last_error(), "blk.0.ffn_down.weight") && strstr(tg_last_error(), "shape"),
              "wrong shape: %s", tg_last_error());
        tg_llama_model_free(m);
    }
    if (CHECK(write_variant("llama-type.gguf", NULL, NULL, "blk.0.attn_k.weight"), "wrote a model with an i32 attn_k")) {
        m = tg_llama_model_load("llama-type.gguf", NULL);
        CHECK(!m && strstr(tg_last_error(), "blk.0.attn_k.weight") && strstr(tg_last_error(), "type"),
              "unsupported type: %s", tg_last_error());
        tg_llama_model_free(m);
    }
    remove("llama-missing.gguf");
    remove("llama-shape.gguf");
    remove("llama-type.gguf");
}

static void check_sampling(void) {
    float logits[100];
    for (int i = 0; i < 100; i++) logits[i] = sinf((float) i * 0.7f) * 3.0f;
    struct tg_llama_sampler_params p = tg_llama_sampler_default_params();
    p.temp = 0.0f;
    struct tg_llama_sampler * g = tg_llama_sampler_new(&p);
    int am = tg_llama_argmax(logits, 100);
    CHECK(tg_llama_sample(g, logits, 100) == am, "temp 0 is greedy (argmax %d)", am);
    tg_llama_sampler_free(g);
    p = tg_llama_sampler_default_params();
    p.temp = 1.5f; p.top_k = 0; p.top_p = 1.0f; p.min_p = 0.0f; p.seed = 7;
    struct tg_llama_sampler * s1 = tg_llama_sampler_new(&p), * s2 = tg_llama_sampler_new(&p);
    bool same = true, varied = false;
    int first = tg_llama_sample(s1, logits, 100);
    same = first == tg_llama_sample(s2, logits, 100);
    for (int i = 0; i < 50; i++) {
        int a = tg_llama_sample(s1, logits, 100), b = tg_llama_sample(s2, logits, 100);
        same = same && a == b;
        varied = varied || a != first;
    }
    CHECK(same && varied, "same seed, same tokens (and they vary)");
    tg_llama_sampler_free(s1);
    tg_llama_sampler_free(s2);
    p.top_k = 1;
    s1 = tg_llama_sampler_new(&p);
    bool all = true;
    for (int i = 0; i < 20; i++) all = all && tg_llama_sample(s1, logits, 100) == am;
    CHECK(all, "top-k 1 always picks the argmax");
    tg_llama_sampler_free(s1);
    p.top_k = 3; p.seed = 1;
    s1 = tg_llama_sampler_new(&p);
    int hits = 0;
    for (int i = 0; i < 200; i++) {
        int t = tg_llama_sample(s1, logits, 100);
        int rank = 0;
        for (int j = 0; j < 100; j++) rank += logits[j] > logits[t];
        hits += rank < 3;
    }
    CHECK(hits == 200, "top-k 3 keeps the 3 best (%d/200)", hits);
    tg_llama_sampler_free(s1);
    p.top_k = 40; p.seed = 2; p.temp = 5.0f;
    s1 = tg_llama_sampler_new(&p);
    static float big[5000];
    for (int i = 0; i < 5000; i++) big[i] = sinf((float) i * 12.9898f) * 43758.5453f - floorf(sinf((float) i * 12.9898f) * 43758.5453f);
    int in_top = 0, distinct = 0;
    static bool seen[5000];
    for (int i = 0; i < 400; i++) {
        int t = tg_llama_sample(s1, big, 5000), rank = 0;
        for (int j = 0; j < 5000; j++) rank += big[j] > big[t];
        in_top += rank < 40;
        if (!seen[t]) { seen[t] = true; distinct++; }
    }
    CHECK(in_top == 400 && distinct > 20, "top-k 40 of 5000: %d/400 samples in the top 40, %d distinct", in_top, distinct);
    tg_llama_sampler_free(s1);
    p.temp = 1.5f;
    p.top_k = 0; p.min_p = 0.5f;
    s1 = tg_llama_sampler_new(&p);
    bool minp = true;
    for (int i = 0; i < 100; i++) minp = minp && logits[tg_llama_sample(s1, logits, 100)] >= logits[am] + logf(0.5f) - 1e-6f;
    CHECK(minp, "min-p 0.5 keeps tokens with p >= p_max/2");
    tg_llama_sampler_free(s1);
}

// The fused attention path (-fa on) against the unfused one (-fa off) on the
// same prompt, F16 and F32 KV cache, one and several micro-batches; the fused
// path gives the same bits for 1 and 3 threads; auto resolves to fused here
// (nothing watches) and tg_llama_context_flash_attn says so.
static void check_flash_attn(struct tg_llama_model * m, const struct row * r) {
    const int n_vocab = tg_llama_model_hparams(m)->n_vocab;
    for (int kv = 0; kv < 2; kv++) {
        for (int ub = 0; ub < 2; ub++) {
            float * lg[3] = { NULL, NULL, NULL };
            const enum tg_llama_flash_attn modes[3] = { TG_FLASH_ATTN_OFF, TG_FLASH_ATTN_ON, TG_FLASH_ATTN_ON };
            for (int i = 0; i < 3; i++) {
                struct tg_llama_context_params cp = tg_llama_context_default_params();
                cp.n_ctx = 128; cp.n_batch = 128; cp.n_ubatch = ub ? 3 : 512;
                cp.n_threads = i == 2 ? 3 : 1;
                cp.type_k = cp.type_v = kv ? TG_TYPE_F32 : TG_TYPE_F16;
                cp.flash_attn = modes[i];
                struct tg_llama_context * c = tg_llama_context_new(m, &cp);
                if (c && tg_llama_decode(c, r->ids, r->n_ids, 0) == TG_OK) {
                    lg[i] = malloc((size_t) n_vocab * sizeof(float));
                    memcpy(lg[i], tg_llama_get_logits(c, -1), (size_t) n_vocab * sizeof(float));
                }
                if (i == 1) CHECK(c && tg_llama_context_flash_attn(c), "-fa on: the context uses the fused path");
                tg_llama_context_free(c);
            }
            if (CHECK(lg[0] && lg[1] && lg[2], "fused and unfused decodes (%s KV, ubatch %d)", kv ? "f32" : "f16", ub ? 3 : 512)) {
                const double e = rel_l2(lg[1], lg[0], n_vocab);
                CHECK(e < (kv ? 1e-5 : 1e-3), "fused vs unfused attention (%s KV, ubatch %d): relative L2 %.3g < %.0e",
                      kv ? "f32" : "f16", ub ? 3 : 512, e, kv ? 1e-5 : 1e-3);
                CHECK(memcmp(lg[1], lg[2], (size_t) n_vocab * sizeof(float)) == 0,
                      "fused attention: 1 and 3 threads give the same bits (%s KV, ubatch %d)", kv ? "f32" : "f16", ub ? 3 : 512);
            }
            for (int i = 0; i < 3; i++) free(lg[i]);
        }
    }
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = 64;
    struct tg_llama_context * c = tg_llama_context_new(m, &cp);
    CHECK(c && tg_llama_context_flash_attn(c), "-fa auto with nothing watching: fused");
    tg_llama_context_free(c);
    cp.flash_attn = TG_FLASH_ATTN_OFF;
    c = tg_llama_context_new(m, &cp);
    CHECK(c && !tg_llama_context_flash_attn(c), "-fa off: unfused");
    tg_llama_context_free(c);
}

static void count_alloc(const struct tg_obs_alloc_event * ev, void * user) { (void) ev; ++*(int *) user; }

// Generation computes the previous token's graph again with its K/V store
// views moved (while the cells looked at stay): the same bits as building
// every graph (TG_GRAPH_REUSE=0), across the KV padding step at 32 cells,
// after a prompt, with and without fused attention, 1 and 2 threads; none
// while an observer is attached.
static void check_graph_reuse(struct tg_llama_model * m, const struct row * r) {
    const int n_vocab = tg_llama_model_hparams(m)->n_vocab, n_gen = 40;
    for (int fa = 0; fa < 2; fa++)
    for (int th = 1; th <= 2; th++) {
        struct tg_llama_context * c[2];
        for (int k = 0; k < 2; k++) {
            if (k) setenv("TG_GRAPH_REUSE", "0", 1); else unsetenv("TG_GRAPH_REUSE");
            struct tg_llama_context_params cp = tg_llama_context_default_params();
            cp.n_ctx = 128; cp.n_threads = th;
            cp.flash_attn = fa ? TG_FLASH_ATTN_ON : TG_FLASH_ATTN_OFF;
            c[k] = tg_llama_context_new(m, &cp);
        }
        unsetenv("TG_GRAPH_REUSE");
        int same = 0, ok = c[0] && c[1];
        for (int k = 0; ok && k < 2; k++) ok = tg_llama_decode(c[k], r->ids, r->n_ids, 0) == TG_OK;
        for (int i = 0; ok && i < n_gen; i++) {
            int32_t tok = 100 + 7 * i;
            ok = tg_llama_decode(c[0], &tok, 1, r->n_ids + i) == TG_OK && tg_llama_decode(c[1], &tok, 1, r->n_ids + i) == TG_OK;
            if (ok) same += memcmp(tg_llama_get_logits(c[0], -1), tg_llama_get_logits(c[1], -1), (size_t) n_vocab * sizeof(float)) == 0;
        }
        struct tg_llama_stats s0 = ok ? tg_llama_stats(c[0]) : (struct tg_llama_stats) { 0 };
        struct tg_llama_stats s1 = ok ? tg_llama_stats(c[1]) : (struct tg_llama_stats) { 0 };
        CHECK(ok && same == n_gen, "graph reuse (fa %s, %d thread%s): %d of %d generated tokens' logits the same bits as "
              "with every graph built", fa ? "on" : "off", th, th > 1 ? "s" : "", same, n_gen);
        CHECK(ok && s0.n_reused >= n_gen - 3 && s0.n_graphs == n_gen + 1 && s1.n_reused == 0,
              "graph reuse (fa %s, %d thread%s): %lld of %lld graphs computed again (built when the cells looked at "
              "grow); TG_GRAPH_REUSE=0: %lld", fa ? "on" : "off", th, th > 1 ? "s" : "",
              (long long) s0.n_reused, (long long) s0.n_graphs, (long long) s1.n_reused);
        tg_llama_context_free(c[0]);
        tg_llama_context_free(c[1]);
    }
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = 64;
    struct tg_llama_context * c = tg_llama_context_new(m, &cp);
    int n_alloc = 0;
    struct tg_observer obs = { .user = &n_alloc, .on_graph_alloc = count_alloc };
    bool ok = c && tg_sched_add_observer(tg_llama_context_sched(c), &obs) == TG_OK &&
              tg_llama_decode(c, r->ids, r->n_ids, 0) == TG_OK;
    for (int i = 0; ok && i < 4; i++) {
        int32_t tok = 200 + i;
        ok = tg_llama_decode(c, &tok, 1, r->n_ids + i) == TG_OK;
    }
    struct tg_llama_stats s = ok ? tg_llama_stats(c) : (struct tg_llama_stats) { 0 };
    CHECK(ok && s.n_reused == 3 && n_alloc == 5, "an observer attached: %lld of 4 generated tokens' graphs moved (the "
          "first one after the prompt built), the observer saw %d of 5 graphs allocated", (long long) s.n_reused, n_alloc);
    tg_llama_context_free(c);
}

// Packed weights (tg_llama_model_params.repack): a model loaded with them and
// without gives the same logits, bit for bit; they exist exactly when the CPU
// has the packed kernels (Q4_0 from AVX2 on, Q8_0 with AVX-512 VNNI) and
// cover the matrices a token reads.
static void check_repack(const struct row * rows, int n) {
    const char * names[] = { "tiny-q4_0.gguf", "tiny-q8_0.gguf" };
    const char * level = tg_cpu_simd_name();
    const bool vnni = tg_cpu_pack_size(NULL) == 0 && strcmp(level, "avx512vnni") == 0;
    const bool avx2_up = vnni || !strcmp(level, "avx2") || !strcmp(level, "avx512");
    for (int mi = 0; mi < 2; mi++) {
        const bool packs = mi == 0 ? avx2_up : vnni;
        const struct row * r = NULL;
        for (int i = 0; i < n && !r; i++) if (!strcmp(rows[i].model, names[mi])) r = &rows[i];
        float * lg[2] = { NULL, NULL };
        int32_t np[2] = { 0, 0 };
        size_t pb[2] = { 0, 0 }, per_tok = 0;
        int n_vocab = 0;
        for (int v = 0; v < 2 && r; v++) {
            char * path = tg_test_data(names[mi]);
            struct tg_llama_model_params mp = tg_llama_model_default_params();
            mp.repack = v ? TG_LLAMA_REPACK_ON : TG_LLAMA_REPACK_OFF;
            struct tg_llama_model * m = tg_llama_model_load(path, &mp);
            free(path);
            struct tg_llama_context * c = m ? new_ctx(m, 64, 64, TG_TYPE_F16) : NULL;
            np[v] = tg_llama_model_n_packed(m, &pb[v]);
            per_tok = tg_llama_model_bytes_per_token(m);
            n_vocab = m ? tg_llama_model_hparams(m)->n_vocab : 0;
            if (c && tg_llama_decode(c, r->ids, r->n_ids, 0) == TG_OK && tg_llama_decode(c, r->ids, 1, r->n_ids) == TG_OK) {
                lg[v] = malloc((size_t) n_vocab * sizeof(float));
                memcpy(lg[v], tg_llama_get_logits(c, -1), (size_t) n_vocab * sizeof(float));
            }
            tg_llama_context_free(c);
            tg_llama_model_free(m);
        }
        CHECK(lg[0] && lg[1] && memcmp(lg[0], lg[1], (size_t) n_vocab * sizeof(float)) == 0,
              "%s: logits with packed weights (%d matrices, %zu bytes) and without (%d): the same bits "
              "(prompt of %d tokens, then one more)", names[mi], np[1], pb[1], np[0], r ? r->n_ids : 0);
        CHECK(np[0] == 0 && (packs ? np[1] == 15 && pb[1] <= per_tok && pb[1] >= per_tok - per_tok / 100 : np[1] == 0),
              "%s: repack on packs %d matrices (%zu of the %zu bytes a token reads, the rest norms; expected %s at %s), "
              "off none", names[mi], np[1], pb[1], per_tok, packs ? "15: 7 per layer and the output" : "none", level);
        free(lg[0]); free(lg[1]);
    }
}

int main(void) {
    static struct row rows[32];
    int n = read_logits_rows("logits.tsv", rows, 32);
    CHECK(n == 12, "logits.tsv has %d rows", n);
    struct tg_llama_model * m = NULL;
    const char * cur = "";
    for (int i = 0; i < n; i++) {
        if (strcmp(cur, rows[i].model) != 0) {
            tg_llama_model_free(m);
            m = load(rows[i].model);
            cur = rows[i].model;
            CHECK(m != NULL, "load %s", cur);
        }
        if (m) check_row(m, &rows[i]);
    }
    tg_llama_model_free(m);
    m = load("tiny-f32.gguf");
    if (m && n >= 3) {
        const struct tg_llama_hparams * h = tg_llama_model_hparams(m);
        CHECK(h->n_vocab == 32000 && h->n_embd == 64 && h->n_layer == 2 && h->n_head == 4 && h->n_head_kv == 2 &&
              h->n_ff == 160 && h->head_dim == 16 && h->n_rot == 16 && h->n_ctx_train == 512,
              "hparams: vocab %d, embd %d, layers %d, heads %d/%d, ff %d, head dim %d, rot %d, ctx %d", h->n_vocab,
              h->n_embd, h->n_layer, h->n_head, h->n_head_kv, h->n_ff, h->head_dim, h->n_rot, h->n_ctx_train);
        CHECK(fabsf(h->rms_eps - 1e-5f) < 1e-9f && h->rope_freq_base == 10000.0f, "rms eps %g, rope base %g", h->rms_eps, h->rope_freq_base);
        CHECK(tg_llama_model_bos(m) == 1 && tg_llama_model_eos(m) == 2, "bos 1, eos 2");
        const size_t embd_bytes = (size_t) h->n_vocab * (size_t) h->n_embd * 4;
        CHECK(!h->tied_output && tg_llama_model_bytes_per_token(m) == tg_llama_model_size(m) - embd_bytes,
              "bytes per token %zu: every weight (%zu) but token_embd (%zu), output.weight being untied",
              tg_llama_model_bytes_per_token(m), tg_llama_model_size(m), embd_bytes);
        const struct tg_vocab * v = tg_llama_model_vocab(m);
        CHECK(v && tg_vocab_n_tokens(v) == 32000, "the model's vocabulary has %d tokens", v ? tg_vocab_n_tokens(v) : -1);
        check_consistency(m, &rows[2]);
        check_flash_attn(m, &rows[2]);
        check_graph_reuse(m, &rows[2]);
#ifdef TG_HAVE_BLAS
        check_blas(m, &rows[2]);
#endif
    }
    tg_llama_model_free(m);
    check_repack(rows, n);
    check_load_errors();
    check_sampling();
    return tg_check_finish("test_llama");
}
