// sched-splits.c - why a graph has N splits: a matmul feeding two adds on a
// BLAS + CPU scheduler. Marking the weight buffer's usage "weights" pins the
// matmul to the weight's backend (CPU) unless BLAS asks for it (offload_op,
// from 32 columns): the placement and the number of splits change.
//
// With --device NAME (a GPU such as CUDA0) that device takes BLAS's place:
// it supports every op of the graph, so with usage "any" the whole graph runs
// there (the CPU weights copied in), with usage "weights" the matmul stays by
// its weight on the CPU.
//
// Usage: sched-splits [--device NAME] [n_cols]   (default 16; try 64)
#include "tg/sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fill(struct tg_tensor * t, unsigned seed) {
    int64_t n = tg_nelements(t);
    float * v = malloc((size_t) n * sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (float) ((seed >> 16) % 2001) / 1000.0f - 1.0f;
    }
    tg_backend_tensor_set(t, v, 0, (size_t) n * sizeof(float));
    free(v);
}

static void print_placement(const char * kind, int i, const struct tg_sched_placement * p, struct tg_sched * s) {
    const struct tg_tensor * t = p->tensor;
    printf("  %-4s %2d %-3s %-8s %-5s %-13s %s\n", kind, i, t->name, t->op == TG_OP_NONE ? "-" : tg_op_name(t->op),
           tg_backend_name(tg_sched_get_backend(s, p->backend)), tg_cause_name(p->cause), p->detail);
}

// Builds the model with the weight buffer's usage, places it, prints, computes.
static int run(struct tg_backend ** backends, int n_backends, int n_cols, enum tg_buffer_usage usage, float * out) {
    struct tg_context_params wp = { 1 << 20, NULL, true };
    struct tg_context * wctx = tg_context_new(wp);
    struct tg_tensor * W = tg_set_name(tg_new_tensor_2d(wctx, TG_TYPE_F32, 64, 48), "W");
    struct tg_tensor * b1 = tg_set_name(tg_new_tensor_1d(wctx, TG_TYPE_F32, 48), "b1");
    struct tg_tensor * b2 = tg_set_name(tg_new_tensor_1d(wctx, TG_TYPE_F32, 48), "b2");
    struct tg_buffer * wbuf = tg_backend_alloc_ctx_tensors(wctx, backends[n_backends - 1]);
    tg_buffer_set_usage(wbuf, usage);
    fill(W, 1); fill(b1, 2); fill(b2, 3);

    struct tg_context * ctx = tg_context_new(wp);
    struct tg_tensor * x = tg_set_name(tg_new_tensor_2d(ctx, TG_TYPE_F32, 64, n_cols), "x");
    tg_set_input(x);
    struct tg_tensor * h = tg_set_name(tg_mul_mat(ctx, W, x), "h");       // [48, n_cols]
    struct tg_tensor * y = tg_set_name(tg_add(ctx, h, b1), "y");
    struct tg_tensor * z = tg_set_name(tg_add(ctx, y, b2), "z");
    tg_set_output(z);
    struct tg_graph * g = tg_graph_new(ctx, 16);
    tg_graph_build_forward(g, z);

    struct tg_sched * s = tg_sched_new(backends, n_backends, 16);
    int splits = -1;
    if (s && tg_sched_alloc_graph(s, g) == TG_OK) {
        printf("weight buffer usage: %s\n", tg_buffer_usage_name(usage));
        for (int i = 0; i < g->n_leafs; i++) print_placement("leaf", i, tg_sched_leaf_placement(s, i), s);
        for (int i = 0; i < g->n_nodes; i++) print_placement("node", i, tg_sched_node_placement(s, i), s);
        splits = tg_sched_get_n_splits(s);
        for (int k = 0; k < splits; k++) {
            const struct tg_sched_split * sp = tg_sched_get_split(s, k);
            printf("  split %d: %-4s nodes %d..%d, %d input(s), %d copied\n", k,
                   tg_backend_name(tg_sched_get_backend(s, sp->backend)), sp->i_start, sp->i_end - 1, sp->n_inputs, sp->n_copies);
        }
        printf("  splits: %d, copies: %d\n\n", splits, tg_sched_get_n_copies(s));
        fill(x, 4);
        if (tg_sched_graph_compute(s, g) != TG_OK || tg_backend_tensor_get(z, out, 0, tg_nbytes(z)) != TG_OK) splits = -1;
    }
    if (splits < 0) fprintf(stderr, "sched-splits: %s\n", tg_last_error());
    tg_sched_free(s);
    tg_context_free(ctx);
    tg_buffer_free(wbuf);
    tg_context_free(wctx);
    return splits;
}

int main(int argc, char ** argv) {
    int n_cols = 16;
    const char * device = NULL;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--device") == 0 && a + 1 < argc) { device = argv[++a]; continue; }
        char * end;   // the whole argument, a number in range
        long v = strtol(argv[a], &end, 10);
        n_cols = end != argv[a] && *end == '\0' && v >= 1 && v <= 4096 ? (int) v : 0;
    }
    if (n_cols < 1 || n_cols > 4096) { fprintf(stderr, "sched-splits: n_cols must be 1..4096\n"); return 1; }
    struct tg_backend * cpu = tg_backend_cpu_init();
    struct tg_backend * accel = device ? tg_backend_init_by_name(device, NULL) : tg_backend_blas_init();
    if (!cpu || (device && !accel)) { fprintf(stderr, "sched-splits: %s\n", tg_last_error()); tg_backend_free(cpu); return 1; }
    tg_backend_cpu_set_n_threads(cpu, 1);
    struct tg_backend * backends[2] = { accel, cpu };
    struct tg_backend ** bk = accel ? backends : backends + 1;
    int nb = accel ? 2 : 1;
    if (tg_backend_is_blas(accel)) tg_backend_blas_set_n_threads(accel, 1);
    if (!accel) printf("note: this build has no BLAS backend; the scheduler has CPU only\n");
    printf("sched-splits: h = W x (%d columns), y = h + b1, z = y + b2; backends:", n_cols);
    for (int i = 0; i < nb; i++) printf(" %s", tg_backend_name(bk[i]));
    if (device) printf(" (%s supports every op here)\n\n", device);
    else printf(" (BLAS supports MUL_MAT from %d columns, asks for it from %d)\n\n", TG_BLAS_MIN_BATCH, TG_BLAS_OFFLOAD_BATCH);

    size_t n_out = (size_t) 48 * n_cols;
    float * za = malloc(n_out * sizeof(float)), * zw = malloc(n_out * sizeof(float));
    int s_any = run(bk, nb, n_cols, TG_BUFFER_USAGE_ANY, za);
    int s_w = run(bk, nb, n_cols, TG_BUFFER_USAGE_WEIGHTS, zw);
    int rc = s_any < 0 || s_w < 0;
    if (!rc) {
        double max_diff = 0;
        for (size_t i = 0; i < n_out; i++) {
            double d = za[i] > zw[i] ? za[i] - zw[i] : zw[i] - za[i];
            if (d > max_diff) max_diff = d;
        }
        printf("summary: usage any -> %d split(s), usage weights -> %d split(s); results agree (max |diff| %.1e)\n",
               s_any, s_w, max_diff);
    }
    free(za); free(zw);
    tg_backend_free(accel);
    tg_backend_free(cpu);
    return rc;
}
