// test_cuda.c - the CUDA backend against the CPU on the llama runtime:
// every tiny model (F32, F16, Q8_0, Q4_0 weights) decoded with all layers and
// the output on the GPU (-ngl 99) must give the CPU's last-position logits
// within 1e-3 relative L2 (F32/F16) or 3e-2 (quantized), for a prompt and for
// six generated tokens (run it with TG_CUDA_GRAPHS=1 for CUDA-graph capture
// and replay), with fused attention on and off; the scheduler must
// put the layers on CUDA0; a node whose memory was never allocated must fail
// with a named "tensor buffer not set" error. Without a CUDA device (or a
// build without CUDA) it prints "skipped: ..." and passes: the op suite on
// CUDA is `test_ops --backend CUDA0` (tests/test_cuda_ops.sh).
#include "check.h"
#include "tg/backend.h"
#include "tg/llama.h"
#include "tg/sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double rel_l2(const float * a, const float * b, int n) {
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        num += ((double) a[i] - b[i]) * ((double) a[i] - b[i]);
        den += (double) b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

static struct tg_llama_model * load(const char * name, int ngl) {
    char * path = tg_test_data(name);
    struct tg_llama_model_params mp = tg_llama_model_default_params();
    mp.n_gpu_layers = ngl;
    struct tg_llama_model * m = tg_llama_model_load(path, &mp);
    if (!m) printf("load %s (-ngl %d): %s\n", path, ngl, tg_last_error());
    free(path);
    return m;
}

static struct tg_llama_context * new_ctx(struct tg_llama_model * m, enum tg_llama_flash_attn fa) {
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = 128;
    cp.n_batch = 128;
    cp.n_ubatch = 128;
    cp.n_threads = 2;
    cp.flash_attn = fa;
    struct tg_llama_context * c = tg_llama_context_new(m, &cp);
    if (!c) printf("context: %s\n", tg_last_error());
    return c;
}

static const int32_t g_prompt[] = { 1, 450, 4996, 17354, 1701, 29916, 432, 17204, 975, 278, 17366, 11203, 29889 };

