// test_trace_poison.c - debug poison mode (TGDB_POISON=1 / tg_trace_set_poison):
// ranges the allocator frees during a graph, and every compute range when a
// new graph is allocated, read back as NaN; results of correct programs do
// not change; traced, the stale read still shows in `tgdb check`'s analysis.
#include "check.h"
#include "tg/backend.h"
#include "tg/sched.h"
#include "tg/trace-check.h"
#include "tg/trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N = 64 };

struct prog {
    struct tg_context * ctx;
    struct tg_tensor *  x, * a, * d;
    struct tg_graph *   g1, * g2;
};

// g1: a = 2x (two consumers: never taken over in place), b = a*x, c = b + a,
// d = c/1 (output). a's range is freed after c. g2: an unrelated graph.
static void build(struct prog * p) {
    struct tg_context_params cp = { 1 << 20, NULL, true };
    p->ctx = tg_context_new(cp);
    p->x = tg_set_name(tg_new_tensor_1d(p->ctx, TG_TYPE_F32, N), "x");
    tg_set_input(p->x);
    p->a = tg_set_name(tg_scale(p->ctx, p->x, 2.0f), "a");
    struct tg_tensor * b = tg_set_name(tg_mul(p->ctx, p->a, p->x), "b");
    struct tg_tensor * c = tg_set_name(tg_add(p->ctx, b, p->a), "c");
    p->d = tg_set_name(tg_scale(p->ctx, c, 1.0f), "d");
    tg_set_output(p->d);
    p->g1 = tg_graph_new(p->ctx, 16);
    tg_graph_build_forward(p->g1, p->d);
    struct tg_tensor * y = tg_set_name(tg_new_tensor_1d(p->ctx, TG_TYPE_F32, N), "y");   // fits: no new buffer
    tg_set_input(y);
    struct tg_tensor * z = tg_set_name(tg_sqr(p->ctx, tg_scale(p->ctx, y, 3.0f)), "z");
    tg_set_output(z);
    p->g2 = tg_graph_new(p->ctx, 16);
    tg_graph_build_forward(p->g2, z);
}

static int count_nan(const float * v, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) k += isnan(v[i]);
    return k;
}

// Runs g1 (then g2 when `second`), reading a and d; returns the number of NaN in a.
static int run(struct tg_sched * s, struct prog * p, bool second, float * a_out, float * d_out) {
    float xv[N];
    for (int i = 0; i < N; i++) xv[i] = (float) i * 0.25f - 3.0f;
    tg_sched_reset(s);
    tg_sched_alloc_graph(s, p->g1);
    tg_backend_tensor_set(p->x, xv, 0, sizeof(xv));
    tg_sched_graph_compute(s, p->g1);
    tg_backend_tensor_get(p->d, d_out, 0, N * sizeof(float));
    if (second) {
        tg_sched_reset(s);
        tg_sched_alloc_graph(s, p->g2);
        tg_sched_graph_compute(s, p->g2);
        tg_backend_tensor_get(p->d, d_out, 0, N * sizeof(float));   // stale: d belongs to graph 1
    }
    tg_backend_tensor_get(p->a, a_out, 0, N * sizeof(float));
    return count_nan(a_out, N);
}

int main(void) {
    unsetenv("TGDB_POISON");
    struct tg_backend * cpu = tg_backend_cpu_init();
    tg_backend_cpu_set_n_threads(cpu, 1);
    struct tg_sched * s1 = tg_sched_new(&cpu, 1, 32);
    CHECK(!tg_sched_get_poison(s1), "poison off by default");
    struct prog p1, p2;
    build(&p1);
    build(&p2);
    float a0[N], d0[N], a1[N], d1[N];
    int nan0 = run(s1, &p1, false, a0, d0);
    CHECK(nan0 == 0 && a0[1] == 2.0f * (0.25f - 3.0f), "without poison, the freed intermediate 'a' still reads plausible numbers");

    CHECK(tg_trace_set_poison(true) == TG_OK, "process-wide poison on");
    struct tg_sched * s = tg_sched_new(&cpu, 1, 32);
    CHECK(tg_sched_get_poison(s), "a new scheduler has poison on");
    int nan1 = run(s, &p2, false, a1, d1);
    CHECK(nan1 == N, "with poison, 'a' (freed after its last consumer) reads as NaN (%d/%d)", nan1, N);
    CHECK(memcmp(d0, d1, sizeof(d0)) == 0 && count_nan(d1, N) == 0, "with poison, the output is unchanged");
    run(s, &p2, true, a1, d1);
    CHECK(count_nan(d1, N) == N, "with poison, graph 1's output read after graph 2 was allocated is NaN");

    // the same program traced: `tgdb check` finds both stale reads
    char path[128];
    snprintf(path, sizeof(path), "test_trace_poison.%d.tgt", (int) getpid());
    struct tg_trace_recorder * rec = tg_trace_attach(s, path, NULL);
    run(s, &p2, true, a1, d1);
    CHECK(tg_trace_detach(rec) == TG_OK, "traced poisoned run");
    struct tg_trace * tr = tg_trace_open(path);
    struct tg_trace_report rep;
    CHECK(tr && tg_trace_check(tr, &rep) == TG_OK, "check ran");
    int stale = 0, superseded = 0;
    for (int i = 0; tr && i < rep.n_findings; i++) {
        stale += rep.findings[i].kind == TG_TRACE_FIND_STALE_READ;
        superseded += rep.findings[i].kind == TG_TRACE_FIND_STALE_READ && strstr(rep.findings[i].text, "was allocated on the same scheduler");
    }
    CHECK(stale == 2 && superseded >= 1, "both stale reads reported (%d), d's as read after graph 2's allocation (%d)",
          stale, superseded);
    if (tr) { tg_trace_report_free(&rep); tg_trace_close(tr); }
    unlink(path);

    CHECK(tg_trace_set_poison(false) == TG_OK, "process-wide poison off");
    tg_sched_set_poison(s, false);
    run(s, &p2, false, a1, d1);
    CHECK(count_nan(a1, N) == 0, "poison off again: no NaN");
    tg_sched_free(s);
    tg_sched_free(s1);
    tg_context_free(p1.ctx);
    tg_context_free(p2.ctx);
    tg_backend_free(cpu);
    return tg_check_finish("test_trace_poison");
}
