// graph-reuse.c - the classic buffer-reuse bug: keep a pointer to an
// intermediate of one graph, run a second graph on the same scheduler, then
// read the intermediate. The scheduler's compute buffer is shared by both
// graphs, so those bytes now belong to a tensor of the second graph (and, as
// the intermediate is not an output, were even reused inside the first
// graph). The allocation data says who owns them.
//
// Usage: graph-reuse [--correct] [--device NAME]
//   --correct      marks the intermediate as an output and copies it out right
//                  after the first graph: the value read is valid.
//   --device NAME  computes both graphs on that device (e.g. CUDA0, the CPU
//                  as the scheduler's fallback): the compute buffer reused
//                  is then the device's memory.
#include "tg/sched.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { N = 256 };

static void print_owner(struct tg_sched * s, const struct tg_tensor * t, size_t off, const char * when) {
    const struct tg_alloc_tensor_info * own[8];
    int n = tg_gallocr_find_overlapping(tg_sched_get_gallocr(s), t->buffer, off, tg_nbytes(t), own, 8);
    printf("  %s: bytes [%zu, %zu) of buffer %s (usage %s) belong to:", when, off, off + tg_nbytes(t),
           tg_buffer_name(t->buffer), tg_buffer_usage_name(tg_buffer_get_usage(t->buffer)));
    if (n == 0) printf(" nobody");
    for (int i = 0; i < n && i < 8; i++)
        printf("%s %s (graph %llu, %s, live steps %d..%d)", i ? "," : "", own[i]->tensor->name,
               (unsigned long long) tg_sched_graph_seq(s), tg_alloc_kind_name(own[i]->kind),
               own[i]->first_step, own[i]->last_step);
    printf("\n");
}

// Pins every node of g to backend b (no-op for NULL).
static void pin_all(struct tg_sched * s, struct tg_graph * g, struct tg_backend * b) {
    for (int i = 0; b && i < g->n_nodes; i++) tg_sched_set_tensor_backend(s, g->nodes[i], b);
}

int main(int argc, char ** argv) {
    bool correct = false;
    const char * device = NULL;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--correct") == 0) correct = true;
        else if (strcmp(argv[a], "--device") == 0 && a + 1 < argc) device = argv[++a];
        else { fprintf(stderr, "usage: graph-reuse [--correct] [--device NAME]\n"); return 1; }
    }
    struct tg_backend * cpu = tg_backend_cpu_init();
    struct tg_backend * dev = device ? tg_backend_init_by_name(device, NULL) : NULL;
    if (!cpu || (device && !dev)) { fprintf(stderr, "graph-reuse: %s\n", tg_last_error()); tg_backend_free(cpu); return 1; }
    tg_backend_cpu_set_n_threads(cpu, 1);
    struct tg_backend * backends[2] = { dev, cpu };
    struct tg_sched * s = dev ? tg_sched_new(backends, 2, 64) : tg_sched_new(&cpu, 1, 64);
    struct tg_context_params cp = { 1 << 20, NULL, true };

    // graph 1: mid = (2x)^2, out1 = silu(mid) + x
    struct tg_context * c1 = tg_context_new(cp);
    struct tg_tensor * x = tg_set_name(tg_new_tensor_1d(c1, TG_TYPE_F32, N), "x");
    tg_set_input(x);
    struct tg_tensor * mid = tg_set_name(tg_sqr(c1, tg_set_name(tg_scale(c1, x, 2.0f), "x2")), "mid");
    if (correct) tg_set_output(mid);
    struct tg_tensor * out1 = tg_set_name(tg_add(c1, tg_set_name(tg_silu(c1, mid), "act"), x), "out1");
    tg_set_output(out1);
    struct tg_graph * g1 = tg_graph_new(c1, 16);
    tg_graph_build_forward(g1, out1);

    // graph 2: out2 = -(3y)^2 + y
    struct tg_context * c2 = tg_context_new(cp);
    struct tg_tensor * y = tg_set_name(tg_new_tensor_1d(c2, TG_TYPE_F32, N), "y");
    tg_set_input(y);
    struct tg_tensor * t2 = tg_set_name(tg_neg(c2, tg_set_name(tg_sqr(c2, tg_set_name(tg_scale(c2, y, 3.0f), "y3")), "y3sq")), "neg");
    struct tg_tensor * out2 = tg_set_name(tg_add(c2, t2, y), "out2");
    tg_set_output(out2);
    struct tg_graph * g2 = tg_graph_new(c2, 16);
    tg_graph_build_forward(g2, out2);

    float xv[N], yv[N], expect[N], copy[N], got[N];
    for (int i = 0; i < N; i++) { xv[i] = (float) (i % 17) / 16.0f - 0.5f; yv[i] = (float) (i % 13) / 12.0f + 0.25f; }
    for (int i = 0; i < N; i++) expect[i] = (2.0f * xv[i]) * (2.0f * xv[i]);

    printf("graph-reuse (%s): graph 1 computes mid = (2x)^2, graph 2 runs next on the same scheduler\n",
           correct ? "--correct: mid is an output and copied out" : "mid kept as a pointer");
    if (dev) printf("nodes pinned to %s; its compute buffer holds the intermediates\n", tg_backend_name(dev));
    pin_all(s, g1, dev);
    if (tg_sched_alloc_graph(s, g1) != TG_OK || tg_backend_tensor_set(x, xv, 0, sizeof xv) != TG_OK
        || tg_sched_graph_compute(s, g1) != TG_OK) {
        fprintf(stderr, "graph-reuse: %s\n", tg_last_error());
        return 1;
    }
    const struct tg_alloc_tensor_info * mi = tg_gallocr_find(tg_sched_get_gallocr(s), mid);
    size_t off = mi->offset;
    printf("graph 1: mid is %s at offset %zu (%zu bytes), live steps %d..%d\n", tg_alloc_kind_name(mi->kind),
           off, mi->size, mi->first_step, mi->last_step);
    print_owner(s, mid, off, "after graph 1");
    if (correct) tg_backend_tensor_get(mid, copy, 0, sizeof copy);   // copy out while it is valid

    tg_sched_reset(s);
    pin_all(s, g2, dev);
    if (tg_sched_alloc_graph(s, g2) != TG_OK || tg_backend_tensor_set(y, yv, 0, sizeof yv) != TG_OK
        || tg_sched_graph_compute(s, g2) != TG_OK) {
        fprintf(stderr, "graph-reuse: %s\n", tg_last_error());
        return 1;
    }
    printf("graph 2 computed (scheduler graph %llu)\n", (unsigned long long) tg_sched_graph_seq(s));
    print_owner(s, mid, off, "after graph 2");

    const float * val = copy;
    if (!correct) { tg_backend_tensor_get(mid, got, 0, sizeof got); val = got; }
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += fabsf(val[i] - expect[i]) > 1e-6f * (1.0f + expect[i]);
    printf("read of mid %s: %d of %d values wrong -> %s\n", correct ? "(copy taken after graph 1)" : "after graph 2",
           wrong, N, wrong ? "STALE (its bytes were reused)" : "valid");
    tg_sched_free(s);
    tg_context_free(c1);
    tg_context_free(c2);
    tg_backend_free(dev);
    tg_backend_free(cpu);
    return 0;
}