static void compare_model(const char * name, bool quant) {
    const double tol = quant ? 3e-2 : 1e-3;
    struct tg_llama_model * mc = load(name, 0), * mg = load(name, 99);
    if (!CHECK(mc && mg, "%s loads on the CPU and with -ngl 99", name)) goto out;
    const int n_layer = tg_llama_model_hparams(mg)->n_layer, n_vocab = tg_llama_model_hparams(mg)->n_vocab;
    CHECK(tg_llama_model_n_gpu_layers(mg) == n_layer + 1 && tg_llama_model_gpu_device(mg) != NULL,
          "%s: %d layers and the output offloaded (n_gpu_layers %d, device %s)", name, n_layer,
          tg_llama_model_n_gpu_layers(mg), tg_device_name(tg_llama_model_gpu_device(mg)));
    for (int f = 0; f < 2; f++) {
        enum tg_llama_flash_attn fa = f ? TG_FLASH_ATTN_ON : TG_FLASH_ATTN_OFF;
        struct tg_llama_context * cc = new_ctx(mc, fa), * cg = new_ctx(mg, fa);
        if (!CHECK(cc && cg, "%s fa %s: contexts", name, f ? "on" : "off")) { tg_llama_context_free(cc); tg_llama_context_free(cg); continue; }
        const int n = (int) (sizeof g_prompt / sizeof g_prompt[0]);
        enum tg_status s1 = tg_llama_decode(cc, g_prompt, n, 0), s2 = tg_llama_decode(cg, g_prompt, n, 0);
        if (CHECK(s1 == TG_OK && s2 == TG_OK, "%s fa %s: prompt of %d tokens decodes on both (%s)", name, f ? "on" : "off", n,
                  s2 ? tg_last_error() : "ok")) {
            double e = rel_l2(tg_llama_get_logits(cg, -1), tg_llama_get_logits(cc, -1), n_vocab);
            CHECK(e < tol, "%s fa %s: prompt: last logits CUDA vs CPU relative L2 %.3g < %.0e", name, f ? "on" : "off", e, tol);
            struct tg_sched * sg = tg_llama_context_sched(cg);
            int on_gpu = 0, nodes = tg_sched_n_node_placements(sg);
            for (int i = 0; i < nodes; i++) {
                const struct tg_sched_placement * p = tg_sched_node_placement(sg, i);
                if (p && p->backend >= 0 && tg_backend_is_cuda(tg_sched_get_backend(sg, p->backend))) on_gpu++;
            }
            printf("# %s fa %s: %d of %d nodes on CUDA, %d splits, %d copies\n", name, f ? "on" : "off", on_gpu, nodes,
                   tg_sched_get_n_splits(sg), tg_sched_get_n_copies(sg));
            CHECK(on_gpu > nodes / 2, "%s fa %s: most nodes run on CUDA (%d of %d)", name, f ? "on" : "off", on_gpu, nodes);
            int32_t tok = tg_llama_argmax(tg_llama_get_logits(cc, -1), n_vocab);
            for (int k = 0; k < 6; k++) {   // generation: the matrix-vector kernels; with TG_CUDA_GRAPHS=1 a
                                             // graph captured at the second token, replayed after
                s1 = tg_llama_decode(cc, &tok, 1, n + k);
                s2 = tg_llama_decode(cg, &tok, 1, n + k);
                if (!CHECK(s1 == TG_OK && s2 == TG_OK, "%s: token %d decodes (%s)", name, k, s2 ? tg_last_error() : "ok")) break;
                e = rel_l2(tg_llama_get_logits(cg, -1), tg_llama_get_logits(cc, -1), n_vocab);
                CHECK(e < tol, "%s fa %s: generated token %d: logits relative L2 %.3g < %.0e", name, f ? "on" : "off", k, e, tol);
                tok = tg_llama_argmax(tg_llama_get_logits(cc, -1), n_vocab);
            }
        }
        tg_llama_context_free(cc);
        tg_llama_context_free(cg);
    }
out:
    tg_llama_model_free(mc);
    tg_llama_model_free(mg);
}

// A node computed on CUDA0 whose source never got memory: a named error.
static void check_unallocated(void) {   // b and the sum get device memory, a does not
    struct tg_backend * be = tg_backend_init_by_name("CUDA0", NULL);
    if (!CHECK(be != NULL, "CUDA0 backend starts (%s)", be ? "ok" : tg_last_error())) return;
    struct tg_context_params p = { .mem_size = 1 << 16, .no_alloc = true };
    struct tg_context * ctx = tg_context_new(p);
    struct tg_tensor * a = tg_new_tensor_1d(ctx, TG_TYPE_F32, 16);
    struct tg_tensor * b = tg_new_tensor_1d(ctx, TG_TYPE_F32, 16);
    tg_set_name(a, "weights_never_loaded");
    struct tg_tensor * s = tg_add(ctx, a, b);
    struct tg_graph * g = tg_graph_new(ctx, 8);
    tg_graph_build_forward(g, s);
    struct tg_buffer * buf = tg_backend_alloc_buffer(be, 4096);
    char * base = tg_buffer_get_base(buf);
    tg_buffer_alloc_tensor(buf, b, base);
    tg_buffer_alloc_tensor(buf, s, base + 256);
    enum tg_status st = tg_backend_graph_compute(be, g);
    const char * msg = tg_last_error();
    CHECK(st == TG_ERR_NO_BUFFER && strstr(msg, "tensor buffer not set") && strstr(msg, "weights_never_loaded"),
          "unallocated source: %s", msg);
    tg_buffer_free(buf);
    tg_context_free(ctx);
    tg_backend_free(be);
}

// GET_ROWS with a row id past the table: the rows are skipped on the device
// and the compute fails naming the node and the ids (the CPU fails alike).
static void check_bad_row_id(void) {
    struct tg_backend * be = tg_backend_init_by_name("CUDA0", NULL);
    if (!be) return;
    struct tg_context_params p = { .mem_size = 1 << 16, .no_alloc = true };
    struct tg_context * ctx = tg_context_new(p);
    struct tg_tensor * tab = tg_new_tensor_2d(ctx, TG_TYPE_F32, 8, 4);
    struct tg_tensor * ids = tg_set_name(tg_new_tensor_1d(ctx, TG_TYPE_I32, 2), "token_ids");
    struct tg_tensor * rows = tg_set_name(tg_get_rows(ctx, tab, ids), "emb");
    struct tg_graph * g = tg_graph_new(ctx, 8);
    tg_graph_build_forward(g, rows);
    struct tg_buffer * buf = tg_backend_alloc_ctx_tensors(ctx, be);
    const int32_t bad[2] = { 1, 7 };
    tg_backend_tensor_set(ids, bad, 0, sizeof bad);
    enum tg_status st = tg_backend_graph_compute(be, g);
    const char * msg = tg_last_error();
    CHECK(st == TG_ERR_INVALID_ARG && strstr(msg, "'emb'") && strstr(msg, "token_ids") && strstr(msg, "out of range [0, 4)"),
          "row id 7 of a 4-row table: %s", msg);
    const int32_t good[2] = { 1, 3 };
    tg_backend_tensor_set(ids, good, 0, sizeof good);
    CHECK(tg_backend_graph_compute(be, g) == TG_OK, "the next compute with good ids succeeds (the flag was cleared)");
    tg_buffer_free(buf);
    tg_context_free(ctx);
    tg_backend_free(be);
}

// Every quantized weight type decoded on CUDA0 (GET_ROWS into F32) against
// the CPU's to_float of the same bytes: random rows quantized on the CPU.
static void check_decoders(void) {
    struct tg_backend * be = tg_backend_init_by_name("CUDA0", NULL);
    if (!be) return;
    static const enum tg_type types[] = { TG_TYPE_Q4_0, TG_TYPE_Q4_1, TG_TYPE_Q5_0, TG_TYPE_Q5_1, TG_TYPE_Q8_0, TG_TYPE_Q2_K,
                                          TG_TYPE_Q3_K, TG_TYPE_Q4_K, TG_TYPE_Q5_K, TG_TYPE_Q6_K, TG_TYPE_IQ4_NL,
                                          TG_TYPE_IQ4_XS, TG_TYPE_F16, TG_TYPE_BF16 };
    enum { NE0 = 512, ROWS = 6 };
    float * x = malloc(sizeof(float) * NE0 * ROWS), * want = malloc(sizeof(float) * NE0 * ROWS),
          * got = malloc(sizeof(float) * NE0 * ROWS);
    uint64_t rng = 88172645463325252ull;
    for (int i = 0; i < NE0 * ROWS; i++) {
        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
        x[i] = (float) ((double) (rng >> 11) / 9007199254740992.0 * 4.0 - 2.0);
    }
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const struct tg_type_traits * tr = tg_type_traits(types[k]);
        struct tg_context_params p = { .mem_size = 1 << 16, .no_alloc = true };
        struct tg_context * ctx = tg_context_new(p);
        struct tg_tensor * w = tg_new_tensor_2d(ctx, types[k], NE0, ROWS);
        struct tg_tensor * ids = tg_new_tensor_1d(ctx, TG_TYPE_I32, ROWS);
        struct tg_tensor * rows = tg_get_rows(ctx, w, ids);
        struct tg_graph * g = tg_graph_new(ctx, 8);
        tg_graph_build_forward(g, rows);
        struct tg_buffer * buf = tg_backend_alloc_ctx_tensors(ctx, be);
        const size_t rb = tg_row_size(types[k], NE0);
        char * q = malloc(rb * ROWS);
        int32_t order[ROWS];
        for (int r = 0; r < ROWS; r++) {
            tr->from_float(x + r * NE0, q + r * rb, NE0);
            order[r] = ROWS - 1 - r;
        }
        for (int r = 0; r < ROWS; r++) tr->to_float(q + (size_t) order[r] * rb, want + r * NE0, NE0);
        tg_backend_tensor_set(w, q, 0, rb * ROWS);
        tg_backend_tensor_set(ids, order, 0, sizeof order);
        enum tg_status st = tg_backend_graph_compute(be, g);
        tg_backend_tensor_get(rows, got, 0, sizeof(float) * NE0 * ROWS);
        double worst = 0;
        for (int i = 0; i < NE0 * ROWS; i++) {
            double e = fabs((double) got[i] - want[i]) / (fabs(want[i]) + 1e-3);
            if (e > worst) worst = e;
        }
        CHECK(st == TG_OK && worst < 1e-5, "%s rows decoded on CUDA0 as on the CPU (largest relative difference %.2g < 1e-5)",
              tg_type_name(types[k]), worst);
        free(q);
        tg_buffer_free(buf);
        tg_context_free(ctx);
    }
    free(x); free(want); free(got);
    tg_backend_free(be);
}

// Generation with every layer on CUDA0 moves the previous token's graph
// (store views on device memory) instead of building it: the same logits
// as building every graph (TG_GRAPH_REUSE=0), across the 32-cell step.
static void check_graph_reuse(void) {
    struct tg_llama_model * m = load("tiny-f32.gguf", 99);
    if (!CHECK(m != NULL, "tiny-f32 -ngl 99 loads")) return;
    const int n_vocab = tg_llama_model_hparams(m)->n_vocab, n = (int) (sizeof g_prompt / sizeof g_prompt[0]), n_gen = 40;
    for (int f = 0; f < 2; f++) {
        enum tg_llama_flash_attn fa = f ? TG_FLASH_ATTN_ON : TG_FLASH_ATTN_OFF;
        struct tg_llama_context * c[2];
        for (int k = 0; k < 2; k++) {
            if (k) setenv("TG_GRAPH_REUSE", "0", 1); else unsetenv("TG_GRAPH_REUSE");
            c[k] = new_ctx(m, fa);
        }
        unsetenv("TG_GRAPH_REUSE");
        bool ok = c[0] && c[1] && tg_llama_decode(c[0], g_prompt, n, 0) == TG_OK && tg_llama_decode(c[1], g_prompt, n, 0) == TG_OK;
        double worst = 0;
        for (int i = 0; ok && i < n_gen; i++) {
            int32_t tok = 100 + 7 * i;
            ok = tg_llama_decode(c[0], &tok, 1, n + i) == TG_OK && tg_llama_decode(c[1], &tok, 1, n + i) == TG_OK;
            double e = ok ? rel_l2(tg_llama_get_logits(c[0], -1), tg_llama_get_logits(c[1], -1), n_vocab) : 1;
            if (e > worst) worst = e;
        }
        struct tg_llama_stats s0 = ok ? tg_llama_stats(c[0]) : (struct tg_llama_stats) { 0 };
        CHECK(ok && worst < 1e-6 && s0.n_reused >= n_gen - 3,
              "fa %s: %lld of %d generated tokens' graphs moved on CUDA0, logits vs every graph built: largest "
              "relative L2 %.3g < 1e-06", f ? "on" : "off", (long long) s0.n_reused, n_gen, worst);
        tg_llama_context_free(c[0]);
        tg_llama_context_free(c[1]);
    }
    tg_llama_model_free(m);
}

int main(void) {
    if (!tg_device_by_name("CUDA0")) {
        printf("skipped: %s\n", tg_cuda_probe());
        return 0;
    }
    printf("# CUDA0: %s\n", tg_device_description(tg_device_by_name("CUDA0")));
    check_unallocated();
    check_bad_row_id();
    check_decoders();
    compare_model("tiny-f32.gguf", false);
    compare_model("tiny-f16.gguf", false);
    compare_model("tiny-q8_0.gguf", true);
    compare_model("tiny-q4_0.gguf", true);
    check_graph_reuse();
    return tg_check_finish("test_cuda");
}
